#!/usr/bin/env python3
"""Executes the shipped notebooks headless, each on the kernel its own metadata names
(`metadata.kernelspec.name`), and writes an HTML page beside each (nbconvert's lab template,
with each image's alt text: alt-text.html.j2). `scripts/run-notebooks` (the
README's main command) runs this after building and installing the kernel; scripts/test runs that
script with --out, and tests/shipped_notebooks/ checks the notebooks it wrote there, so CI runs the
very code a new user runs and the notebooks execute once.

    python notebooks/run.py                  # every notebook; HTML beside each
    python notebooks/run.py --save           # also writes the outputs into the .ipynb files
                                             # (how the committed outputs are made), with how
                                             # they were made (notebooks/provenance.py) in the
                                             # metadata and the first cell
    python notebooks/run.py --out DIR        # also writes each executed notebook into DIR
    python notebooks/run.py 01-using-the-gpu.ipynb   # only these

A notebook whose cells are tagged `install` sets up a hosted runtime (`colab-setup.ipynb` installs
rustup, torch and the tchbook wheel into the Python kernel of Colab or the like): running it here
would install software into this machine, so it is left out with a line saying where it is
checked instead (tests/test_hosted.py runs its other cells through the wheel).

Consecutive stream outputs of one name in a cell are joined into one, as JupyterLab joins them
when it shows and saves a notebook: lines printed seconds apart (a loss every 2000 batches) reach
the kernel's front end as separate messages, and a saved notebook should not hold them as separate
fragments. With --save, a notebook whose outputs hold stderr is not written: the committed outputs
are what a newcomer reads, and stderr there is either the kernel's report about the machine that
ran them (say, a build cache it had to repair at start) or a warning to fix; run it again.

Stand-in data sets left in notebooks/data by an older prelude are removed first (real data, which
has no STANDIN.txt marker, is kept), so the outputs are those of today's prelude. Each notebook
runs from notebooks/, where its data/ is; a cell error stops its notebook (except in cells tagged
`raises-exception`, as in Jupyter), the other notebooks still run, and the exit status is 1 if any
notebook failed.
"""
from __future__ import annotations

import argparse
import datetime
import shutil
import sys
import time
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent
# A cell may compile for a while on a cold build cache (the first cell builds the prelude's
# dependents), and CIFAR-10 on real data trains for minutes on a small CPU; a cell that runs for
# half an hour has hung.
CELL_TIMEOUT_S = 1800
HOSTED_SETUP_TAG = "install"
HTML_TEMPLATE = HERE / "alt-text.html.j2"
HOSTED_CHECK = "tests/test_hosted.py (part of ./scripts/test) runs its cells after the installation through the wheel"


def notebooks() -> list[Path]:
    return sorted(HERE.glob("*.ipynb"))


def kernel_name(nb: nbformat.NotebookNode) -> str:
    name = nb.metadata.get("kernelspec", {}).get("name")
    if not name:
        raise SystemExit("a notebook without metadata.kernelspec.name names no kernel to run it on")
    return name


def sets_up_a_hosted_runtime(nb: nbformat.NotebookNode) -> bool:
    return any(HOSTED_SETUP_TAG in c.get("metadata", {}).get("tags", []) for c in nb.cells)


def remove_stale_stand_ins() -> None:
    """Stand-in data sets left by an earlier run may come from an older generator: the notebooks
    must run against what the prelude writes today. Real data (no marker) is kept."""
    for folder in sorted({marker.parent for marker in (HERE / "data").glob("**/STANDIN.txt")}):
        shutil.rmtree(folder, ignore_errors=True)


def execute(path: Path) -> nbformat.NotebookNode:
    """Runs the notebook at `path` from scratch on the kernel its metadata names; returns it with
    this run's outputs. Raises nbclient's CellExecutionError at the first unexpected cell error."""
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    for c in nb.cells:
        if c.cell_type == "code":
            c.outputs = []
            c.execution_count = None
    NotebookClient(nb, kernel_name=kernel_name(nb), timeout=CELL_TIMEOUT_S, allow_errors=False,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    for c in nb.cells:
        if c.cell_type == "code":
            c.outputs = coalesce_streams(c.outputs)
    return nb


def coalesce_streams(outputs: list) -> list:
    """Joins each run of consecutive stream outputs of one name into one output, as JupyterLab does;
    a stream after a display or the other stream's text starts a new one, so the order a reader sees
    is the order of printing. (nbclient's own coalesce_streams joins a name's text across the whole
    cell, moving text printed after a plot to before it.)"""
    joined: list = []
    for o in outputs:
        last = joined[-1] if joined else None
        if (o.get("output_type") == "stream" and last is not None and last.get("output_type") == "stream"
                and last.get("name") == o.get("name")):
            last["text"] = "".join(last["text"]) + "".join(o["text"])
        else:
            joined.append(o)
    return joined


def stderr_cells(nb: nbformat.NotebookNode) -> list[str]:
    """Each code cell (by its tags, or its number) whose outputs hold stderr, with the text's start."""
    found = []
    for n, c in enumerate(nb.cells):
        for o in c.get("outputs", []):
            if o.get("output_type") == "stream" and o.get("name") == "stderr":
                where = ",".join(c.metadata.get("tags", [])) or f"cell {n}"
                found.append(f"{where}: {''.join(o['text']).strip()[:200]}")
    return found


def with_provenance(path: Path, nb: nbformat.NotebookNode, started: datetime.datetime) -> nbformat.NotebookNode:
    """`nb`, just run through the kernel, with how its outputs were made in its metadata and, where
    it has a source in src/, rebuilt from it by notebooks/build.py so its first cell says so."""
    sys.path.insert(0, str(HERE))
    import build
    import provenance

    provenance.set_on(nb, provenance.for_kernel_run(nb, started))
    src = HERE / "src" / f"{path.stem}.md"
    if not src.exists():
        return nb
    rebuilt = build.build(src, provenance.of(nb))
    lost = build.keep_outputs(rebuilt, nb)
    if lost:
        raise SystemExit(f"{path.name}: {lost} code cell(s) differ from notebooks/src/{src.name}: "
                         "run python notebooks/build.py first")
    return rebuilt


def html(nb: nbformat.NotebookNode) -> str:
    """The notebook as nbconvert's lab HTML, each image with its alt text (alt-text.html.j2)."""
    from nbconvert import HTMLExporter

    page, _ = HTMLExporter(template_file=str(HTML_TEMPLATE)).from_notebook_node(nb)
    return page


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--save", action="store_true", help="write the outputs into the .ipynb files")
    ap.add_argument("--out", metavar="DIR", type=Path, help="also write each executed notebook into DIR")
    ap.add_argument("only", nargs="*", help="notebook file names (default: every notebooks/*.ipynb)")
    args = ap.parse_args(argv)
    paths = [HERE / Path(name).name for name in args.only] if args.only else notebooks()
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
    remove_stale_stand_ins()
    failed = []
    for path in paths:
        shown = path.relative_to(HERE.parent)
        nb = nbformat.read(path, as_version=4)
        if sets_up_a_hosted_runtime(nb):
            print(f"==> {shown}: left out (it installs Rust, torch and the tchbook wheel into a hosted "
                  f"runtime's {kernel_name(nb)} kernel); {HOSTED_CHECK}", flush=True)
            continue
        print(f"==> {shown} on the {kernel_name(nb)} kernel", flush=True)
        if args.out:
            (args.out / path.name).unlink(missing_ok=True)
        started = time.monotonic()
        started_at = datetime.datetime.now(datetime.timezone.utc)
        try:
            nb = execute(path)
        except Exception as error:  # nbclient's CellExecutionError, a dead kernel, a timeout
            print(f"FAILED: {shown}\n{error}", file=sys.stderr, flush=True)
            failed.append(shown)
            continue
        if args.save:
            stderr = stderr_cells(nb)
            if stderr:
                print(f"NOT SAVED: {shown}: stderr in its outputs, which a reader would take for the "
                      "notebook's own; run it again (a kernel's start-up report comes once):\n  "
                      + "\n  ".join(stderr), file=sys.stderr, flush=True)
                failed.append(shown)
                continue
            nb = with_provenance(path, nb, started_at)
            nbformat.write(nb, path)
        if args.out:
            nbformat.write(nb, args.out / path.name)
        path.with_suffix(".html").write_text(html(nb), encoding="utf-8")
        print(f"    ran in {time.monotonic() - started:.0f} s; wrote {shown.with_suffix('.html')}", flush=True)
    if failed:
        print(f"{len(failed)} notebook(s) failed: {', '.join(map(str, failed))}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
