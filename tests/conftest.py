"""Fixtures the Python tests share (tests/browser has its own conftest.py beside this one)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from debugger_client import Debugger, gdb_dir
from hosted_notebook import KERNEL
from wheel_venv import build_wheel, pinned, venv_with_wheel


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    """The tchbook wheel: $TCHBOOK_WHEEL (scripts/test builds it), else built here once."""
    built = os.environ.get("TCHBOOK_WHEEL")
    if built:
        assert Path(built).is_file(), f"TCHBOOK_WHEEL names {built}, which is not a file"
        return Path(built)
    return build_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="session")
def hosted(tmp_path_factory, wheel) -> dict:
    """A fresh venv with the wheel and ipykernel, its kernelspec, and where they are."""
    base = tmp_path_factory.mktemp("hosted")
    hosted = venv_with_wheel(base, wheel, pinned("ipykernel"))
    specs = base / "jupyter-path"
    spec_dir = specs / "kernels" / KERNEL
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [str(hosted["python"]), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (tchbook wheel)", "language": "python"}))
    env = hosted["env"]
    env["JUPYTER_PATH"] = os.pathsep.join(p for p in [str(specs), env.get("JUPYTER_PATH", "")] if p)
    return dict(hosted, jupyter_path=specs)


@pytest.fixture
def debugger():
    d = Debugger(env={"PATH": gdb_dir() + os.pathsep + os.environ["PATH"]})
    try:
        reply = d.run("1")
        assert reply["status"] == "ok", reply
        yield d
    finally:
        d.close()
