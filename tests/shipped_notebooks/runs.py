"""The shipped notebooks' names, and one notebook's run: read from where scripts/run-notebooks
wrote it, or executed here (the package's docstring says when)."""
from __future__ import annotations

import functools
import importlib.util
import json
import os
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
KERNEL = "tchbook"
# Where scripts/run-notebooks --out wrote the notebooks it executed (scripts/test sets it).
EXECUTED = os.environ.get("TCHBOOK_EXECUTED_NOTEBOOKS")


def load_runner():
    """notebooks/run.py, the runner scripts/run-notebooks uses."""
    spec = importlib.util.spec_from_file_location("run_notebooks", NOTEBOOKS / "run.py")
    runner = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runner)
    return runner


runner = load_runner()

TOUR = "00-tour.ipynb"
USING_GPU = "01-using-the-gpu.ipynb"
CPU_CUDA_MPS = "02-cpu-cuda-mps.ipynb"
CIFAR = "03-cifar10-on-the-gpu.ipynb"
DEEPLIZARD = "04-deeplizard-pytorch-on-the-gpu.ipynb"
BOOTCAMP = "05-bootcamp-using-gpu.ipynb"
ALL = [TOUR, USING_GPU, CPU_CUDA_MPS, CIFAR, DEEPLIZARD, BOOTCAMP]
# The fixture that holds each notebook's run (conftest.py), for the checks parametrized by name.
FIXTURES = {TOUR: "tour", USING_GPU: "using_gpu", CPU_CUDA_MPS: "cpu_cuda_mps", CIFAR: "cifar",
            DEEPLIZARD: "deeplizard", BOOTCAMP: "bootcamp"}


class Run:
    """One executed notebook, with its outputs looked up by cell tag."""

    def __init__(self, name: str, nb: nbformat.NotebookNode):
        self.name = name
        self.nb = nb

    def cell(self, tag: str) -> nbformat.NotebookNode:
        found = [c for c in self.nb.cells if tag in c.get("metadata", {}).get("tags", [])]
        assert len(found) == 1, f"{self.name}: expected one cell tagged {tag!r}, found {len(found)}"
        return found[0]

    def outputs(self, tag: str) -> list:
        return self.cell(tag).get("outputs", [])

    def text(self, tag: str) -> str:
        return output_text(self.outputs(tag))

    def bundles(self, tag: str, mime: str) -> list:
        """Every value of MIME type `mime` the cell displayed (after live updates were applied)."""
        return [o["data"][mime] for o in self.outputs(tag)
                if o.get("output_type") in ("display_data", "execute_result") and mime in o.get("data", {})]

    def json(self, tag: str) -> list:
        """The machine-readable parts (`application/vnd.tchbook.<kind>+json`) the cell displayed."""
        return [v if isinstance(v, (dict, list)) else json.loads(v)
                for o in self.outputs(tag)
                if o.get("output_type") in ("display_data", "execute_result")
                for mime, v in o.get("data", {}).items() if is_data_mime(mime)]

    def errors(self) -> list:
        return [(c.get("metadata", {}).get("tags", []), o) for c in self.nb.cells if c.cell_type == "code"
                for o in c.get("outputs", []) if o.get("output_type") == "error"]


def is_data_mime(mime: str) -> bool:
    """The prelude's vendor type for the numbers behind a rendering (never `application/json`,
    which JupyterLab would show as a JSON tree instead of the HTML or image)."""
    return mime.startswith("application/vnd.tchbook.") and mime.endswith("+json")


def output_text(outputs: list) -> str:
    """What a reader sees as text: streams as printed, then each rich value's text/plain on its own lines."""
    text = ""
    for o in outputs:
        kind = o.get("output_type")
        if kind == "stream":
            text += o["text"]
            continue
        if kind in ("display_data", "execute_result"):
            part = o.get("data", {}).get("text/plain", "")
        elif kind == "error":
            part = f"{o.get('ename')}: {o.get('evalue')}\n" + "\n".join(o.get("traceback", []))
        else:
            continue
        if text and not text.endswith("\n"):
            text += "\n"
        text += part + "\n"
    return text


@pytest.fixture(scope="session")
def fresh_stand_ins():
    _remove_stale_stand_ins_once()


# Once per session even though tests/test_export.py imports the fixture (pytest then holds two
# session fixtures of that name): a second removal would delete the stand-ins the cached
# notebook runs wrote, and the data checks would read the folders differently from the run.
# Notebooks executed by scripts/run-notebooks ran on stand-ins it made fresh, which stay.
@functools.lru_cache(maxsize=None)
def _remove_stale_stand_ins_once() -> None:
    if not EXECUTED:
        runner.remove_stale_stand_ins()


# Once per session: tests/test_export.py compares its exported programs with these same runs.
@functools.lru_cache(maxsize=None)
def execute(name: str) -> Run:
    if EXECUTED:
        path = Path(EXECUTED) / name
        if not path.is_file():
            pytest.fail(f"scripts/run-notebooks wrote no executed {name} into {EXECUTED}: it failed there "
                        "(its output says why)")
        return Run(name, nbformat.read(path, as_version=4))
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        KernelSpecManager().get_kernel_spec(KERNEL)
    except NoSuchKernel:
        pytest.fail(f"the {KERNEL!r} kernelspec is not installed: run `cargo build --release -p tchbook "
                    f"&& target/release/tchbook install --sys-prefix` (scripts/test does this)")
    # The checks must see this run's outputs, never the committed ones: the runner clears them.
    return Run(name, runner.execute(NOTEBOOKS / name))
