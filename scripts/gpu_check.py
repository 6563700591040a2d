"""The parts of scripts/gpu-check that read and write files, which the bash script calls:

    python scripts/gpu_check.py prelude-tests < MESSAGES       the prelude's test binary
    python scripts/gpu_check.py program MESSAGES               an exported notebook's program
    python scripts/gpu_check.py cuda-table TRAIN MACHINE OUT   the GPU run's benchmark, with its note
    python scripts/gpu_check.py check-notebooks FOLDER NAME... the notebooks --apply wrote

MESSAGES is what cargo writes with `--message-format=json` (or `json-render-diagnostics`): one JSON
object a line. The two programs are found in the `compiler-artifact` messages, which name each
executable cargo built (a test binary's name carries a hash, so nothing else says where it is).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Iterable, Iterator

import nbformat


def executables(messages: Iterable[str]) -> Iterator[dict]:
    """The `compiler-artifact` messages among cargo's JSON lines that name an executable."""
    for line in messages:
        message = json.loads(line)
        if message.get("reason") == "compiler-artifact" and message.get("executable"):
            yield message


def prelude_tests(messages: Iterable[str]) -> list[str]:
    """The prelude's integration test binary (`prelude/tests/tests.rs`, target `tests`), from the
    messages of a `cargo test --no-run` of the workspace."""
    return [m["executable"] for m in executables(messages)
            if m["profile"]["test"] and "tchbook-prelude" in m["package_id"] and m["target"]["name"] == "tests"]


def program(messages: Iterable[str]) -> list[str]:
    """The binary of an exported notebook's project, from the messages of its `cargo build`."""
    return [m["executable"] for m in executables(messages) if "bin" in m["target"]["kind"]]


class Unfinished(Exception):
    """A benchmark that was cut short: bench/train.py writes its results after every row and
    marks the end only when all of them ran."""


def cuda_table(train: Path, machine: Path, out: Path) -> None:
    """bench/train.py's CUDA results, with a note naming the GPU machine (its machine.txt, from
    run.sh) where bench/report.py's header describes the machine that writes the report. Raises
    Unfinished, and writes nothing, for a run that did not reach its end: its table would lack
    rows and replace a whole one."""
    table = json.loads(train.read_text())
    if "ended" not in table:
        rows = len(table.get("rows", []))
        raise Unfinished(f"the GPU run's benchmark stopped before its end ({rows} row(s) written, "
                         "see its bench-cuda.log): bench/RESULTS.md keeps its CUDA table; "
                         "run the benchmark again")
    named = machine.read_text().strip() if machine.exists() else "unknown"
    table["note"] = f"Measured on the GPU machine by `scripts/gpu-check` ({named})."
    out.write_text(json.dumps(table, indent=1))


class NoOutputs(Exception):
    """A notebook that --apply left without outputs, without how they were made, or without the
    CPU run's text under a cell tagged `beside`."""


def beside_outputs(cell) -> list:
    """The other run's text that `tchbook export --merge --beside` put under a cell."""
    return [o for o in cell.get("outputs", []) if "beside" in o.get("metadata", {}).get("tchbook", {})]


def check_notebooks(folder: Path, names: Iterable[str]) -> Iterator[str]:
    """Checks that each notebook `folder/NAME.ipynb` is valid (nbformat's schema), has outputs, says
    how they were made (an exported program's record, metadata.tchbook.provenance), and shows the
    CPU run's text under each cell tagged `beside`, with a line for each as it passes; raises
    NoOutputs (or nbformat's ValidationError) at the first that does not."""
    for name in names:
        nb = nbformat.read(folder / f"{name}.ipynb", as_version=4)
        nbformat.validate(nb)
        outputs = sum(len(c.get("outputs", [])) for c in nb.cells if c.cell_type == "code")
        if outputs == 0:
            raise NoOutputs(f"{name}: --apply left no outputs")
        made = nb.metadata.get("tchbook", {}).get("provenance", {})
        if made.get("program") != "exported" or not made.get("at"):
            raise NoOutputs(f"{name}: --apply left no record of how the outputs were made: {made}")
        tagged = [c for c in nb.cells if "beside" in c.get("metadata", {}).get("tags", [])]
        missing = [c.id for c in tagged if len(beside_outputs(c)) != 1]
        if missing:
            raise NoOutputs(f"{name}: no CPU run's text under the cells tagged beside: {missing}")
        yield f"    {name}.ipynb: valid, {outputs} outputs, {len(tagged)} cell(s) with the CPU's run beside"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="scripts/gpu_check.py", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("prelude-tests", help="print the prelude's test binary; cargo's messages on stdin")
    found = commands.add_parser("program", help="print an exported project's binary")
    found.add_argument("messages", type=Path)
    table = commands.add_parser("cuda-table", help="write the GPU run's benchmark with its note")
    table.add_argument("train", type=Path)
    table.add_argument("machine", type=Path)
    table.add_argument("out", type=Path)
    check = commands.add_parser("check-notebooks", help="check the notebooks --apply wrote")
    check.add_argument("folder", type=Path)
    check.add_argument("names", nargs="+")
    args = parser.parse_args(argv)

    if args.command == "prelude-tests":
        for path in prelude_tests(sys.stdin):
            print(path)
    elif args.command == "program":
        with args.messages.open() as messages:
            for path in program(messages):
                print(path)
    elif args.command == "cuda-table":
        try:
            cuda_table(args.train, args.machine, args.out)
        except Unfinished as why:
            print(f"scripts/gpu-check: {why}", file=sys.stderr)
            return 3
    else:
        try:
            for line in check_notebooks(args.folder, args.names):
                print(line, flush=True)
        except NoOutputs as why:
            print(f"scripts/gpu-check: {why}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
