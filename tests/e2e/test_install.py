"""Installable (SPEC §11): Chromium's own installability check of the booted page finds no
error, and its manifest, with every icon it lists, loads from the server.

NOTE: in a browser profile of its own (``installed_profile``): Chromium never offers an install
from an incognito-like context such as Playwright's default ones ("in-incognito"). The same
check of a ``make dist`` bundle on a plain static host is in test_static_deploy.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import BrowserContext, Page

from tests.e2e.conftest import BOOT_TIMEOUT_MS, LiveServer, installability_errors


@pytest.fixture
def booted(installed_profile: BrowserContext, server: LiveServer) -> Page:
    page = installed_profile.new_page()
    page.goto(server.url + "/")
    page.wait_for_selector("html[data-ready]", state="attached", timeout=BOOT_TIMEOUT_MS)
    return page


def test_chromium_finds_the_page_installable(booted: Page) -> None:
    assert installability_errors(booted) == []


def test_the_manifest_and_each_icon_it_lists_load(booted: Page) -> None:
    cdp = booted.context.new_cdp_session(booted)
    manifest: dict[str, Any] = cdp.send("Page.getAppManifest")
    assert manifest["url"].endswith("/static/manifest.webmanifest")
    assert manifest["errors"] == [], manifest["errors"]
    icons = booted.evaluate(
        """async (url) => {
            const manifest = await (await fetch(url)).json();
            return Promise.all(manifest.icons.map(async (icon) => {
                const response = await fetch(new URL(icon.src, url));
                const bitmap = await createImageBitmap(await response.blob());
                return [icon.sizes, response.status, `${bitmap.width}x${bitmap.height}`];
            }));
        }""",
        manifest["url"],
    )
    assert len(icons) == 3
    assert all(status == 200 and drawn == sizes for sizes, status, drawn in icons), icons
