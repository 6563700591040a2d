"""The prelude's TensorBoard event files, read back with TensorBoard's own reader.

The prelude's `tensorboard_run` example (prelude/examples/tensorboard_run.rs) is built with cargo
and run in a fresh folder: it writes one `SummaryWriter` run by hand and one `RunManager` run of
deeplizard's network, as notebook 04 does. TensorBoard's `EventAccumulator` then loads both, and
what a user looks at in TensorBoard is checked against what was written, and against what
PyTorch's own `torch.utils.tensorboard` writes for the same histogram and image.

Needs cargo and libtorch as the prelude's build does (`source scripts/env.sh`), and the venv's
tensorboard and torch (scripts/requirements.txt).
"""
from __future__ import annotations

import io
import os
import re
import socket
import subprocess
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
from torch.utils.tensorboard import SummaryWriter as TorchSummaryWriter
from torch.utils.tensorboard import summary as torch_summary

ROOT = Path(__file__).resolve().parent.parent
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
EXAMPLE = TARGET / "release" / "examples" / "tensorboard_run"
# Keep everything: size_guidance 0 means no sampling of any kind of event.
EVERYTHING = {kind: 0 for kind in ("scalars", "histograms", "images", "tensors", "graph",
                                   "compressedHistograms", "audio")}
RUN_COMMENT = "-lr=0.01,batch_size=10,num_workers=0,device=cpu"
PARAMETERS = {  # deeplizard's Network: name → number of values
    "conv1.weight": 150, "conv1.bias": 6, "conv2.weight": 1800, "conv2.bias": 12,
    "fc1.weight": 23040, "fc1.bias": 120, "fc2.weight": 7200, "fc2.bias": 60,
    "out.weight": 600, "out.bias": 10,
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """The example's runs, by comment: {"-direct": dir, RUN_COMMENT: dir}."""
    subprocess.run(
        ["cargo", "build", "--release", "-p", "tchbook-prelude", "--example", "tensorboard_run"],
        cwd=ROOT, check=True,
    )
    cwd = tmp_path_factory.mktemp("tensorboard")
    started = datetime.now()
    subprocess.run([str(EXAMPLE)], cwd=cwd, check=True, timeout=300)
    dirs = sorted((cwd / "runs").iterdir())
    host = re.escape(socket.gethostname())
    layout = re.compile(r"(?P<date>[A-Z][a-z]{2}\d{2}_\d{2}-\d{2}-\d{2})_" + host + r"(?P<comment>-.*)$")
    found = {}
    for d in dirs:
        m = layout.match(d.name)
        assert m, f"{d.name} is not <Mon><DD>_<HH>-<MM>-<SS>_<hostname><comment>"
        # datetime.now().strftime('%b%d_%H-%M-%S'), as PyTorch names a run: local time, now.
        # (The year goes in before parsing: Feb29 alone does not parse, 1900 being no leap year.)
        when = datetime.strptime(f"{started.year} {m['date']}", "%Y %b%d_%H-%M-%S")
        assert abs((when - started).total_seconds()) < 300, (m["date"], started)
        found[m["comment"]] = d
    assert sorted(found) == sorted(["-direct", RUN_COMMENT])
    return found


def accumulate(run: Path) -> EventAccumulator:
    acc = EventAccumulator(str(run), size_guidance=EVERYTHING)
    acc.Reload()
    return acc


def test_each_run_has_one_event_file_named_as_pytorch_names_it(runs):
    host = re.escape(socket.gethostname())
    pids = set()
    for run in runs.values():
        files = list(run.iterdir())
        assert len(files) == 1
        m = re.fullmatch(r"events\.out\.tfevents\.(\d{10})\." + host + r"\.(\d+)\.(\d+)", files[0].name)
        assert m, files[0].name
        pids.add(m[2])
        first = next(iter(EventFileLoader(str(files[0])).Load()))
        assert first.file_version == "brain.Event:2"
        assert abs(first.wall_time - int(m[1])) < 5
    assert len(pids) == 1, "both runs were written by one process"


def test_scalars_read_back_with_their_steps(runs):
    acc = accumulate(runs["-direct"])
    assert [(e.step, e.value) for e in acc.Scalars("Loss")] == [(1, 0.5), (2, 0.25), (3, 0.125)]


def test_histogram_equals_the_one_pytorch_writes(runs):
    histo = accumulate(runs["-direct"]).Histograms("values")
    assert [e.step for e in histo] == [1]
    h = histo[0].histogram_value
    values = torch.arange(-500, 1500, dtype=torch.float32) / 100
    assert h.min == pytest.approx(-5.0)
    assert h.max == pytest.approx(float(values.max()))
    assert h.num == 2000
    assert h.sum == pytest.approx(float(values.double().sum()), rel=1e-9)
    assert h.sum_squares == pytest.approx(float((values.double() ** 2).sum()), rel=1e-9)
    # PyTorch's add_histogram with its default bins='tensorflow'.
    bins = TorchSummaryWriter(log_dir=str(runs["-direct"].parent / "torch")).default_bins
    theirs = torch_summary.histogram("values", values, bins).value[0].histo
    assert list(h.bucket_limit) == list(theirs.bucket_limit)
    assert list(h.bucket) == list(theirs.bucket)
    assert sum(h.bucket) == 2000


def decoded(event) -> np.ndarray:
    """The image of an image event, decoded as the PNG it must be."""
    assert event.encoded_image_string.startswith(b"\x89PNG\r\n\x1a\n")
    image = Image.open(io.BytesIO(event.encoded_image_string))
    assert image.format == "PNG"
    assert (image.width, image.height) == (event.width, event.height)
    return np.asarray(image)


def torch_grid(images: torch.Tensor, nrow: int = 8, padding: int = 2) -> torch.Tensor:
    """torchvision.utils.make_grid's layout (torchvision is not in the venv)."""
    if images.size(1) == 1:
        images = torch.cat((images, images, images), 1)
    n, c, h, w = images.shape
    xmaps = min(nrow, n)
    ymaps = -(-n // xmaps)
    grid = torch.zeros(c, (h + padding) * ymaps + padding, (w + padding) * xmaps + padding)
    for k in range(n):
        y, x = divmod(k, xmaps)
        grid[:, y * (h + padding) + padding:][:, :h, x * (w + padding) + padding:][:, :, :w] = images[k]
    return grid


def test_images_are_pngs_of_the_grid_pytorch_makes(runs):
    acc = accumulate(runs["-direct"])
    [grid] = acc.Images("grid")
    assert (grid.width, grid.height) == (8 * 30 + 2, 2 * 30 + 2)
    images = (torch.arange(10 * 28 * 28, dtype=torch.float32) % 256).view(10, 1, 28, 28) / 255
    theirs = torch_summary.image("grid", torch_grid(images), dataformats="CHW").value[0].image
    assert np.array_equal(decoded(grid), decoded(theirs))
    [u8] = acc.Images("u8")
    assert (u8.width, u8.height) == (7, 5)
    expected = np.arange(3 * 5 * 7, dtype=np.uint8).reshape(3, 5, 7).transpose(1, 2, 0)
    assert np.array_equal(decoded(u8), expected)


def test_run_manager_logs_what_deeplizards_run_manager_logs(runs):
    acc = accumulate(runs[RUN_COMMENT])
    tags = acc.Tags()
    assert sorted(tags["scalars"]) == ["Accuracy", "Loss", "Number Correct"]
    loss, correct, accuracy = (acc.Scalars(t) for t in ("Loss", "Number Correct", "Accuracy"))
    assert [e.step for e in loss] == [e.step for e in accuracy] == [1, 2]
    for c, a in zip(correct, accuracy):
        assert a.value == pytest.approx(c.value / 40)
    assert all(0 < e.value < 10 for e in loss)
    [images] = acc.Images("images")
    assert (images.width, images.height) == (242, 62)  # the first batch of 10, 8 to a row
    decoded(images)
    expected = sorted(list(PARAMETERS) + [f"{name}.grad" for name in PARAMETERS])
    assert sorted(tags["histograms"]) == expected
    for name, count in PARAMETERS.items():
        for tag in (name, f"{name}.grad"):
            events = acc.Histograms(tag)
            assert [e.step for e in events] == [1, 2], tag
            for e in events:
                h = e.histogram_value
                assert h.num == count and sum(h.bucket) == count, tag
                assert h.min <= h.sum / count <= h.max, tag
