"""Notebook 05, BootCamp's Using GPU: memory, the Iris model, and its losses beside PyTorch's
and the lesson's."""
from __future__ import annotations

import re

import pytest

from .outputs import (AFTER_NEXT_GPU_CHECK, assert_cpu_run_beside, assert_plot_is_an_image, beside, committed,
                      cuda_present, from_the_gpu_check, numbers, own_text, series_y)
from .runs import BOOTCAMP, ROOT


def test_bootcamp_reports_memory_before_and_after_moving_a_tensor(bootcamp):
    for tag in ("memory-before", "memory-after"):
        assert re.search(r"memory_allocated: \d+ bytes", bootcamp.text(tag))
        assert re.search(r"memory_cached:    \d+ bytes", bootcamp.text(tag))
        assert bootcamp.json(tag)[-1]["rows"]
    if cuda_present(bootcamp):
        after = numbers(r"memory_allocated: (\d+)", bootcamp.text("memory-after"))[0]
        assert after >= 512


def test_bootcamp_model_prints_as_pytorch_prints_it(bootcamp):
    assert bootcamp.text("model").strip() == (
        "Model(\n  (fc1): Linear(in_features=4, out_features=8, bias=True)\n"
        "  (fc2): Linear(in_features=8, out_features=9, bias=True)\n"
        "  (out): Linear(in_features=9, out_features=3, bias=True)\n)")


def test_bootcamp_model_is_cuda_only_on_a_cuda_machine(bootcamp):
    text = bootcamp.text("is-cuda")
    assert "before: is_cuda = false" in text
    assert f"after:  is_cuda = {'true' if cuda_present(bootcamp) else 'false'}" in text


def test_bootcamp_iris_split_is_80_20(bootcamp):
    assert "150 flowers, 120 for training, 30 for testing" in bootcamp.text("iris-split")


def test_bootcamp_loss_printed_every_10_epochs_and_falls(bootcamp):
    rows = re.findall(r"epoch:\s*(\d+)\s+loss:\s+([0-9.]+)", bootcamp.text("train"))
    assert [int(e) for e, _ in rows] == list(range(1, 100, 10))
    losses = [float(l) for _, l in rows]
    assert losses[-1] < 0.3 * losses[0], losses
    assert "TOTAL TRAINING TIME" in bootcamp.text("train")


def test_bootcamp_loss_plot_is_an_image_of_100_epochs(bootcamp):
    assert_plot_is_an_image(bootcamp, "train")
    y = series_y(bootcamp, "train")
    assert len(y) == 100 and y[-1] < y[0]


def test_bootcamp_test_accuracy_clears_chance(bootcamp):
    (correct,) = numbers(r"(\d+) of 30 test flowers correct", bootcamp.text("test-accuracy"))
    assert correct >= 24, correct  # chance is 10 of 30


def test_bootcamp_prints_devices_as_pytorch_does(bootcamp):
    cuda = cuda_present(bootcamp)
    assert bootcamp.text("a-device").strip() == "device(type='cpu')"
    want = "device(type='cuda', index=0)" if cuda else "device(type='cpu')"
    assert f"a.device: {want}" in bootcamp.text("memory-after")


def pytorch_bootcamp_losses() -> list[float]:
    """The BootCamp lesson's training run in PyTorch on this machine's CPU, with the shipped
    iris.csv: the prelude's parity script (prelude/tests/parity.py) runs it as the lesson does."""
    import importlib.util
    import shutil
    import tempfile

    spec = importlib.util.spec_from_file_location("parity", ROOT / "prelude" / "tests" / "parity.py")
    parity = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(parity)
    with tempfile.TemporaryDirectory() as d:
        shutil.copy(ROOT / "prelude" / "data" / "iris.csv", d)
        _, losses = parity.iris(d, {})
    return losses


LOSS_LINE = r"epoch:\s*(\d+)\s+loss:\s+([0-9.]+)"


def assert_pytorchs_losses(text: str) -> None:
    """The losses printed in `text` are PyTorch's on the CPU, as the text says: "to six
    significant digits", "5 parts in a million"."""
    printed = {int(e): float(l) for e, l in re.findall(LOSS_LINE, text)}
    assert sorted(printed) == list(range(1, 100, 10)), printed
    torch_losses = pytorch_bootcamp_losses()
    for epoch, loss in printed.items():
        want = torch_losses[epoch - 1]
        assert abs(loss - want) <= 5e-6 * abs(want), (epoch, loss, want)


def test_bootcamp_prints_pytorchs_losses(bootcamp):
    """With PyTorch's initialisation the notebook prints what PyTorch prints here."""
    assert_pytorchs_losses(bootcamp.text("train"))


def test_committed_bootcamp_losses_are_pytorchs_to_six_significant_digits():
    """The committed printout, whichever device made it (a GPU's CUDA kernels add in another
    order), and the CPU run's beside it, hold PyTorch's numbers within the tolerance the text
    states."""
    run = committed(BOOTCAMP)
    assert_pytorchs_losses(own_text(run, "train"))
    for other in beside(run, "train"):
        assert_pytorchs_losses("".join(other["data"]["text/plain"]))
    prose = " ".join(c.source for c in run.nb.cells if c.cell_type == "markdown")
    assert "PyTorch's numbers to six significant digits" in prose and "5 parts in a million" in prose


@AFTER_NEXT_GPU_CHECK
def test_committed_bootcamp_shows_the_cpus_training_time_beside_the_gpus():
    run = committed(BOOTCAMP)
    if not from_the_gpu_check(run):
        pytest.skip("the committed outputs come from a run through the kernel: no second run beside them")
    gpu, cpu = assert_cpu_run_beside(run, "train", "TOTAL TRAINING TIME:")
    assert gpu > 0 and cpu > 0


LESSON_LOSSES = [1.15071142, 0.93773186, 0.77982736, 0.60996711, 0.40083539,
                 0.25436994, 0.15052448, 0.10086147, 0.08127660, 0.07230931]


def test_bootcamp_comparison_with_the_lesson_matches_the_text(bootcamp):
    """The table beside the lesson's printout is computed from this run's losses, and the text's
    claims hold: "within 1 % at every printed epoch, but not exactly — not even at epoch 1"."""
    printed = [float(l) for _, l in re.findall(r"epoch:\s*(\d+)\s+loss:\s+([0-9.]+)", bootcamp.text("train"))]
    rows = re.findall(r"^\s*(\d+)\s+([0-9.]+)\s+([0-9.]+)\s+([-+0-9.e]+)$", bootcamp.text("vs-lesson"), re.M)
    assert [int(r[0]) for r in rows] == list(range(1, 100, 10)), rows
    assert [float(r[1]) for r in rows] == printed
    assert [float(r[2]) for r in rows] == LESSON_LOSSES
    for (epoch, got, want, diff) in rows:
        assert float(diff) == pytest.approx(float(got) - float(want), abs=1e-9 + 0.06 * abs(float(got) - float(want)))
        assert abs(float(got) - float(want)) < 0.01 * float(want), (epoch, got, want)  # "within 1 %"
    assert float(rows[0][1]) != float(rows[0][2])  # "not even at epoch 1"
    prose = " ".join(c.source for c in bootcamp.nb.cells if c.cell_type == "markdown")
    assert "within 1 % at every printed epoch, but not exactly" in prose
