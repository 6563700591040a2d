"""Notebook 04, deeplizard's PyTorch on the GPU: devices, the grid of runs, its table, summary
and TensorBoard runs."""
from __future__ import annotations

import json
import re

import pytest

from .outputs import AFTER_NEXT_GPU_CHECK, committed, from_the_gpu_check, says_real_or_stand_in
from .runs import DEEPLIZARD, NOTEBOOKS


def test_deeplizard_predictions_land_on_the_network_device(deeplizard):
    cuda = "true" in deeplizard.text("cuda-available").lower()
    gpu = "device(type='cuda', index=0)" if cuda else "device(type='cpu')"
    assert deeplizard.text("gpu-pred").strip().splitlines()[-1] == gpu
    assert deeplizard.text("cpu-pred").strip() == "device(type='cpu')"
    if not cuda:
        assert "t.cuda() and network.cuda() would fail here" in deeplizard.text("gpu-pred")


def test_deeplizard_cross_device_addition_is_caught(deeplizard):
    text = deeplizard.text("cross-device")
    cuda = "true" in deeplizard.text("cuda-available").lower()
    if cuda:
        assert text.count("same device") == 2 or text.count("expected device") == 2, text
    else:
        # As PyTorch prints the sum: tensor([[ 6,  8],\n        [10, 12]])
        sums = re.findall(r"t[12] \+ t[12] =\ntensor\(\[\[ 6,  8\],\n {8}\[10, 12\]\]\)", text)
        assert len(sums) == 2, text


def test_deeplizard_parameters_match_pytorch_names_and_shapes(deeplizard):
    rows = re.findall(r"^(\S+)\s+torch\.Size\(\[([\d, ]+)\]\)$", deeplizard.text("param-shapes"), re.M)
    assert [(n, s.replace(" ", "")) for n, s in rows] == [
        ("conv1.weight", "6,1,5,5"), ("conv1.bias", "6"), ("conv2.weight", "12,6,5,5"), ("conv2.bias", "12"),
        ("fc1.weight", "120,192"), ("fc1.bias", "120"), ("fc2.weight", "60,120"), ("fc2.bias", "60"),
        ("out.weight", "10,60"), ("out.bias", "10")]


def test_deeplizard_parameters_move_with_the_network(deeplizard):
    gpu = "cuda:0" if "true" in deeplizard.text("cuda-available").lower() else "cpu"
    before = [l for l in deeplizard.text("param-devices-before").strip().splitlines() if l.endswith(("weight", "bias"))]
    after = [l for l in deeplizard.text("param-devices-after").strip().splitlines() if l.endswith(("weight", "bias"))]
    assert len(before) == 10 and all(l.startswith("cpu ") for l in before), before
    assert len(after) == 10 and all(l.startswith(gpu + " ") for l in after), after


def test_deeplizard_network_repr_comes_before_the_device_listing_as_in_the_episode(deeplizard):
    text = deeplizard.text("param-devices-after")
    assert text.startswith("Network(\n  (conv1): Conv2d(1, 6, kernel_size=(5, 5), stride=(1, 1))\n"), text
    assert text.index("  (out): Linear(in_features=60, out_features=10, bias=True)\n)") < text.index("conv1.weight")


def test_deeplizard_prediction_prints_as_a_tensor(deeplizard):
    shape, text = deeplizard.text("sample-error").split("\n", 1)
    assert shape == "torch.Size([1, 1, 28, 28])"
    if "true" not in deeplizard.text("cuda-available").lower():
        assert re.fullmatch(r"tensor\(\[\[[-+0-9.e, \n]+\]\](, grad_fn=<\w+>)?\)\n", text), text


def test_deeplizard_says_whether_fashion_mnist_is_real_or_stand_in(deeplizard):
    says_real_or_stand_in(deeplizard.text("data"), NOTEBOOKS / "data" / "FashionMNIST" / "raw")


def run_rows(deeplizard) -> list[dict]:
    """The rows the run table ended with (it is shown once, live, by the training cell)."""
    return deeplizard.json("runs")[-1]["rows"]


def test_deeplizard_run_table_has_every_grid_row(deeplizard):
    cuda = "true" in deeplizard.text("cuda-available").lower()
    devices = {"cuda", "cpu"} if cuda else {"cpu"}
    got = {(r["lr"], r["batch_size"], r["num_workers"], r["device"].split(":")[0]) for r in run_rows(deeplizard)}
    want = {(0.01, b, w, d) for b in (1000, 10000, 20000) for w in (0, 1) for d in devices}
    assert got == want
    assert len(run_rows(deeplizard)) == len(want)  # one epoch per run
    assert [r["run"] for r in run_rows(deeplizard)] == list(range(1, len(want) + 1))


def test_deeplizard_run_table_is_shown_once_and_its_files_after_it(deeplizard):
    tables = [c for c in deeplizard.nb.cells for o in c.get("outputs", [])
              if "application/vnd.tchbook.run-table+json" in o.get("data", {})]
    assert {id(c) for c in tables} == {id(deeplizard.cell("runs"))}, "the run table shows in more than one cell"
    text = deeplizard.text("run-table")
    n = len(run_rows(deeplizard))
    assert re.search(rf"^results\.csv: \d+ bytes, {n} rows$", text, re.M), text
    assert re.search(rf"^results\.json: \d+ bytes, {n} rows$", text, re.M), text
    assert re.search(r"^  run,epoch,loss,accuracy", text, re.M), text


def test_deeplizard_warms_up_each_device_before_the_timed_runs(deeplizard):
    devices = ["cuda:0", "cpu"] if "true" in deeplizard.text("cuda-available").lower() else ["cpu"]
    assert deeplizard.text("warm-up").splitlines() == [f"warmed up on {d}" for d in devices]


def test_deeplizard_batch_1000_runs_clear_chance(deeplizard):
    # One epoch is only 20 optimiser steps on the 20,000-image stand-in (60 on the real data), so a
    # run's accuracy varies with its random start; every run must at least double chance (0.1),
    # and the better one clear it threefold.
    small = [r for r in run_rows(deeplizard) if r["batch_size"] == 1000]
    assert small and all(r["accuracy"] > 0.2 for r in small), small
    assert max(r["accuracy"] for r in small) > 0.3, small
    assert all(r["loss"] < 2.2 for r in small), small  # ln 10 = 2.30 is a uniform guess


def test_deeplizard_results_from_stand_in_data_say_so(deeplizard):
    standin = (NOTEBOOKS / "data" / "FashionMNIST" / "raw" / "STANDIN.txt").exists()
    for tag in ("runs", "run-table", "run-summary", "device-comparison"):
        first = deeplizard.text(tag).strip().splitlines()[0]
        assert ("(stand-in)" in first) == standin, (tag, first, standin)


def summary_rows(deeplizard) -> dict[int, tuple[int, float, float, str]]:
    """The run summary: batch size -> (optimiser steps, mean accuracy, mean loss, verdict)."""
    found = re.findall(r"batch_size\s+(\d+):\s+(\d+) optimiser steps?, mean accuracy ([0-9.]+), "
                       r"mean loss ([0-9.]+) — (.+)$", deeplizard.text("run-summary"), re.M)
    return {int(b): (int(s), float(a), float(l), v.strip()) for b, s, a, l, v in found}


def test_deeplizard_summary_is_computed_from_the_run_table(deeplizard):
    summary = summary_rows(deeplizard)
    rows = run_rows(deeplizard)
    assert sorted(summary) == sorted({r["batch_size"] for r in rows})
    n = int(re.search(r"(\d+) training images", deeplizard.text("run-summary")).group(1))
    for bs, (steps, acc, loss, _) in summary.items():
        mine = [r for r in rows if r["batch_size"] == bs]
        assert steps == -(-n // bs)
        assert acc == pytest.approx(sum(r["accuracy"] for r in mine) / len(mine), abs=6e-4)
        assert loss == pytest.approx(sum(r["loss"] for r in mine) / len(mine), abs=6e-4)


def test_deeplizard_summary_sets_each_worker_pair_side_by_side_from_the_rows(deeplizard):
    pairs = re.findall(r"^batch_size\s+(\d+) on (\S+): ([0-9.]+) s / ([0-9.]+) s$",
                       deeplizard.text("run-summary"), re.M)
    rows = run_rows(deeplizard)
    assert len(pairs) == len(rows) // 2, pairs
    for bs, device, none, one in pairs:
        by_workers = {r["num_workers"]: r["epoch_duration"] for r in rows
                      if r["batch_size"] == int(bs) and r["device"] == device}
        assert float(none) == pytest.approx(by_workers[0], abs=0.006)
        assert float(one) == pytest.approx(by_workers[1], abs=0.006)


def test_deeplizard_text_about_batch_sizes_agrees_with_the_rows(deeplizard):
    """The markdown after the summary says: batch 1000 learns, 10,000 and 20,000 stay near
    chance; and that the 0- and 1-worker rows of a pair train identically."""
    nb = deeplizard.nb
    prose = " ".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "With batches of 1000 an epoch takes many steps and the network learns" in prose
    assert "both rows of a pair train on the same" in prose
    summary = summary_rows(deeplizard)
    assert summary[1000][3] == "learns", summary
    for bs in (10000, 20000):
        assert summary[bs][3] != "learns" and summary[bs][1] < 0.3, summary
    pairs: dict[tuple, list] = {}
    for r in run_rows(deeplizard):
        pairs.setdefault((r["batch_size"], r["device"]), []).append((r["loss"], r["accuracy"]))
    for key, results in pairs.items():
        assert len(set(results)) == 1, (key, results)


def test_deeplizard_run_durations_are_measured(deeplizard):
    for r in run_rows(deeplizard):
        assert 0 < r["epoch_duration"] <= r["run_duration"], r


def test_deeplizard_results_are_saved_as_csv_and_json(deeplizard):
    saved = json.loads((NOTEBOOKS / "results.json").read_text())
    rows = saved["rows"] if isinstance(saved, dict) else saved
    assert len(rows) == len(run_rows(deeplizard))
    csv = (NOTEBOOKS / "results.csv").read_text().strip().splitlines()
    assert len(csv) == len(rows) + 1


def test_deeplizard_tensorboard_runs_are_listed_one_folder_and_event_file_per_run(deeplizard):
    """The RunManager wrote a TensorBoard run per row of the table, in PyTorch's layout, and the
    files the cell lists are there for `tensorboard --logdir runs` (run from notebooks/)."""
    lines = deeplizard.text("tensorboard-runs").splitlines()
    folders = [line for line in lines if line.startswith("runs/")]
    files = [line.split()[0] for line in lines if line.startswith("    ")]
    rows = run_rows(deeplizard)
    assert len(folders) == len(files) == len(rows)
    for folder, file, row in zip(folders, files, rows):
        comment = (f"-lr={row['lr']},batch_size={row['batch_size']},num_workers={row['num_workers']},"
                   f"device={row['device']}")
        assert re.fullmatch(r"runs/[A-Z][a-z]{2}\d{2}_\d{2}-\d{2}-\d{2}_.+" + re.escape(comment), folder)
        assert re.fullmatch(r"events\.out\.tfevents\.\d{10}\..+\.\d+\.\d+", file)
        assert (NOTEBOOKS / folder / file).stat().st_size > 0


def test_deeplizard_device_comparison_has_a_row_per_device_present(deeplizard):
    cmp = deeplizard.json("device-comparison")[-1]
    devices = sorted(r["device"].split(":")[0] for r in cmp["rows"])
    cuda = "true" in deeplizard.text("cuda-available").lower()
    assert devices == (["cpu", "cuda"] if cuda else ["cpu"])
    for r in cmp["rows"]:
        assert r["mean_epoch_duration"] > 0


SPEED_UP = re.compile(r"^batch_size\s+(\d+) \(\s*(\d+) steps? an epoch\): cpu ([0-9.]+) s"
                      r"(?:, cuda ([0-9.]+) s, speed-up ([0-9.]+)×|; no CUDA device, no speed-up)$", re.M)


def assert_speed_ups_come_from_the_rows(run) -> None:
    """The speed-up per batch size is computed from the run table's rows: each batch size's mean
    epoch duration per device, their ratio, the steps an epoch holds, and the largest ratio named
    with its batch size and steps."""
    text, rows = run.text("speed-up-per-batch-size"), run_rows(run)
    n = int(re.search(r"(\d+) training images", run.text("run-summary")).group(1))
    found = {int(m[0]): m for m in SPEED_UP.findall(text)}
    assert sorted(found) == sorted({r["batch_size"] for r in rows}), text
    ratios = {}
    for bs, (_, steps, cpu, cuda, ratio) in found.items():
        assert int(steps) == -(-n // bs)
        for device, printed in (("cpu", cpu), ("cuda", cuda)):
            durations = [r["epoch_duration"] for r in rows
                         if r["batch_size"] == bs and r["device"].split(":")[0] == device]
            assert bool(printed) == bool(durations), (bs, device)
            if durations:
                assert float(printed) == pytest.approx(sum(durations) / len(durations), abs=6e-4)
        if ratio:
            ratios[bs] = float(ratio)
            exact = float(cpu) / float(cuda)
            assert float(ratio) == pytest.approx(exact, rel=0.05, abs=0.06), (bs, ratio, exact)
    largest = re.search(r"^largest speed-up: ([0-9.]+)× at batch_size (\d+), (\d+) optimiser steps? an epoch$",
                        text, re.M)
    assert bool(largest) == bool(ratios), text
    if ratios:
        bs = int(largest.group(2))
        assert ratios[bs] == max(ratios.values()) and int(largest.group(3)) == -(-n // bs)


def test_deeplizard_prints_the_speed_up_per_batch_size_from_the_rows(deeplizard):
    assert_speed_ups_come_from_the_rows(deeplizard)
    cuda = "true" in deeplizard.text("cuda-available").lower()
    assert ("speed-up:" in deeplizard.text("speed-up-per-batch-size")) == cuda


@AFTER_NEXT_GPU_CHECK
def test_committed_deeplizard_prints_the_speed_up_per_batch_size():
    """Where the committed outputs come from the GPU check, its run compared the devices per batch
    size, from the rows of its own run table."""
    run = committed(DEEPLIZARD)
    if not from_the_gpu_check(run):
        pytest.skip("the committed outputs come from a run through the kernel")
    assert_speed_ups_come_from_the_rows(run)
