"""The page is installable: its web app manifest (``static/manifest.webmanifest``), the icons
``tools/icons.py`` draws at set-up, and the links of ``index.html``. Chromium's own check of
the installed page is in ``tests/e2e/test_install.py``."""

from __future__ import annotations

import json
import re
import struct
import sys
from pathlib import Path
from urllib.parse import urljoin

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import icons  # noqa: E402 (tools/ is not a package)

MANIFEST = ROOT / "static" / "manifest.webmanifest"
PAGE_URL = "https://riacho.test/chat/"  # NOTE: the page in a folder: every URL is relative
MANIFEST_URL = urljoin(PAGE_URL, "static/manifest.webmanifest")


def manifest() -> dict[str, object]:
    return json.loads(MANIFEST.read_text(encoding="utf-8"))


def png_header(path: Path) -> tuple[int, int, int]:
    """A PNG's width, height and colour type (6: RGBA)."""
    data = path.read_bytes()[:26]
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path.name} is not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height, data[25]


def listed_icons() -> list[dict[str, str]]:
    items = manifest()["icons"]
    assert isinstance(items, list)
    return items


def icon_file(item: dict[str, str]) -> Path:
    url = urljoin(MANIFEST_URL, item["src"])
    return ROOT / url.removeprefix(PAGE_URL)


@pytest.fixture(scope="module", autouse=True)
def drawn() -> None:
    """The icons as ``make setup`` leaves them."""
    assert icons.main() == 0


def test_the_manifest_says_what_an_install_needs() -> None:
    found = manifest()
    assert (found["name"], found["short_name"], found["display"]) == (
        "Riacho",
        "Riacho",
        "standalone",
    )
    for key in ("start_url", "scope", "id"):
        assert urljoin(MANIFEST_URL, str(found[key])) == PAGE_URL, key
    for key in ("theme_color", "background_color"):
        assert re.fullmatch(r"#[0-9a-f]{6}", str(found[key])), key


def test_icons_at_192_and_512_one_maskable_each_the_size_it_says() -> None:
    sizes = {(item["sizes"], item["purpose"]) for item in listed_icons()}
    assert {("192x192", "any"), ("512x512", "any"), ("512x512", "maskable")} <= sizes
    for item in listed_icons():
        width, height, colour = png_header(icon_file(item))
        assert (f"{width}x{height}", colour, item["type"]) == (item["sizes"], 6, "image/png")


@pytest.mark.parametrize(
    ("purpose", "corner_alpha"),
    [
        pytest.param("any", 0, id="any-has-its-own-rounded-corners"),
        pytest.param("maskable", 255, id="maskable-fills-the-square-the-platform-masks"),
    ],
)
def test_the_corners_fit_the_purpose(purpose: str, corner_alpha: int) -> None:
    from PIL import Image

    for item in listed_icons():
        if item["purpose"] == purpose:
            with Image.open(icon_file(item)) as image:
                assert image.convert("RGBA").getpixel((0, 0))[3] == corner_alpha


def test_the_maskable_icons_drawing_stays_in_the_safe_circle() -> None:
    """Every white pixel lies within the central circle of 80 % of the side, which every
    platform's mask keeps."""
    from PIL import Image

    item = next(item for item in listed_icons() if item["purpose"] == "maskable")
    with Image.open(icon_file(item)) as image:
        rgba = image.convert("RGBA")
        side = rgba.width
        centre, radius = side / 2, side * 0.4
        far = max(
            ((x - centre) ** 2 + (y - centre) ** 2) ** 0.5
            for y in range(0, side, 2)
            for x in range(0, side, 2)
            if min(rgba.getpixel((x, y))[:3]) > 200
        )
    assert far < radius


def test_the_page_links_its_manifest_icons_and_colours_for_light_and_dark() -> None:
    page = (ROOT / "index.html").read_text(encoding="utf-8")
    assert '<link rel="manifest" href="./static/manifest.webmanifest">' in page
    for href in re.findall(r'<link rel="(?:icon|apple-touch-icon)" href="\./([^"]+)"', page):
        assert png_header(ROOT / href)[0] in (180, 192), href
    schemes = re.findall(
        r'<meta name="theme-color" content="#[0-9a-f]{6}" media="\(prefers-color-scheme: (\w+)\)">',
        page,
    )
    assert sorted(schemes) == ["dark", "light"]


def test_icons_are_drawn_again_only_when_their_drawing_changed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert icons.main() == 0
    assert "up to date" in capsys.readouterr().out
