"""Notebook 03, CIFAR-10 on the GPU: PyTorch's CIFAR-10 tutorial, its losses, weights and accuracy."""
from __future__ import annotations

import re

import pytest

from .outputs import (AFTER_NEXT_GPU_CHECK, assert_cpu_run_beside, assert_plot_is_an_image, committed,
                      from_the_gpu_check, numbers, says_real_or_stand_in, series_y)
from .runs import CIFAR, NOTEBOOKS


def test_cifar_says_whether_it_used_real_or_stand_in_data(cifar):
    says_real_or_stand_in(cifar.text("data"), NOTEBOOKS / "data" / "cifar-10-batches-bin")


def cifar_losses(cifar) -> list[tuple[int, int, float]]:
    return [(int(e), int(i), float(l))
            for e, i, l in re.findall(r"\[(\d+),\s*(\d+)\] loss: ([0-9.]+)", cifar.text("train"))]


def test_cifar_prints_running_loss_every_2000_minibatches_for_2_epochs(cifar):
    rows = cifar_losses(cifar)
    assert {e for e, _, _ in rows} == {1, 2}, rows
    assert all(i % 2000 == 0 for _, i, _ in rows), rows
    assert "Finished Training" in cifar.text("train")


def test_cifar_loss_falls(cifar):
    rows = cifar_losses(cifar)
    assert rows[-1][2] < 0.85 * rows[0][2], rows
    y = series_y(cifar, "train")
    assert y == pytest.approx([l for _, _, l in rows], abs=1e-3)


def test_cifar_loss_plot_is_an_image(cifar):
    assert_plot_is_an_image(cifar, "train")


def test_cifar_loss_plot_sits_above_the_printed_losses(cifar):
    kinds = [o["output_type"] for o in cifar.outputs("train")]
    assert kinds[0] == "display_data" and "display_data" not in kinds[1:], kinds


def test_cifar_net_prints_as_pytorch_prints_it(cifar):
    text = cifar.text("net")
    assert text.startswith("Net(\n  (conv1): Conv2d(3, 6, kernel_size=(5, 5), stride=(1, 1))\n"), text
    assert "  (fc3): Linear(in_features=84, out_features=10, bias=True)\n)" in text, text


def test_cifar_reload_shows_what_pytorchs_load_state_dict_returns(cifar):
    assert cifar.text("reload").strip() == "<All keys matched successfully>"


def test_cifar_weights_are_saved_as_safetensors(cifar):
    (count, size) = re.search(r"saved (\d+) tensors to \S+ \((\d+) bytes\)", cifar.text("save")).groups()
    assert int(count) == 10 and int(size) > 62_000 * 4  # Net has 62,006 parameters


def test_cifar_overall_accuracy_clears_chance(cifar):
    (acc,) = numbers(r"Accuracy of the network on the \d+ test images(?: \(stand-in\))?: (\d+) %",
                     cifar.text("test-accuracy"))
    assert acc >= 25, acc  # chance is 10 %


def test_cifar_results_from_stand_in_data_say_so(cifar):
    """Every loss and accuracy line and the loss plot's title carry "(stand-in)" exactly when the data is."""
    standin = (NOTEBOOKS / "data" / "cifar-10-batches-bin" / "STANDIN.txt").exists()
    lines = [l for tag in ("test-accuracy", "class-accuracy") for l in cifar.text(tag).splitlines()
             if l.startswith("Accuracy")]
    assert len(lines) == 11, lines
    lines += [l for l in cifar.text("train").splitlines() if " loss: " in l]
    assert len(lines) > 11, lines
    for line in lines:
        assert ("(stand-in)" in line) == standin, (line, standin)
    titles = [p["title"] for p in cifar.json("train") if isinstance(p, dict) and "title" in p]
    assert titles, "the loss plot has no machine-readable title"
    assert all(("(stand-in)" in t) == standin for t in titles), (titles, standin)


def test_cifar_reports_accuracy_for_all_ten_classes(cifar):
    rows = re.findall(r"Accuracy of\s+(\w+) :\s*(\d+) %", cifar.text("class-accuracy"))
    assert [c for c, _ in rows] == ["plane", "car", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
    overall = numbers(r": (\d+) %", cifar.text("test-accuracy"))[0]
    mean = sum(int(a) for _, a in rows) / 10
    assert abs(mean - overall) < 10, (mean, overall)  # balanced test set: the mean is near the overall


@AFTER_NEXT_GPU_CHECK
def test_committed_cifar_shows_the_cpus_training_time_beside_the_gpus():
    """"Where is the speed-up?": where the committed outputs come from the GPU check, the training
    cell shows the same program's run on that machine's CPU under the GPU's, both timed."""
    run = committed(CIFAR)
    if not from_the_gpu_check(run):
        pytest.skip("the committed outputs come from a run through the kernel: no second run beside them")
    gpu, cpu = assert_cpu_run_beside(run, "train", "Finished Training in")
    assert gpu > 0 and cpu > 0
