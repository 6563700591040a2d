"""Notebook 02, CPU, CUDA and MPS: tensors and a model on the device, and errors across devices."""
from __future__ import annotations

import re

from .outputs import cuda_present


def test_device_choice_prints_pytorch_style_device(cpu_cuda_mps):
    device = cpu_cuda_mps.text("device-choice").strip().splitlines()[-1]
    assert device == ("cuda:0" if cuda_present(cpu_cuda_mps) else "cpu")


def test_tensors_move_and_are_created_on_the_device(cpu_cuda_mps):
    device = "cuda:0" if cuda_present(cpu_cuda_mps) else "cpu"
    lines = cpu_cuda_mps.text("tensor-devices").strip().splitlines()
    assert lines == [f"Device upon initialization: cpu", f"Device after moving: {device}",
                     f"Device upon initialization: {device}"], lines


def test_test_model_moves_to_the_device(cpu_cuda_mps):
    device = "cuda:0" if cuda_present(cpu_cuda_mps) else "cpu"
    text = cpu_cuda_mps.text("model-devices")
    assert "Model device upon initialization: cpu" in text
    assert f"Model device after moving: {device}" in text
    assert text.startswith("TestModel(\n  (layer1): Linear(in_features=10, out_features=5, bias=True)\n"
                           "  (layer2): Linear(in_features=5, out_features=1, bias=True)\n)\n"), text
    rows = cpu_cuda_mps.json("named-parameters")[-1]["parameters"]
    assert [r["name"] for r in rows] == ["layer1.weight", "layer1.bias", "layer2.weight", "layer2.bias"]
    assert all(r["device"] == device for r in rows)


def test_cross_device_addition_fails_with_a_clear_message_only_across_devices(cpu_cuda_mps):
    text = cpu_cuda_mps.text("cross-device")
    if cuda_present(cpu_cuda_mps):
        assert "Expected all tensors to be on the same device" in text, text
    else:
        # one device only: the sum of two 3×3 tensors of ones succeeds and is printed
        assert re.search(r"tensor\(\[\[2\.?,\s*2\.?,\s*2\.?\]", text), text
    assert "Exception raised from" not in text, "the C++ backtrace reached the reader"


def test_missing_cuda_device_is_an_error_message_not_a_crash(cpu_cuda_mps):
    text = cpu_cuda_mps.text("missing-device")
    if cuda_present(cpu_cuda_mps):
        assert "this machine has a GPU" in text
    else:
        assert "cuda" in text.lower() or "nvidia" in text.lower(), text
        assert "Exception raised from" not in text
