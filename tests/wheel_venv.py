"""The tchbook wheel in a fresh venv, as a user installs it: shared by tests/test_hosted.py (the
`%%rust` bridge) and tests/test_papermill.py (papermill's translator, found through the wheel's
entry point).

The wheel is the one scripts/test built with the README's command (its path in $TCHBOOK_WHEEL), or
else is built once per session the same way (the `wheel` fixture, tests/conftest.py). A venv from
`venv_with_wheel` holds only the wheel, what pip installs with it, and the requirements it is
given (pinned as in scripts/requirements.txt). torch comes from the tooling venv through a folder
holding just a link to its `torch/` package, so the 4.6 GB wheel is not copied again.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(cmd: list, **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    assert done.returncode == 0, f"{' '.join(map(str, cmd))} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done


def pinned(package: str) -> str:
    """scripts/requirements.txt's line for `package` (`package==version`)."""
    lines = (ROOT / "scripts" / "requirements.txt").read_text().splitlines()
    return next(line for line in lines if line.startswith(f"{package}=="))


def build_wheel(out: Path) -> Path:
    # Building relinks the kernel binary, stripped, in place of target/release/tchbook (cargo
    # rustc uplifts it): no kernel started from that path must be running meanwhile.
    run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "./python",
         "-w", str(out)], cwd=ROOT)
    wheels = list(out.glob("tchbook-*.whl"))
    assert len(wheels) == 1, f"expected one tchbook wheel in {out}, found {wheels}"
    return wheels[0]


def venv_with_wheel(base: Path, wheel: Path, *requirements: str) -> dict:
    """A fresh venv in `base`/venv with the wheel, `requirements` and torch: its `venv`, `python`,
    `torch` (the linked package) and an `env` that runs its programs first and finds nothing of
    this checkout (the wheel's binary must find libtorch by itself)."""
    venv = base / "venv"
    run([sys.executable, "-m", "venv", str(venv)])
    python = venv / "bin" / "python"
    run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(wheel), *requirements])
    # torch, and nothing else of the tooling venv: a folder with one link, on the venv's path.
    import torch as _unused  # noqa: F401  (the tooling venv has it: scripts/env.sh)
    torch_dir = Path(_unused.__file__).parent
    torch_only = base / "torch-only"
    torch_only.mkdir()
    (torch_only / "torch").symlink_to(torch_dir, target_is_directory=True)
    site = run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    (Path(site) / "torch-only.pth").write_text(f"{torch_only}\n")
    env = {k: v for k, v in os.environ.items() if k not in ("TCHBOOK_BIN", "PYTHONPATH", "LIBTORCH")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env['PATH']}"
    return {"venv": venv, "python": python, "env": env, "torch": torch_dir}
