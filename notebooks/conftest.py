"""pytest in notebooks/: `pytest --nbmake notebooks/` runs each shipped notebook, from this folder,
on the kernel its metadata names (README, "papermill and nbmake").

A notebook that sets up a hosted runtime (colab-setup.ipynb: its cells tagged `install` install
rustup, torch and the tchbook wheel into the Python it runs on) is not collected, as
notebooks/run.py leaves it out; its other cells are run by tests/test_hosted.py through the wheel.
Named on the command line it is collected all the same (pytest collects what it is given), and
then its installation cells, also tagged `skip-execution`, are skipped by nbclient, so no run here
installs anything.
"""
from __future__ import annotations

from pathlib import Path

import nbformat
from run import sets_up_a_hosted_runtime


def pytest_ignore_collect(collection_path: Path, config) -> bool | None:
    if collection_path.suffix == ".ipynb" and sets_up_a_hosted_runtime(nbformat.read(collection_path, as_version=4)):
        return True
    return None
