"""README's `jupyter kernelspec install` line, as a new user runs it: from an empty Jupyter data
directory, the repository's `kernelspec/` folder installed with exactly that command, then a shipped
notebook executed by `jupyter nbconvert --execute` on the kernel its metadata names (`tchbook`).

The folder's spec names no libtorch (unlike `tchbook install`'s), so the kernel must find it by
itself: the test leaves LIBTORCH unset and puts only the Python that has torch first on PATH, as
README's "How libtorch is found" says. Needs the kernel built (TCHBOOK_BIN) and the venv's tools.
"""

import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(os.environ.get("TCHBOOK_BIN") or ROOT / "target" / "release" / "tchbook")
NOTEBOOK = ROOT / "notebooks" / "02-cpu-cuda-mps.ipynb"


def readme_command() -> str:
    """The `jupyter kernelspec install ...` command README gives, as written there."""
    found = re.findall(r"`(jupyter kernelspec install [^`]*)`", (ROOT / "README.md").read_text())
    assert len(found) == 1, f"README gives {len(found)} kernelspec install commands: {found}"
    return found[0]


def test_the_readmes_kernelspec_command_installs_the_kernel_the_notebooks_name(tmp_path):
    env = {key: value for key, value in os.environ.items()
           if key not in ("LIBTORCH", "JUPYTER_PATH", "JUPYTER_CONFIG_DIR")}
    # The user's data directory first: inside a virtual environment jupyter_core looks in the
    # environment's first, where the test command's own `tchbook install --sys-prefix` put a spec.
    env.update(JUPYTER_DATA_DIR=str(tmp_path / "data"), JUPYTER_PREFER_ENV_PATH="0",
               PATH=f"{BIN.parent}{os.pathsep}{env['PATH']}")
    subprocess.run(shlex.split(readme_command()), cwd=ROOT, env=env, check=True)

    listed = subprocess.run(["jupyter", "kernelspec", "list", "--json"], env=env, check=True,
                            capture_output=True, text=True)
    specs = json.loads(listed.stdout)["kernelspecs"]
    assert "tchbook" in specs, f"no kernel named tchbook: {sorted(specs)}"
    installed = Path(specs["tchbook"]["resource_dir"])
    assert installed == tmp_path / "data" / "kernels" / "tchbook", installed
    assert specs["tchbook"]["spec"]["display_name"] == "Rust (tchbook)"
    assert "LIBTORCH" not in specs["tchbook"]["spec"].get("env", {}), "the folder's spec names none"

    metadata = nbformat.read(NOTEBOOK, as_version=4).metadata
    assert metadata.kernelspec.name == "tchbook"
    out = tmp_path / "out"
    subprocess.run(["jupyter", "nbconvert", "--to", "notebook", "--execute", str(NOTEBOOK),
                    "--output-dir", str(out), "--ExecutePreprocessor.timeout=900"],
                   cwd=NOTEBOOK.parent, env=env, check=True, capture_output=True, text=True)
    executed = nbformat.read(out / NOTEBOOK.name, as_version=4)
    codes = [cell for cell in executed.cells if cell.cell_type == "code"]
    errors = [output for cell in codes for output in cell.get("outputs", [])
              if output.output_type == "error"]
    assert not errors, errors
    assert all(cell.execution_count for cell in codes), "a cell did not run"
    assert any(output.get("text", "").strip() or output.get("data")
               for cell in codes for output in cell.get("outputs", [])), "nothing was shown"
