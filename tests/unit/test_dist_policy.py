"""``make dist`` writes the reference server's Content-Security-Policy into the page."""

from __future__ import annotations

import re
import sys
from html import unescape
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import dist  # noqa: E402

from server.http.security import CONTENT_SECURITY_POLICY, content_security_policy  # noqa: E402


def _page_policy(folder: Path) -> str:
    html = (folder / "index.html").read_text(encoding="utf-8")
    found = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', html)
    assert found is not None, "the policy is in the page"
    assert html.index(found.group(0)) < html.index("<script"), "before anything loads"
    return unescape(found.group(1))


@pytest.fixture
def page_folder(tmp_path: Path) -> Path:
    (tmp_path / "index.html").write_text(
        (ROOT / "index.html").read_text(encoding="utf-8"), encoding="utf-8"
    )
    return tmp_path


def test_the_page_carries_the_servers_policy_with_the_api_origin(page_folder: Path) -> None:
    dist.write_policy(page_folder, "https://api.example.org/riacho/")
    policy = _page_policy(page_folder)
    assert "connect-src 'self' https://api.example.org;" in policy
    assert "img-src 'self' data: blob: https://api.example.org;" in policy
    assert "frame-ancestors" not in policy, "a meta cannot carry it (and Chromium says so)"
    header = (page_folder / dist.CSP_FILE).read_text(encoding="utf-8").strip()
    assert header == content_security_policy("https://api.example.org")
    assert header.endswith("frame-ancestors 'none'")


def test_a_same_origin_bundle_gets_exactly_the_servers_policy(page_folder: Path) -> None:
    dist.write_policy(page_folder, "")
    assert _page_policy(page_folder) + "; frame-ancestors 'none'" == CONTENT_SECURITY_POLICY


@pytest.mark.parametrize("base", ["api.example.org", "ftp://api.example.org", "https://"])
def test_a_base_that_is_not_an_origin_stops_the_build(base: str) -> None:
    with pytest.raises(SystemExit):
        dist.api_origin(base)
