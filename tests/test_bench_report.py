"""bench/report.py as `scripts/gpu-check --apply` uses it: the CUDA table a GPU run returns joins the
CPU tables this machine measured, in one bench/RESULTS.md a reader can tell apart. The GPU run
happens rarely, so its report path is checked here on tables made from the committed CPU runs."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"


def report(tmp_path: Path, trains: list[Path]) -> str:
    out = tmp_path / "RESULTS.md"
    subprocess.run([sys.executable, str(ROOT / "bench" / "report.py"), "--train", *map(str, trains),
                    "--kernels", str(RESULTS / "kernels.json"), "--out", str(out),
                    "--command", "tests/test_bench_report.py"], check=True, capture_output=True)
    return out.read_text()


def report_with(tmp_path: Path, *args: str) -> str:
    """The report of the committed kernels run and `args`."""
    out = tmp_path / "RESULTS.md"
    subprocess.run([sys.executable, str(ROOT / "bench" / "report.py"), "--kernels", str(RESULTS / "kernels.json"),
                    *args, "--out", str(out)], check=True, capture_output=True)
    return out.read_text()


def headings(text: str) -> list[str]:
    return re.findall(r"^## (Training loops .*)$", text, re.M)


def test_a_cuda_table_from_the_gpu_machine_joins_the_cpu_table_with_its_machine_named(tmp_path):
    cuda = json.loads((RESULTS / "train-cpu.json").read_text())
    cuda["device"] = "cuda"
    cuda["note"] = "Measured on the GPU machine by `scripts/gpu-check` (NVIDIA H100 80GB HBM3)."
    (tmp_path / "train-cuda.json").write_text(json.dumps(cuda))
    text = report(tmp_path, [RESULTS / "train-cpu.json", tmp_path / "train-cuda.json"])
    assert headings(text) == ["Training loops (cpu): the prelude vs PyTorch eager",
                              "Training loops (cuda): the prelude vs PyTorch eager"]
    cuda_section = text.split("## Training loops (cuda)")[1]
    # The note names the GPU before the table, where a reader starts.
    assert cuda_section.index("NVIDIA H100") < cuda_section.index("| workload |")
    assert "No CUDA table yet" not in text


def test_without_a_cuda_run_the_report_says_how_to_get_one(tmp_path):
    text = report(tmp_path, [RESULTS / "train-cpu.json"])
    assert "No CUDA table yet" in text and "scripts/gpu-check --apply" in text


def test_two_runs_on_one_device_have_headings_that_tell_them_apart(tmp_path):
    text = report(tmp_path, [RESULTS / "train-cpu-loaded.json", RESULTS / "train-cpu.json"])
    found = headings(text)
    assert len(found) == 2 and found[0] != found[1], found
    for heading, train in zip(found, ["train-cpu-loaded.json", "train-cpu.json"]):
        assert json.loads((RESULTS / train).read_text())["started"] in heading


def test_a_measure_the_kernels_run_did_not_take_is_left_out_not_shown_as_dashes(tmp_path):
    kernels = json.loads((RESULTS / "kernels.json").read_text())
    for k in kernels["kernels"].values():
        k.pop("first_complete", None)
    (tmp_path / "kernels.json").write_text(json.dumps(kernels))
    out = tmp_path / "RESULTS.md"
    subprocess.run([sys.executable, str(ROOT / "bench" / "report.py"), "--kernels", str(tmp_path / "kernels.json"),
                    "--out", str(out)], check=True, capture_output=True)
    table = [line for line in out.read_text().splitlines() if line.startswith("| ")]
    assert any(line.startswith("| trivial cell") for line in table)
    assert not any(line.startswith("| first completion of each fresh kernel") for line in table)
    assert all(set(line[2:-2].split(" | ")[1:]) != {"–"} for line in table), table


def test_the_floor_under_the_cells_is_shown_beside_the_kernels_own_trivial_cell(tmp_path):
    kernels = json.loads((RESULTS / "kernels.json").read_text())
    t = kernels["kernels"]["tchbook"]
    t["trivial"] = {"median": 0.090, "min": 0.085}
    ms = lambda median, least: {"median": median, "min": least, "n": 10}
    t["floor"] = {"bare": ms(0.043, 0.041), "empty": ms(0.060, 0.058), "empty_no_link": ms(0.035, 0.034),
                  "link": ms(0.025, 0.024), "dlopen": ms(0.0004, 0.0003), "cell": ms(0.072, 0.070),
                  "cell_source": "fn run_user_code_1() {}"}
    (tmp_path / "kernels.json").write_text(json.dumps(kernels))
    out = tmp_path / "RESULTS.md"
    subprocess.run([sys.executable, str(ROOT / "bench" / "report.py"), "--kernels", str(tmp_path / "kernels.json"),
                    "--out", str(out)], check=True, capture_output=True)
    text = out.read_text()
    rows = {line.split(" | ")[0][2:]: line.split(" | ")[-1][:-2] for line in text.splitlines()
            if line.startswith("| ") and line.count(" | ") == 1}
    assert rows["rustc: an empty cell crate (the prelude's names in scope, the entry point only)"] == "60 ms (58 ms)"
    assert rows["… of which the link (against `-Z no-link`)"] == "25 ms (24 ms)"
    assert rows["dlopen of that library beside the dependencies'"] == "400 µs (300 µs)"
    # 90 ms in the kernel, 72 ms of it rustc on the cell and 0.4 ms its dlopen: 18 ms around them.
    assert rows["… so evcxr, the cargo front end, the kernel and the client around rustc"] == "18 ms"
    assert "The least a cell can cost here is the empty crate and its dlopen: 60 ms, under the 80 ms" in text
    assert "trivial cell 90 ms (target ≤ 80 ms: **missed**)" in text


def test_the_dep_table_puts_each_kernels_cold_and_warm_beside_cargo_build(tmp_path):
    warm = lambda median: {"median": median, "min": median, "all": [median]}
    dep = {"reps": 1, "started": "2026-11-26 07:00 UTC", "ended": "2026-11-26 07:20 UTC",
           "load_before": [0.5, 0.5, 0.5], "load_after": [0.6, 0.6, 0.6],
           "crates": {"regex": {"cargo build": {"cold": 8.2, "warm": warm(0.54)},
                                "tchbook": {"cold": 12.0, "warm": warm(1.5)},
                                "evcxr": {"cold": 20.5, "warm": warm(2.25)}}}}
    (tmp_path / "dep.json").write_text(json.dumps(dep))
    out = tmp_path / "RESULTS.md"
    subprocess.run([sys.executable, str(ROOT / "bench" / "report.py"), "--kernels", str(RESULTS / "kernels.json"),
                    "--dep", str(tmp_path / "dep.json"), "--out", str(out)], check=True, capture_output=True)
    lines = out.read_text().splitlines()
    header = next(line for line in lines if line.startswith("| crate |"))
    assert header == "| crate | | tchbook | evcxr_jupyter 0.22 | `cargo build` |"
    assert "| `regex` | cold | 12.00 s | 20.50 s | 8.20 s |" in lines
    assert "| `regex` | warm | 1.50 s | 2.25 s | 540 ms |" in lines


def test_a_later_run_of_tchbook_alone_is_a_dated_table_of_its_own_after_the_full_run(tmp_path):
    full = json.loads((RESULTS / "kernels.json").read_text())
    later = {"reps": 10, "starts": 10, "started": "2026-11-26 08:00 UTC", "ended": "2026-11-26 08:05 UTC",
             "load_before": [0.5, 0.5, 0.5], "load_after": [0.4, 0.4, 0.4],
             "kernels": {"tchbook": {"name": "tchbook", "trivial": {"median": 0.088, "min": 0.080},
                                     "tch_cell": {"median": 0.125, "min": 0.115}}}}
    (tmp_path / "later.json").write_text(json.dumps(later))
    text = report_with(tmp_path, "--kernels-later", str(tmp_path / "later.json"))
    headings = re.findall(r"^## Kernels, through jupyter_client \((.*)\)$", text, re.M)
    assert headings == [f"{full['started'][:10]}, medians of {full['reps']}, fresh kernels: {full['starts']}",
                        "2026-11-26, medians of 10, in one kernel"]
    later_table = text[text.index("2026-11-26, medians of 10"):]
    assert "| trivial cell `1 + 1` | 88 ms (80 ms) |" in later_table
    assert "trivial cell 88 ms (target ≤ 80 ms: **missed**); small tch cell 125 ms (target ≤ 120 ms: **missed**)" \
        in later_table


def replace_cuda(out: Path, trains: list[Path], notes: Path | None = None) -> subprocess.CompletedProcess:
    cmd = [sys.executable, str(ROOT / "bench" / "report.py"), "--replace-device", "cuda",
           "--train", *map(str, trains), "--out", str(out)]
    return subprocess.run(cmd + (["--notes", str(notes)] if notes else []), capture_output=True, text=True)


def test_a_new_cuda_run_replaces_only_the_cuda_table_and_the_notes(tmp_path):
    # What --apply does on this machine: the header, the CPU table and the kernels' tables were
    # written when this machine measured them and must come through byte for byte.
    old = tmp_path / "train-cuda-old.json"
    cuda = json.loads((RESULTS / "train-cpu.json").read_text())
    cuda.update(device="cuda", note="Measured on the GPU machine (NVIDIA H100 80GB HBM3).")
    old.write_text(json.dumps(cuda))
    before = report(tmp_path, [RESULTS / "train-cpu.json", old])
    cuda.update(note="Measured on the GPU machine (NVIDIA H200).", started="2026-11-26 22:11 UTC")
    new = tmp_path / "train-cuda.json"
    new.write_text(json.dumps(cuda))
    notes = tmp_path / "NOTES.md"
    notes.write_text("## Notes\n\nThe second GPU run.\n")
    done = replace_cuda(tmp_path / "RESULTS.md", [new], notes)
    assert done.returncode == 0, done.stderr
    after = (tmp_path / "RESULTS.md").read_text()
    assert "NVIDIA H200" in after and "NVIDIA H100" not in after
    assert after.count("## Training loops (cuda") == 1
    assert after.endswith("## Notes\n\nThe second GPU run.\n")
    cut = before.index("## Training loops (cuda")
    assert after[:cut] == before[:cut]
    assert after[after.index("## Kernels"):after.index("## Notes")] == before[before.index("## Kernels"):]


def test_the_first_cuda_run_takes_the_place_of_the_note_that_there_is_none(tmp_path):
    before = report(tmp_path, [RESULTS / "train-cpu.json"])
    cuda = json.loads((RESULTS / "train-cpu.json").read_text())
    cuda.update(device="cuda", note="Measured on the GPU machine (NVIDIA H200).")
    (tmp_path / "train-cuda.json").write_text(json.dumps(cuda))
    done = replace_cuda(tmp_path / "RESULTS.md", [tmp_path / "train-cuda.json"])
    assert done.returncode == 0, done.stderr
    after = (tmp_path / "RESULTS.md").read_text()
    assert "No CUDA table yet" in before and "No CUDA table yet" not in after
    assert headings(after) == ["Training loops (cpu): the prelude vs PyTorch eager",
                               "Training loops (cuda): the prelude vs PyTorch eager"]
    assert after.index("## Training loops (cuda") < after.index("## Kernels")


def test_replacing_with_no_cuda_run_is_refused_and_changes_nothing(tmp_path):
    before = report(tmp_path, [RESULTS / "train-cpu.json"])
    done = replace_cuda(tmp_path / "RESULTS.md", [RESULTS / "train-cpu.json"])
    assert done.returncode != 0 and "none of the --train files is a cuda run" in done.stderr
    assert (tmp_path / "RESULTS.md").read_text() == before


def test_an_alternated_run_says_so_and_shows_each_kernel_against_the_first(tmp_path):
    out = tmp_path / "RESULTS.md"
    subprocess.run([sys.executable, str(ROOT / "bench" / "report.py"), "--kernels", str(RESULTS / "kernels.json"),
                    "--kernels-later", str(RESULTS / "kernels-tchbook-incremental.json"), "--out", str(out)],
                   check=True, capture_output=True)
    run = json.loads((RESULTS / "kernels-tchbook-incremental.json").read_text())
    section = out.read_text().split("medians of 40, in one kernel")[1].split("\n## ")[0]
    assert "`kernels.py --alternate`" in section
    ratio = run["kernels"]["tchbook"]["ratio_to_tchbook-baseline"]["trivial"]
    assert f"| … trivial cell ÷ tchbook-baseline's | 1.00× | {ratio:.2f}× |" in section


def test_the_allocator_rows_show_each_side_without_and_with_mimalloc_and_the_ratios_apart(tmp_path):
    text = report(tmp_path, [RESULTS / "train-cpu-mimalloc.json"])
    section = text.split("The kernel's allocator on its own")[1].split("\n\n")[1]
    row = next(line for line in section.splitlines() if line.startswith("| CIFAR-10 Net") and "| 1 |" in line)
    cells = [c.strip() for c in row.strip("|").split("|")]
    cifar = next(r for r in json.loads((RESULTS / "train-cpu-mimalloc.json").read_text())["rows"]
                 if r["workload"] == "cifar" and r["threads"] == 1)["sides"]
    median = {side: v["median"] for side, v in cifar.items()}
    # Without and with, for each side; then neither, as shipped, and both.
    assert cells[4] == f"{median['prelude-glibc'] / median['prelude']:.2f}×"
    assert cells[7] == f"{median['pytorch'] / median['pytorch-mimalloc']:.2f}×"
    assert cells[8:] == [f"{median['pytorch'] / median['prelude-glibc']:.2f}×",
                         f"**{median['pytorch'] / median['prelude']:.2f}×**",
                         f"{median['pytorch-mimalloc'] / median['prelude']:.2f}×"]
    # The older runs' CPU-cache rows keep their own table and words.
    older = report(tmp_path, [RESULTS / "train-cpu.json"])
    assert "The CPU caching allocator on its own" in older and "kernel's allocator" not in older


def first_build_module():
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import first_build
    finally:
        sys.path.pop(0)
    return first_build


# What the main command prints, in the order it prints it (abridged), as first_build.py sees it:
# (seconds since the start, the line).
MAIN_COMMAND_LINES = [
    (0.1, "tchbook: creating the Python environment in /tmp/x/venv"),
    (2.0, "   Compiling proc-macro2 v1.0.106"),
    (540.9, "    Finished `release` profile [optimized + debuginfo] target(s) in 9m 01s"),
    (541.2, "Installed the tchbook kernelspec in /tmp/x/venv/share/jupyter/kernels/tchbook"),
    (541.3, "libtorch: /tmp/x/venv/lib/python3.11/site-packages/torch (torch 2.11.0+cu130)"),
    (541.3, "Building tch and the tchbook prelude into /tmp/x/cache (only once; about 2 minutes)..."),
    (552.2, "Indexing completions and documentation for every kernel's first Tab, beside the build..."),
    (570.2, "The index beside the build failed (rust-analyzer did not load the prelude from /tmp/x/cache (no `Tensor` "
            "in scope)); asking again."),
    (731.0, "Built in 189s."),
    (745.6, "Indexed in 204s, beside the build."),
    (746.0, "==> notebooks/00-tensors.ipynb on the tchbook kernel"),
    (761.0, "    ran in 15 s; wrote notebooks/00-tensors.html"),
    (761.1, "==> notebooks/01-using-the-gpu.ipynb on the tchbook kernel"),
    (765.2, "    ran in 4 s; wrote notebooks/01-using-the-gpu.html"),
    (765.3, "==> notebooks/colab-setup.ipynb: left out (it installs Rust, torch and the tchbook wheel ...)"),
    (765.4, "HTML written beside each notebook in notebooks/"),
]


def test_the_fresh_machine_steps_are_read_from_the_lines_the_main_command_prints():
    steps = first_build_module().steps(MAIN_COMMAND_LINES, wall=766.0, venv_ready=95.0)
    assert steps["kernel_build_s"] == 540.9
    assert steps["install_s"] == 205.1  # from the build's end to the first notebook
    assert steps["template_built_s"] == 189.8
    # As install says it took, not when it says so (after the build, however early the index ended).
    assert steps["index_s"] == 204.0
    assert steps["index_beside_build"] is True and steps["index_attempts_failed"] == 1
    assert steps["notebooks"] == {"00-tensors.ipynb": 15.0, "01-using-the-gpu.ipynb": 4.1}
    assert steps["notebooks_s"] == 20.0 and steps["venv_ready_s"] == 95.0


def test_a_main_command_whose_output_changed_is_refused_not_mismeasured():
    without_build_line = [line for line in MAIN_COMMAND_LINES if "Finished" not in line[1]]
    with pytest.raises(SystemExit, match="cargo's Finished line"):
        first_build_module().steps(without_build_line, wall=766.0, venv_ready=None)


def test_the_lines_first_build_reads_are_the_ones_install_and_the_notebook_runner_print():
    fb = first_build_module()
    install = (ROOT / "src" / "install.rs").read_text()
    runner = (ROOT / "notebooks" / "run.py").read_text()
    # The format strings, with their arguments as a run fills them in.
    printed = [install[install.index('"Installed the tchbook kernelspec'):].split('"')[1],
               install[install.index('"Built in '):].split('"')[1].replace("{:.0?}", "189s"),
               install[install.index('"Indexed in '):].split('"')[1].replace("{took:.0?}", "204s"),
               runner[runner.index('f"==> {shown} on'):].split('"')[1].replace("{shown}", "notebooks/00-tensors.ipynb"),
               runner[runner.index('f"    ran in'):].split('"')[1].replace("{time.monotonic() - started:.0f}", "15")]
    patterns = [fb.INSTALL_START, fb.TEMPLATE_BUILT, fb.INDEXED, fb.NOTEBOOK_START, fb.NOTEBOOK_DONE]
    for line, pattern in zip(printed, patterns):
        assert pattern.search(line), (pattern.pattern, line)


def test_the_fresh_machine_table_gives_each_step_the_total_and_the_goal(tmp_path):
    fb = first_build_module()
    run = {"command": "./scripts/run-notebooks", "commit": "abc1234", "started": "2026-11-27 08:37 UTC",
           "ended": "2026-11-27 08:50 UTC", "cores": 2, "load_before": [0.25, 1.2, 1.6],
           "load_after": [1.9, 1.9, 1.9], "pip_cache": "fresh", "wall_s": 766.0, "cpu_s": 1400.0,
           "steps": fb.steps(MAIN_COMMAND_LINES, wall=766.0, venv_ready=95.0)}
    (tmp_path / "first-build.json").write_text(json.dumps(run))
    text = report_with(tmp_path, "--first-build", str(tmp_path / "first-build.json"))
    assert "## From a fresh machine to executed notebooks (2026-11-27 08:37 UTC, commit abc1234)" in text
    assert "torch's wheel downloaded" in text
    lines = text.splitlines()
    assert ("| the kernel's build (`cargo build --release`), the Python environment made beside it "
            "(ready after 95 s) | 541 s |") in lines
    assert ("| `tchbook install`: tch and the prelude built into the build cache, the completion index "
            "beside them | 205 s |") in lines
    assert "| … the completion index, beside the build (1 attempt beside it failed and was made again) | 204 s |" \
        in lines
    assert "| the notebooks (00 15 s, 01 4 s) | 20 s |" in lines
    assert "| **in all** | **766 s (12.8 minutes)**, 1400 s of CPU |" in lines
    assert "The goal is 10 minutes on two cores: missed by 166 s. On 2 cores the CPU time alone needs at least 700 s." \
        in text
