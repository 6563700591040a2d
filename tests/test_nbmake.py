"""`pytest --nbmake` on the shipped notebooks (README, "papermill and nbmake"), with the nbmake
pinned in scripts/requirements.txt.

scripts/run-notebooks already executes every shipped notebook with nbclient, on the kernel its
metadata names, from notebooks/, honouring `raises-exception` (tests/shipped_notebooks/ checks
what it wrote); nbmake drives the same nbclient the same way. So rather than a second run of all
of them (a minute and a half and more), this checks what nbmake adds: that it collects the
shipped notebooks and leaves out the one that installs software (notebooks/conftest.py), and that
it passes the tour, which has a cell tagged `raises-exception` (an interrupted training loop),
on the tchbook kernel.

Needs the `tchbook` kernelspec where Jupyter finds it, as tests/shipped_notebooks/ does.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"


def nbmake(*args: str, timeout: int = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "--nbmake", "-p", "no:cacheprovider", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def test_nbmake_collects_the_shipped_notebooks_and_not_the_hosted_setup():
    done = nbmake("--collect-only", "-q", "notebooks/")
    assert done.returncode == 0, done.stdout + done.stderr
    collected = {line.split("::")[0] for line in done.stdout.splitlines() if line.endswith(".ipynb")}
    shipped = {f"notebooks/{p.name}" for p in NOTEBOOKS.glob("[0-9]*.ipynb")}
    assert collected == shipped, done.stdout


def test_hosted_setup_installs_nothing_when_named_to_nbmake():
    setup = nbformat.read(NOTEBOOKS / "colab-setup.ipynb", as_version=4)
    installs = [c for c in setup.cells if "install" in c.metadata.get("tags", [])]
    assert installs and all("skip-execution" in c.metadata["tags"] for c in installs)


def test_nbmake_passes_the_tour_with_its_expected_error():
    tour = nbformat.read(NOTEBOOKS / "00-tour.ipynb", as_version=4)
    assert any("raises-exception" in c.metadata.get("tags", []) for c in tour.cells)
    done = nbmake("--nbmake-timeout=900", "notebooks/00-tour.ipynb", timeout=1800)
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout + done.stderr
