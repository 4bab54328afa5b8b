"""Draw the app's icons (web app manifest, ``static/manifest.webmanifest``) into ``static/icons/``.

One drawing, made here with Pillow at four times the size and scaled down (antialiased): the
accent colour of ``static/riacho.css`` with three white ripples, a stream (*riacho*). Written:

    icon-192.png, icon-512.png   purpose "any": a rounded square, transparent corners
    icon-maskable-512.png        purpose "maskable": full bleed, the ripples inside the central
                                 80 % circle every platform's mask keeps
    apple-touch-icon.png         180 px, full bleed (iOS rounds it itself)

Run by ``make setup``; rebuilt only when this file changed (its sha256 is kept beside them).
The icons are a build output, not in git.
"""

from __future__ import annotations

import hashlib
import math
import sys
from pathlib import Path

from PIL import Image, ImageDraw

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "static" / "icons"
STAMP = OUT / ".stamp"
ACCENT = (10, 102, 128, 255)  # --accent of static/riacho.css (light)
INK = (255, 255, 255, 255)
SUPERSAMPLE = 4
# name → (size in px, full bleed?, share of the side the ripples span)
ICONS = {
    "icon-192.png": (192, False, 0.62),
    "icon-512.png": (512, False, 0.62),
    "icon-maskable-512.png": (512, True, 0.5),
    "apple-touch-icon.png": (180, True, 0.58),
}


def ripples(draw: ImageDraw.ImageDraw, side: int, span: float) -> None:
    """Three parallel sine waves across the middle ``span`` of a ``side``-px square."""
    width = side * span
    left = (side - width) / 2
    stroke = round(side * 0.055)
    gap = side * 0.15
    for row in (-1, 0, 1):
        middle = side / 2 + row * gap
        points = [
            (
                left + width * step / 64,
                middle + side * 0.045 * math.sin(2 * math.pi * (step / 64) * 1.5 + row * 0.6),
            )
            for step in range(65)
        ]
        draw.line(points, fill=INK, width=stroke, joint="curve")
        for x, y in (points[0], points[-1]):  # NOTE: round caps (Pillow draws square ends)
            r = stroke / 2
            draw.ellipse((x - r, y - r, x + r, y + r), fill=INK)


def icon(size: int, full_bleed: bool, span: float) -> Image.Image:
    """One icon, drawn large and scaled down."""
    side = size * SUPERSAMPLE
    image = Image.new("RGBA", (side, side), (0, 0, 0, 0))
    draw = ImageDraw.Draw(image)
    if full_bleed:
        draw.rectangle((0, 0, side, side), fill=ACCENT)
    else:
        draw.rounded_rectangle((0, 0, side - 1, side - 1), radius=round(side * 0.22), fill=ACCENT)
    ripples(draw, side, span)
    return image.resize((size, size), Image.Resampling.LANCZOS)


def source_digest() -> str:
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()


def main() -> int:
    digest = source_digest()
    drawn = all((OUT / name).is_file() for name in ICONS)
    if drawn and STAMP.is_file() and STAMP.read_text(encoding="utf-8") == digest:
        print("icons: up to date")
        return 0
    OUT.mkdir(parents=True, exist_ok=True)
    for name, (size, full_bleed, span) in ICONS.items():
        icon(size, full_bleed, span).save(OUT / name, optimize=True)
    STAMP.write_text(digest, encoding="utf-8")
    print(f"icons: {', '.join(ICONS)} in {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
