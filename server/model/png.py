"""A tiny PNG painter (zlib only) for the demo's image-generation tool."""

from __future__ import annotations

import base64
import hashlib
import struct
import zlib

Color = tuple[int, int, int]


def _chunk(kind: bytes, data: bytes) -> bytes:
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))


def encode_png(width: int, height: int, rows: list[bytes]) -> bytes:
    """An 8-bit RGB PNG from ``height`` rows of ``3 * width`` bytes."""
    raw = b"".join(b"\x00" + row for row in rows)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(raw, 9))
        + _chunk(b"IEND", b"")
    )


def _mix(a: Color, b: Color, t: float) -> Color:
    return (
        round(a[0] + (b[0] - a[0]) * t),
        round(a[1] + (b[1] - a[1]) * t),
        round(a[2] + (b[2] - a[2]) * t),
    )


def _palette(seed: str) -> tuple[Color, Color, Color, Color]:
    d = hashlib.sha256(seed.encode()).digest()
    return (
        (d[0], d[1], 160 + d[2] % 96),
        (d[3], 90 + d[4] % 120, d[5]),
        (230, 180 + d[6] % 70, 60 + d[7] % 80),
        (20 + d[8] % 60, 40 + d[9] % 60, 30 + d[10] % 50),
    )


def paint_landscape(seed: str, width: int = 240, height: int = 160) -> bytes:
    """A deterministic landscape (sky, sun, hills) that depends on ``seed``."""
    sky, horizon, sun, hill = _palette(seed)
    h = hashlib.sha256(seed.encode()).digest()
    sun_x, sun_y, radius = width * (0.2 + h[11] / 400), height * 0.3, height * 0.12
    rows = []
    for y in range(height):
        row = bytearray()
        for x in range(width):
            ridge = height * (0.62 + 0.12 * ((x * (h[12] % 7 + 3)) % width) / width)
            if y > ridge:
                color = _mix(hill, (10, 20, 10), (y - ridge) / height)
            elif (x - sun_x) ** 2 + (y - sun_y) ** 2 < radius**2:
                color = sun
            else:
                color = _mix(sky, horizon, y / height)
            row += bytes(color)
        rows.append(bytes(row))
    return encode_png(width, height, rows)


def png_data_url(data: bytes) -> str:
    """``data:image/png;base64,…``."""
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")
