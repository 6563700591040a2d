"""The hosted setup notebook (`notebooks/colab-setup.ipynb`), run on the wheel's venv kernel without
its installation cells (tagged `install`), and what a notebook's folder may not make the Rust
kernel run (the `hosted` fixture: conftest.py)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat

from hosted_notebook import CELL_TIMEOUT_S, KERNEL, Run, executed, jupyter_path
from wheel_venv import run

ROOT = Path(__file__).resolve().parent.parent
COLAB = ROOT / "notebooks" / "colab-setup.ipynb"


def plant(folder: Path) -> Path:
    """A folder holding a library with the name of one the kernel's processes load, an
    evcxr.toml with code run at start, and a rust-toolchain.toml naming a rustc of its own: each
    notes its name in `ran` if it runs. Returns that file."""
    ran = folder / "ran"
    (folder / "planted.c").write_text(
        "#include <stdio.h>\n"
        "__attribute__((constructor)) static void planted(void) {\n"
        f'  FILE *f = fopen("{ran}", "a"); if (f) {{ fputs("libcuda.so.1\\n", f); fclose(f); }}\n'
        "}\n")
    run(["cc", "-shared", "-fPIC", "-o", str(folder / "libcuda.so.1"), str(folder / "planted.c")])
    start_code = f'std::fs::write("{ran}", "evcxr.toml\\n").unwrap();'
    (folder / "evcxr.toml").write_text(f"[evcxr]\nprelude = {json.dumps(start_code)}\n")
    bin_dir = folder / "toolchain" / "bin"
    bin_dir.mkdir(parents=True)
    for tool in ("rustc", "cargo"):
        real = run(["rustup", "which", tool]).stdout.strip()
        script = bin_dir / tool
        script.write_text(f"#!/bin/sh\necho rust-toolchain.toml >> '{ran}'\nexec {real} \"$@\"\n")
        script.chmod(0o755)
    (folder / "rust-toolchain.toml").write_text(f'[toolchain]\npath = "{folder / "toolchain"}"\n')
    return ran


def test_nothing_in_the_notebook_folder_runs_in_the_rust_kernel(hosted, tmp_path):
    """The bridge starts the Rust kernel in the notebook's folder, with the Python kernel's
    environment: a loader path with an empty entry (which the loader reads as that folder) must
    not reach it, nor anything planted there run."""
    folder = tmp_path / "cloned-repository"
    folder.mkdir()
    ran = plant(folder)
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": KERNEL, "language": "python",
                                                           "display_name": "Python 3"}})
    nb.cells = [nbformat.v4.new_code_cell("%load_ext tchbook"),
                nbformat.v4.new_code_cell('%%rust\nlet kept = 41;\n'
                                          'println!("{}", kept + 1 + std::path::Path::new("gone").exists() as i32);')]
    nbformat.write(nb, folder / "planted.ipynb")
    env = dict(hosted["env"], LD_LIBRARY_PATH="/nonexistent-lib:")
    from nbclient import NotebookClient
    client = NotebookClient(nb, kernel_name=KERNEL, timeout=CELL_TIMEOUT_S,
                            resources={"metadata": {"path": str(folder)}})
    with jupyter_path(hosted):
        client.execute(env=env)
    text = "".join(o.get("text", "") for o in nb.cells[1].outputs if o.output_type == "stream")
    assert text == "42\n", nb.cells[1].outputs
    assert not ran.exists(), f"planted files ran in the Rust kernel: {ran.read_text()}"


def test_colab_setup_trains_as_the_first_tutorial_does():
    """Its Rust cells are notebook 01's, cell for cell, so the two cannot drift apart."""
    colab = nbformat.read(COLAB, as_version=4)
    tutorial = nbformat.read(ROOT / "notebooks" / "01-using-the-gpu.ipynb", as_version=4)
    rust = [c for c in colab.cells if c.cell_type == "code" and c.source.startswith("%%rust\n")]
    assert len(rust) >= 5
    for cell in rust:
        (tag,) = cell.metadata["tags"]
        (same,) = [c for c in tutorial.cells if tag in c.metadata.get("tags", [])]
        assert cell.source == "%%rust\n" + same.source, f"colab-setup's {tag!r} cell differs from notebook 01's"
    assert colab.metadata["kernelspec"]["name"] == "python3"



def test_colab_setup_runs_the_first_tutorial_through_rust_cells(hosted):
    nb, client = executed(COLAB, hosted, skip_tag="install")
    run = Run(nb, client)
    installs = [c for c in nb.cells if "install" in c.metadata.get("tags", [])]
    assert installs and all(not c.outputs for c in installs), "the installation cells must be skipped here"
    assert "training on" in run.text("device")
    card = [o for o in run.outputs("device") if o.output_type == "execute_result"]
    assert card and "<table" in card[0].data["text/html"]
    train = run.outputs("train")
    plots = [o for o in train if o.output_type == "display_data" and "image/png" in o.data]
    assert len(plots) == 1, f"one loss plot, updated in place: {[o.output_type for o in train]}"
    assert plots[0].metadata["image/png"]["alt"].startswith("Line plot"), plots[0].metadata
    accuracy = float(re.search(r"test accuracy: ([0-9.]+)", run.text("test-accuracy")).group(1))
    assert accuracy > 0.6, f"the model did not learn: test accuracy {accuracy}"
