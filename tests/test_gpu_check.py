"""scripts/gpu_check.py, the Python half of scripts/gpu-check, run as the bash script runs it: on
cargo's JSON messages as cargo writes them, a GPU run's benchmark and machine description, and
notebooks as --apply leaves them. (The whole of scripts/gpu-check runs in scripts/test, as
`scripts/gpu-check --rehearse`.)"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "gpu_check.py"
TARGET = "/build/target/release"


def gpu_check(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], input=stdin, capture_output=True, text=True,
                          cwd=ROOT)


def artifact(package: str, target: str, kind: list[str], test: bool, executable: str | None) -> str:
    """One `compiler-artifact` line as cargo 1.95 writes it with --message-format=json."""
    return json.dumps({
        "reason": "compiler-artifact",
        "package_id": f"path+file:///build/{package}#{package}@0.1.0",
        "manifest_path": f"/build/{package}/Cargo.toml",
        "target": {"kind": kind, "crate_types": ["bin" if kind != ["lib"] else "lib"], "name": target,
                   "src_path": f"/build/{package}/src/{target}.rs", "edition": "2021", "doc": False,
                   "doctest": False, "test": test},
        "profile": {"opt_level": "3", "debuginfo": 0, "debug_assertions": False, "overflow_checks": False,
                    "test": test},
        "features": [],
        "filenames": [executable or f"{TARGET}/deps/lib{target}.rlib"],
        "executable": executable,
        "fresh": True,
    })


OTHER_MESSAGES = [
    json.dumps({"reason": "build-script-executed", "package_id": "path+file:///build/prelude#tchbook-prelude@0.1.0",
                "linked_libs": ["static=shim"], "linked_paths": [], "cfgs": [], "env": [],
                "out_dir": f"{TARGET}/build/tchbook-prelude-0123/out"}),
    json.dumps({"reason": "compiler-message", "package_id": "path+file:///build/prelude#tchbook-prelude@0.1.0",
                "manifest_path": "/build/prelude/Cargo.toml", "target": {"kind": ["lib"], "name": "tchbook_prelude"},
                "message": {"rendered": "warning: unused variable", "level": "warning"}}),
    json.dumps({"reason": "build-finished", "success": True}),
]


def test_prelude_tests_is_the_prelude_integration_test_binary_alone():
    wanted = f"{TARGET}/deps/tests-5f1c2a9e0b7d4e21"
    messages = [
        artifact("tchbook-prelude", "tchbook_prelude", ["lib"], False, None),
        artifact("tchbook-prelude", "tchbook_prelude", ["lib"], True, f"{TARGET}/deps/tchbook_prelude-9a8b7c6d"),
        artifact("tchbook-prelude", "tests", ["test"], True, wanted),
        artifact("tchbook-prelude", "gpu_check", ["example"], False, f"{TARGET}/examples/gpu_check"),
        artifact("tchbook", "tests", ["test"], True, f"{TARGET}/deps/tests-0d1e2f3a4b5c6d7e"),
        artifact("tchbook", "tchbook", ["bin"], False, f"{TARGET}/tchbook"),
        *OTHER_MESSAGES,
    ]
    done = gpu_check("prelude-tests", stdin="\n".join(messages) + "\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout == wanted + "\n"


def test_prelude_tests_prints_nothing_when_cargo_built_no_prelude_tests():
    done = gpu_check("prelude-tests", stdin="\n".join(OTHER_MESSAGES) + "\n")
    assert (done.returncode, done.stdout) == (0, ""), done.stderr


def test_program_is_the_exported_projects_binary(tmp_path):
    messages = tmp_path / "01-using-the-gpu.json"
    wanted = f"{TARGET}/tchbook-notebook-01-using-the-gpu"
    messages.write_text("\n".join([
        artifact("torch-sys", "build_script_build", ["custom-build"], False, None),
        artifact("tchbook-prelude", "tchbook_prelude", ["lib"], False, None),
        artifact("tchbook-notebook-01-using-the-gpu", "tchbook-notebook-01-using-the-gpu", ["bin"], False, wanted),
        *OTHER_MESSAGES,
    ]) + "\n")
    done = gpu_check("program", str(messages))
    assert done.returncode == 0, done.stderr
    assert done.stdout == wanted + "\n"


def test_cuda_table_keeps_the_run_and_names_the_gpu_machine(tmp_path):
    train = {"device": "cuda", "runs": 2, "rows": [{"workload": "iris", "threads": 1, "steps": 100}],
             "started": "2026-11-27 01:39 UTC", "ended": "2026-11-27 01:43 UTC"}
    (tmp_path / "train-cuda.json").write_text(json.dumps(train))
    (tmp_path / "machine.txt").write_text("NVIDIA H100 80GB HBM3, 81559 MiB, 570.86\ntorch 2.11.0 CUDA 12.8\n")
    out = tmp_path / "bench-train-cuda.json"
    done = gpu_check("cuda-table", str(tmp_path / "train-cuda.json"), str(tmp_path / "machine.txt"), str(out))
    assert done.returncode == 0, done.stderr
    written = json.loads(out.read_text())
    assert written == dict(train, note="Measured on the GPU machine by `scripts/gpu-check` "
                                       "(NVIDIA H100 80GB HBM3, 81559 MiB, 570.86\ntorch 2.11.0 CUDA 12.8).")
    # Laid out as bench/results/*.json are (scripts/bench), so that a diff shows only what changed.
    assert out.read_text() == json.dumps(written, indent=1)


def test_cuda_table_without_a_machine_description_says_unknown(tmp_path):
    (tmp_path / "train-cuda.json").write_text(json.dumps({"device": "cuda", "rows": [], "ended": "2026-11-27 01:43 UTC"}))
    out = tmp_path / "out.json"
    done = gpu_check("cuda-table", str(tmp_path / "train-cuda.json"), str(tmp_path / "machine.txt"), str(out))
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text())["note"] == "Measured on the GPU machine by `scripts/gpu-check` (unknown)."


def test_cuda_table_refuses_a_benchmark_that_was_cut_short(tmp_path):
    # What run.sh returns when the benchmark step hit its limit: the rows done so far, no end.
    train = {"device": "cuda", "runs": 2, "started": "2026-11-27 01:39 UTC",
             "rows": [{"workload": "iris", "threads": 1, "steps": 100}, {"workload": "cifar", "threads": 1}]}
    (tmp_path / "train-cuda.json").write_text(json.dumps(train))
    out = tmp_path / "bench-train-cuda.json"
    out.write_text("the table of the last whole run")
    done = gpu_check("cuda-table", str(tmp_path / "train-cuda.json"), str(tmp_path / "machine.txt"), str(out))
    assert done.returncode == 3
    assert "stopped before its end (2 row(s) written" in done.stderr
    assert "keeps its CUDA table" in done.stderr
    assert out.read_text() == "the table of the last whole run"


MERGED = {"program": "exported", "at": "2026-11-29 06:30 UTC", "cpu": "a CPU", "cores": 16, "gpu": "a GPU",
          "profile": "release", "commit": "29fd47b", "exported_by": "tchbook 0.1.0", "completed": True}


def notebook(folder: Path, name: str, outputs: list, beside: list | None = None) -> None:
    """A notebook as --apply leaves it: outputs, how they were made, and with `beside`, a cell
    tagged `beside` holding those outputs."""
    cells = [new_markdown_cell("# A notebook"), new_code_cell("1 + 1", outputs=outputs),
             new_code_cell("let x = 1;")]
    if beside is not None:
        cells.append(new_code_cell("train()", outputs=beside, metadata={"tags": ["train", "beside"]}))
    nb = new_notebook(cells=cells, metadata={"tchbook": {"provenance": MERGED}})
    nbformat.write(nb, folder / f"{name}.ipynb")


def test_check_notebooks_counts_each_applied_notebooks_outputs(tmp_path):
    notebook(tmp_path, "01-using-the-gpu", [new_output("execute_result", {"text/plain": "2"}, execution_count=1)])
    notebook(tmp_path, "02-cpu-cuda-mps", [new_output("stream", name="stdout", text="cuda:0\n"),
                                            new_output("display_data", {"text/plain": "a plot"})])
    done = gpu_check("check-notebooks", str(tmp_path), "01-using-the-gpu", "02-cpu-cuda-mps")
    assert done.returncode == 0, done.stderr
    assert done.stdout == ("    01-using-the-gpu.ipynb: valid, 1 outputs, 0 cell(s) with the CPU's run beside\n"
                           "    02-cpu-cuda-mps.ipynb: valid, 2 outputs, 0 cell(s) with the CPU's run beside\n")


def test_check_notebooks_fails_at_a_notebook_left_without_outputs(tmp_path):
    notebook(tmp_path, "01-using-the-gpu", [new_output("stream", name="stdout", text="hi\n")])
    notebook(tmp_path, "02-cpu-cuda-mps", [])
    done = gpu_check("check-notebooks", str(tmp_path), "01-using-the-gpu", "02-cpu-cuda-mps")
    assert done.returncode == 1
    assert done.stdout == "    01-using-the-gpu.ipynb: valid, 1 outputs, 0 cell(s) with the CPU's run beside\n"
    assert "02-cpu-cuda-mps: --apply left no outputs" in done.stderr


def test_check_notebooks_wants_the_cpu_run_under_each_cell_tagged_beside(tmp_path):
    """03 and 05 show the CPU run's printout under the GPU's: `tchbook export --merge --beside`
    writes it as one text output marked `tchbook.beside`; a merge without it fails the check."""
    printed = new_output("stream", name="stdout", text="Finished Training in 14.8s\n")
    cpu = new_output("display_data", {"text/plain": "The same cell ...\nFinished Training in 11.6s\n"},
                     metadata={"tchbook": {"beside": {"device": "cpu"}}})
    notebook(tmp_path, "03-cifar10-on-the-gpu", [printed], beside=[printed, cpu])
    notebook(tmp_path, "05-bootcamp-using-gpu", [printed], beside=[printed])
    done = gpu_check("check-notebooks", str(tmp_path), "03-cifar10-on-the-gpu", "05-bootcamp-using-gpu")
    assert done.returncode == 1
    assert done.stdout == "    03-cifar10-on-the-gpu.ipynb: valid, 3 outputs, 1 cell(s) with the CPU's run beside\n"
    assert "05-bootcamp-using-gpu: no CPU run's text under the cells tagged beside" in done.stderr


def test_check_notebooks_wants_how_the_outputs_were_made(tmp_path):
    notebook(tmp_path, "01-using-the-gpu", [new_output("stream", name="stdout", text="hi\n")])
    nb = nbformat.read(tmp_path / "01-using-the-gpu.ipynb", as_version=4)
    del nb.metadata["tchbook"]
    nbformat.write(nb, tmp_path / "01-using-the-gpu.ipynb")
    done = gpu_check("check-notebooks", str(tmp_path), "01-using-the-gpu")
    assert done.returncode == 1 and "no record of how the outputs were made" in done.stderr, done.stderr


def test_check_notebooks_fails_on_a_notebook_nbformat_rejects(tmp_path):
    notebook(tmp_path, "03-cifar10-on-the-gpu", [new_output("stream", name="stdout", text="hi\n")])
    broken = json.loads((tmp_path / "03-cifar10-on-the-gpu.ipynb").read_text())
    broken["cells"][1]["outputs"][0]["output_type"] = "no such output"
    (tmp_path / "03-cifar10-on-the-gpu.ipynb").write_text(json.dumps(broken))
    done = gpu_check("check-notebooks", str(tmp_path), "03-cifar10-on-the-gpu")
    assert done.returncode != 0 and "ValidationError" in done.stderr, done.stderr


def test_unknown_command_is_a_usage_error():
    done = gpu_check("apply")
    assert done.returncode == 2 and "invalid choice" in done.stderr, done.stderr
