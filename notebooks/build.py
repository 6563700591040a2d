#!/usr/bin/env python3
"""Builds the shipped notebooks from their readable sources in notebooks/src/.

Each source is a Markdown file. Fenced ```rust blocks become Rust code cells; everything between
them becomes markdown cells (a line holding only `<!-- cell -->` splits markdown into two cells;
```python fences stay in the markdown, which is where the PyTorch original is quoted). A fence may
carry tags for the tests, e.g. ```rust tags=train,loss-plot  (cell metadata "tags").

    python notebooks/build.py            # writes notebooks/NN-*.ipynb without outputs
    python notebooks/build.py --check D  # also writes D/NN_*.rs: each notebook's cells as one
                                         # Rust program on the prelude, to compile-check them
                                         # before the kernel exists

Building replaces a notebook's outputs; `scripts/run-notebooks --save` puts them back from a real
run. The first markdown cell of each notebook names the machine and device the committed outputs
come from; {{MACHINE}} in a source is replaced by a description of the machine the build runs on,
so build and run on the same machine.
"""
from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent
SOURCES = HERE / "src"

KERNELSPEC = {"name": "tchbook", "display_name": "Rust (tchbook)", "language": "rust"}


def rustc_version() -> str:
    try:
        out = subprocess.run(["rustc", "--version"], capture_output=True, text=True, check=True)
        return out.stdout.split()[1]
    except (OSError, subprocess.CalledProcessError, IndexError):
        return ""


def machine_description() -> str:
    """What the committed outputs ran on, in words: CPU model, cores, RAM, GPU if any."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram = ""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                ram = f", {int(line.split()[1]) / 2**20:.0f} GiB RAM"
                break
    except OSError:
        pass
    gpu = os.environ.get("TCHBOOK_GPU_NAME", "")
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10)
        if out.returncode == 0 and out.stdout.strip():
            gpu = out.stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError):
        pass
    cores = os.cpu_count() or 0
    where = f"a {cores}-core {platform.system()} {platform.machine()} machine ({cpu}{ram})"
    torch = torch_version()
    lib = f" (libtorch {torch})" if torch else ""
    if gpu:
        return f"{where} with an {gpu}; device `cuda:0`{lib}"
    return f"{where} with no GPU; device `cpu`{lib}"


def torch_version() -> str:
    """The libtorch the kernel runs with: the torch wheel's version file under $LIBTORCH."""
    libtorch = os.environ.get("LIBTORCH")
    if not libtorch:
        return ""
    try:
        text = (Path(libtorch) / "version.py").read_text()
    except OSError:
        return ""
    m = re.search(r"__version__\s*=\s*['\"]([^'\"]+)", text)
    return m.group(1) if m else ""


def language_info() -> dict:
    info = {
        "name": "rust",
        "file_extension": ".rs",
        "mimetype": "text/rust",
        "pygments_lexer": "rust",
        "codemirror_mode": "rust",
    }
    version = rustc_version()
    if version:
        info["version"] = version
    return info


FENCE = re.compile(r"^```rust(?:\s+tags=(?P<tags>[\w,-]+))?\s*$")
SPLIT = "<!-- cell -->"


def parse(text: str) -> list[tuple[str, str, list[str]]]:
    """Source text → [(kind, source, tags)], kind "markdown" or "code"."""
    cells: list[tuple[str, str, list[str]]] = []
    md: list[str] = []

    def flush_md() -> None:
        body = "\n".join(md).strip("\n")
        if body.strip():
            cells.append(("markdown", body, []))
        md.clear()

    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        m = FENCE.match(line)
        if m:
            flush_md()
            tags = [t for t in (m.group("tags") or "").split(",") if t]
            code: list[str] = []
            i += 1
            while i < len(lines) and lines[i].rstrip() != "```":
                code.append(lines[i])
                i += 1
            if i == len(lines):
                raise SystemExit(f"unterminated ```rust fence: {code[:1]}")
            cells.append(("code", "\n".join(code).strip("\n"), tags))
        elif line.strip() == SPLIT:
            flush_md()
        else:
            md.append(line)
        i += 1
    flush_md()
    return cells


def build(src: Path, machine: str) -> nbformat.NotebookNode:
    text = src.read_text().replace("{{MACHINE}}", machine)
    nb = new_notebook()
    for kind, body, tags in parse(text):
        if kind == "markdown":
            cell = new_markdown_cell(body)
        else:
            cell = new_code_cell(body)
            if tags:
                cell.metadata["tags"] = tags
        nb.cells.append(cell)
    # Stable ids keep diffs of re-built notebooks small.
    stem = src.stem.split("-")[0]
    for n, cell in enumerate(nb.cells):
        cell["id"] = f"nb{stem}-{n:03d}"
    nb.metadata = {
        "kernelspec": dict(KERNELSPEC),
        "language_info": language_info(),
        # What a hosted GPU runtime (Colab and its look-alikes) reads to attach a GPU.
        "accelerator": "GPU",
        "colab": {"gpuType": "T4", "provenance": [], "toc_visible": True},
    }
    nbformat.validate(nb)
    return nb


# --- the compile check -----------------------------------------------------------------------

def rust_program(cells: list[tuple[str, str, list[str]]]) -> str:
    """One Rust program holding a notebook's code cells in order, as evcxr would run them.

    Rust allows items (struct, impl, fn, use) inside a function body, so each cell goes into
    `main` as it is. A cell's final expression (the value evcxr displays, by reference) becomes
    `let _ = &(expr);` so it still type-checks without being moved. `:` commands are evcxr's, not Rust, and are left out.
    """
    body: list[str] = []
    for kind, code, _ in cells:
        if kind != "code":
            continue
        stmts = "\n".join(ln for ln in code.splitlines() if not ln.startswith(":")).rstrip()
        if not stmts:
            continue
        lines = stmts.splitlines()
        last = last_code_line(stmts)
        if last is not None and not last.endswith((";", "}")):
            # evcxr displays the final expression by reference; a bare `x;` would move it.
            i = max(n for n, ln in enumerate(lines) if ln.split("//", 1)[0].strip())
            lines[i] = f"let _ = &({lines[i].split('//', 1)[0].strip()});"
        body.append("\n".join(lines))
    return (
        "#![allow(unused, clippy::all)]\n"
        "use tchbook_prelude::prelude::*;\n\n"
        "fn main() -> anyhow::Result<()> {\n"
        + "\n\n".join(body)
        + "\n    Ok(())\n}\n"
    )


def last_code_line(stmts: str) -> str | None:
    for line in reversed(stmts.splitlines()):
        s = line.split("//", 1)[0].strip()
        if s:
            return s
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", metavar="DIR", help="also write each notebook's code as DIR/NN_*.rs")
    ap.add_argument("--machine", help="override the machine description in the first cell")
    ap.add_argument("only", nargs="*", help="source stems to build (default: all)")
    args = ap.parse_args()
    machine = args.machine or machine_description()
    sources = sorted(SOURCES.glob("*.md"))
    if args.only:
        sources = [s for s in sources if any(s.stem.startswith(o) for o in args.only)]
    for src in sources:
        nb = build(src, machine)
        out = HERE / f"{src.stem}.ipynb"
        nbformat.write(nb, out)
        print(f"wrote {out.relative_to(HERE.parent)} ({len(nb.cells)} cells)")
        if args.check:
            d = Path(args.check)
            d.mkdir(parents=True, exist_ok=True)
            rs = d / (src.stem.replace("-", "_") + ".rs")
            rs.write_text(rust_program(parse(src.read_text())))
            print(f"wrote {rs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
