"""Draws kernelspec/logo-32x32.png and logo-64x64.png: a torch flame on a dark rounded tile.

Standard library only (zlib + struct), so it runs anywhere: python3 kernelspec/make_logos.py
"""
import math
import struct
import zlib
from pathlib import Path

TILE = (0x1F, 0x29, 0x37)      # slate
OUTER = (0xEE, 0x4C, 0x2C)     # PyTorch orange-red
INNER = (0xFF, 0xB3, 0x47)     # flame core
RING = (0xDE, 0xA5, 0x84)      # Rust's copper


def teardrop(x, y, cx, cy, r, height):
    """Inside a flame: a disc of radius r at (cx, cy) whose top is drawn up to a point."""
    if y >= cy:
        return (x - cx) ** 2 + (y - cy) ** 2 <= r * r
    tip = cy - height
    if y < tip:
        return False
    # Width shrinks from r at cy to 0 at the tip, with a slight curl.
    t = (cy - y) / height
    half = r * (1 - t) ** 0.8
    shift = 0.12 * r * math.sin(t * math.pi)
    return abs(x - cx - shift) <= half


def sample(u, v):
    """Colour (with alpha) at normalised (u, v) in [0, 1]^2."""
    # Rounded tile.
    m, rad = 0.04, 0.2
    qx = max(abs(u - 0.5) - (0.5 - m - rad), 0)
    qy = max(abs(v - 0.5) - (0.5 - m - rad), 0)
    if math.hypot(qx, qy) > rad:
        return (0, 0, 0, 0)
    # Copper ring (a nod to Rust's gear).
    d = math.hypot(u - 0.5, v - 0.56)
    if 0.30 <= d <= 0.345 and v > 0.40:
        return RING + (255,)
    if teardrop(u, v, 0.5, 0.64, 0.2, 0.5):
        if teardrop(u, v, 0.5, 0.70, 0.1, 0.3):
            return INNER + (255,)
        return OUTER + (255,)
    return TILE + (255,)


def render(size, supersample=4):
    rows = []
    n = supersample
    for py in range(size):
        row = bytearray([0])  # filter: none
        for px in range(size):
            acc = [0, 0, 0, 0]
            for sy in range(n):
                for sx in range(n):
                    c = sample((px + (sx + 0.5) / n) / size, (py + (sy + 0.5) / n) / size)
                    a = c[3]
                    for k in range(3):
                        acc[k] += c[k] * a
                    acc[3] += a
            alpha = acc[3] / (n * n)
            if acc[3]:
                rgb = [round(acc[k] / acc[3]) for k in range(3)]
            else:
                rgb = [0, 0, 0]
            row += bytes(rgb + [round(alpha)])
        rows.append(bytes(row))
    return png(size, size, b"".join(rows))


def png(width, height, raw):
    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)  # 8-bit RGBA
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


if __name__ == "__main__":
    here = Path(__file__).resolve().parent
    for size in (32, 64):
        (here / f"logo-{size}x{size}.png").write_bytes(render(size))
