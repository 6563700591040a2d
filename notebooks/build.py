#!/usr/bin/env python3
"""Builds the shipped notebooks from their readable sources in notebooks/src/.

Each source is a Markdown file. Fenced ```rust blocks become Rust code cells; everything between
them becomes markdown cells (a line holding only `<!-- cell -->` splits markdown into two cells;
```python fences stay in the markdown, which is where the PyTorch original is quoted). A fence may
carry tags for the tests, e.g. ```rust tags=train,loss-plot  (cell metadata "tags").

    python notebooks/build.py                 # writes notebooks/NN-*.ipynb without outputs
    python notebooks/build.py --keep-outputs  # rebuilds after an edit of the prose, keeping the
                                              # committed outputs of every code cell whose source
                                              # is unchanged, and how they were made
    python notebooks/build.py --check D       # also writes D/NN_*.rs: each notebook's cells as
                                              # one Rust program on the prelude, to compile-check
                                              # them before the kernel exists

Building replaces a notebook's outputs; `scripts/run-notebooks --save` puts them back from a real
run through the kernel, and `scripts/gpu-check --apply` from the GPU machine's run of the exported
programs (`tchbook export --merge`, then `build.py --keep-outputs`). Each tool writes how the
outputs were made into the notebook's metadata (`metadata.tchbook.provenance`, from what the run
recorded); {{PROVENANCE}} in a source is replaced by notebooks/provenance.py's sentence about it
(and {{TIMES}}, where a notebook prints times, by which build printed them),
so the first cell says which program made the outputs, how it was built, on which machine and GPU,
when and from which commit. A notebook built without outputs says it has none.
"""
from __future__ import annotations

import argparse
import copy
import difflib
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import provenance
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent
SOURCES = HERE / "src"

KERNELSPEC = {"name": "tchbook", "display_name": "Rust (tchbook)", "language": "rust"}

# What a hosted GPU runtime (Colab and its look-alikes) reads to attach a GPU. Only the notebooks
# a hosted runtime is pointed at carry it: the tour, and 01, whose cells colab-setup.ipynb runs
# there through `%%rust`. The others run only on the tchbook kernel, which no hosted runtime has,
# so a GPU request in them would promise what opening them there cannot keep.
HOSTED_GPU_METADATA = {"accelerator": "GPU", "colab": {"gpuType": "T4", "provenance": [], "toc_visible": True}}
HOSTED = ("00-tour", "01-using-the-gpu")


def rustc_version() -> str:
    try:
        out = subprocess.run(["rustc", "--version"], capture_output=True, text=True, check=True)
        return out.stdout.split()[1]
    except (OSError, subprocess.CalledProcessError, IndexError):
        return ""


def language_info() -> dict:
    """The kernel's kernel_info reply's language_info (src/dispatch/kernel_info_request.rs), which a
    real run writes into the notebook."""
    info = {
        "name": "rust",
        "file_extension": ".rs",
        "mimetype": "text/rust",
        "nbconvert_exporter": "script",
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


def build(src: Path, made: dict | None = None) -> nbformat.NotebookNode:
    """The notebook of source `src`, without outputs; `made` is how the outputs it will hold were
    made (notebooks/provenance.py), for its first cell."""
    text = (src.read_text().replace("{{PROVENANCE}}", provenance.sentence(made))
            .replace("{{TIMES}}", provenance.times(made)))
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
    nb.metadata = {"kernelspec": dict(KERNELSPEC), "language_info": language_info()}
    if src.stem in HOSTED:
        nb.metadata.update(copy.deepcopy(HOSTED_GPU_METADATA))
    if made is not None:
        provenance.set_on(nb, copy.deepcopy(made))
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


def keep_outputs(nb: nbformat.NotebookNode, committed: nbformat.NotebookNode) -> int:
    """Moves the committed notebook's outputs into the rebuilt `nb`, for every code cell whose code is
    unchanged, matched in order as a diff matches lines (so a cell added or removed costs only its
    own outputs), the widget state saved with them, which their widget views are drawn from, and
    how they were made. Returns how many code cells are new or changed and so have no outputs."""
    if "widgets" in committed.metadata:
        nb.metadata["widgets"] = committed.metadata["widgets"]
    made = provenance.of(committed)
    if made is not None:
        provenance.set_on(nb, copy.deepcopy(made))
    old = [c for c in committed.cells if c.cell_type == "code"]
    new = [c for c in nb.cells if c.cell_type == "code"]
    matcher = difflib.SequenceMatcher(None, [c.source for c in old], [c.source for c in new], autojunk=False)
    kept = 0
    for block in matcher.get_matching_blocks():
        for i in range(block.size):
            before, cell = old[block.a + i], new[block.b + i]
            cell.outputs = before.outputs
            cell.execution_count = before.execution_count
            if "execution" in before.metadata:
                cell.metadata["execution"] = before.metadata["execution"]
            kept += 1
    return len(new) - kept


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", metavar="DIR", help="also write each notebook's code as DIR/NN_*.rs")
    ap.add_argument("--keep-outputs", action="store_true",
                    help="keep the committed outputs of unchanged code cells and how they were made")
    ap.add_argument("only", nargs="*", help="source stems to build (default: all)")
    args = ap.parse_args()
    sources = sorted(SOURCES.glob("*.md"))
    if args.only:
        sources = [s for s in sources if any(s.stem.startswith(o) for o in args.only)]
    for src in sources:
        out = HERE / f"{src.stem}.ipynb"
        if args.keep_outputs and out.exists():
            committed = nbformat.read(out, as_version=4)
            made = provenance.of(committed)
            if made is None:
                raise SystemExit(f"{out.name}: its metadata says nothing of how its outputs were made "
                                 "(metadata.tchbook.provenance): run scripts/run-notebooks --save, or "
                                 "build it without --keep-outputs")
            nb = build(src, made)
            lost = keep_outputs(nb, committed)
            if lost:
                print(f"{out.name}: {lost} code cell(s) are new or changed and have no outputs: "
                      "run scripts/run-notebooks --save", file=sys.stderr)
        else:
            nb = build(src)
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
