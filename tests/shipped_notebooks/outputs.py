"""What the checks read in a run's outputs: images decoded far enough to be sure of them, the
numbers behind a plot, numbers in printed text, the device a run saw, and what the notebook says
of its data."""
from __future__ import annotations

import re
import struct
import xml.etree.ElementTree as ET
import zlib
from base64 import b64decode
from pathlib import Path

from .runs import Run


def png_size(b64: str) -> tuple[int, int]:
    """Decodes a PNG far enough to be sure it is one: chunk CRCs, IHDR, and the inflated IDAT size."""
    data = b64decode(b64)
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG signature"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        assert zlib.crc32(kind + body) == crc, f"bad CRC in PNG chunk {kind!r}"
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
        pos += 12 + length
    assert header is not None, "PNG without IHDR"
    width, height, depth, color, _, _, interlace = header
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[color]
    raw = zlib.decompress(idat)
    if interlace == 0:
        assert len(raw) == height * (1 + (width * channels * depth + 7) // 8), "PNG pixel data has the wrong size"
    return width, height


def assert_svg(text: str) -> None:
    root = ET.fromstring(text)
    assert root.tag.endswith("svg"), f"root element is {root.tag}, not svg"
    assert len(list(root.iter())) > 10, "an SVG with almost nothing drawn"


def assert_plot_is_an_image(run: Run, tag: str) -> None:
    pngs, svgs = run.bundles(tag, "image/png"), run.bundles(tag, "image/svg+xml")
    assert pngs or svgs, f"{run.name}: cell {tag!r} displayed no image"
    for p in pngs:
        w, h = png_size(p)
        assert w >= 200 and h >= 100, f"a {w}x{h} plot"
    for s in svgs:
        assert_svg(s if isinstance(s, str) else "".join(s))


def series_y(run: Run, tag: str) -> list[float]:
    """The y values of a loss plot, from its machine-readable part."""
    parts = [p for p in run.json(tag) if isinstance(p, dict) and "series" in p]
    assert parts, f"{run.name}: the plot in {tag!r} has no machine-readable part"
    series = parts[-1]["series"]
    assert series and series[0]["y"], "a loss plot with no points"
    return [float(v) for v in series[0]["y"]]


def numbers(pattern: str, text: str) -> list[float]:
    return [float(m) for m in re.findall(pattern, text)]


def cuda_present(run: Run) -> bool:
    """Whether this run saw a CUDA device, from the device card's JSON."""
    card = run.json("device-card")[-1]
    return bool(card.get("cuda_available"))


def says_real_or_stand_in(text: str, folder: Path) -> None:
    """The notebook's words about its data match the files: stand-ins carry a STANDIN.txt marker."""
    standin = (folder / "STANDIN.txt").exists()
    first = text.strip().splitlines()[0]
    assert first.startswith("stand-in " if standin else "real "), (first, standin)
