"""Notebook 01, Using the GPU: a small classifier trained on the device it chose."""
from __future__ import annotations

import re

from .outputs import assert_plot_is_an_image, numbers, series_y


def test_mlp_trains_on_the_chosen_device(using_gpu):
    device = re.search(r"training on (\S+)", using_gpu.text("device")).group(1)
    params = using_gpu.json("model")[-1]["parameters"]
    assert params and all(p["device"] == device for p in params)
    moved = using_gpu.text("data-device")
    assert f"after .to(device): x on {device}, y on {device}" in moved


def test_mlp_parameters_are_the_two_hidden_layer_classifier(using_gpu):
    shapes = [tuple(p["shape"]) for p in using_gpu.json("model")[-1]["parameters"]]
    assert len(shapes) == 6 and shapes[0] == (16, 4) and shapes[-1] == (3,), shapes


def test_mlp_loss_falls(using_gpu):
    losses = numbers(r"mean loss ([0-9.]+)", using_gpu.text("train"))
    assert len(losses) == 6 and losses[-1] < 0.3 * losses[0], losses
    y = series_y(using_gpu, "train")
    assert len(y) == 50 and y[-1] < 0.3 * y[0], y


def test_mlp_loss_plot_is_an_image(using_gpu):
    assert_plot_is_an_image(using_gpu, "train")  # the live plot, in its final state


def test_mlp_test_accuracy_clears_chance(using_gpu):
    (acc,) = numbers(r"test accuracy: ([0-9.]+)", using_gpu.text("test-accuracy"))
    assert acc >= 0.8, acc  # chance is 1/3; some runs print exactly 0.8
