"""bench/report.py as `scripts/gpu-check --apply` uses it: the CUDA table a GPU run returns joins the
CPU tables this machine measured, in one bench/RESULTS.md a reader can tell apart. The GPU run
happens rarely, so its report path is checked here on tables made from the committed CPU runs."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"


def report(tmp_path: Path, trains: list[Path]) -> str:
    out = tmp_path / "RESULTS.md"
    subprocess.run([sys.executable, str(ROOT / "bench" / "report.py"), "--train", *map(str, trains),
                    "--kernels", str(RESULTS / "kernels.json"), "--out", str(out),
                    "--command", "tests/test_bench_report.py"], check=True, capture_output=True)
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
