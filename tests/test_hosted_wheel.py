"""The wheel of the hosted-notebook path (python/, README "Hosted notebooks"): what it carries, and
what `pip install` of it into a fresh venv gives a Colab or JupyterHub user (the `hosted` fixture:
conftest.py, tests/wheel_venv.py)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from wheel_venv import run

ROOT = Path(__file__).resolve().parent.parent


def test_maturin_is_pinned_once_for_both_builds():
    """The README's isolated build and scripts/test's build use the same maturin."""
    import tomllib

    pyproject = tomllib.loads((ROOT / "python" / "pyproject.toml").read_text())
    requirements = (ROOT / "scripts" / "requirements.txt").read_text().splitlines()
    assert [r for r in requirements if r.startswith("maturin")] == pyproject["build-system"]["requires"]


def test_wheel_carries_the_stripped_kernel_binary_and_the_package(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        binary = [n for n in names if n.endswith(".data/scripts/tchbook")]
        assert binary, f"no tchbook binary among the wheel's scripts: {names}"
        size = z.getinfo(binary[0]).file_size
        # Every module of python/tchbook, the bridge's package included.
        package = ROOT / "python"
        for module in sorted(p.relative_to(package).as_posix() for p in (package / "tchbook").rglob("*.py")):
            assert module in names, f"{module} missing from the wheel: {names}"
    # The release binary with its line tables is ~230 MB; stripped it is ~30 MB.
    assert size < 80 * 2**20, f"the wheel's tchbook binary is {size / 2**20:.0f} MiB: not stripped?"


def test_pip_install_puts_the_gpu_panel_where_jupyterlab_finds_it(hosted):
    """The JupyterLab extension (labextension/) lands in the venv's share/jupyter/labextensions,
    built: its package.json names the bundle JupyterLab loads, and the bundle is there."""
    extension = hosted["venv"] / "share" / "jupyter" / "labextensions" / "tchbook-gpu-panel"
    package = json.loads((extension / "package.json").read_text())
    assert package["name"] == "tchbook-gpu-panel", package
    bundle = extension / package["jupyterlab"]["_build"]["load"]
    assert bundle.is_file() and bundle.stat().st_size > 1000, bundle


def test_pip_install_puts_tchbook_on_path(hosted):
    where = run(["which", "tchbook"], env=hosted["env"]).stdout.strip()
    assert where == str(hosted["venv"] / "bin" / "tchbook")
    version = run(["tchbook", "--version"], env=hosted["env"]).stdout
    assert version.startswith("tchbook "), version


def test_python_m_tchbook_install_user_does_what_tchbook_install_does(hosted, tmp_path):
    env = dict(hosted["env"], JUPYTER_DATA_DIR=str(tmp_path / "data"))
    done = run([str(hosted["python"]), "-m", "tchbook", "install", "--user"], env=env)
    spec = json.loads((tmp_path / "data" / "kernels" / "tchbook" / "kernel.json").read_text())
    assert spec["argv"][0] == str(hosted["venv"] / "bin" / "tchbook"), spec
    # libtorch is this Python's torch (resolved: the same package however it is reached).
    assert Path(spec["env"]["LIBTORCH"]) == hosted["torch"].resolve(), spec
    assert "Installed the tchbook kernelspec" in done.stdout
    # ... and it pre-built the prelude (here the template is already built: it checks it).
    assert (tmp_path / "data" / "kernels" / "tchbook" / "logo-64x64.png").is_file()


def test_python_m_tchbook_without_the_binary_says_what_to_do(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TCHBOOK_BIN"}
    env.update(PATH="/usr/bin:/bin", PYTHONPATH=str(ROOT / "python"), PYTHONUSERBASE=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", "import sys, tchbook.__main__ as m; sys.exit(m.main(['--version']))"],
                          capture_output=True, text=True, env=env)
    if done.returncode == 0:
        pytest.skip("a tchbook binary is installed in this Python's scripts folder")
    assert "tchbook binary was not found" in done.stderr and "pip install" in done.stderr, done.stderr
