"""A renderer crash fails the test with what Chromium and the machine said (issue 39).

The crash is made on purpose (Chromium's own ``chrome://crash`` page crashes its renderer):
the guard must record it as a problem whose report names the crash, Chromium's verdict on the
tab and the machine's state, instead of a bare "Target crashed".
"""

from __future__ import annotations

import contextlib
import os

import pytest
from chromium_features import CRASH_PRONE_FEATURES, DISABLE
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Page

from tests.e2e.conftest import PageGuard


def test_a_crashed_renderer_is_a_problem_reported_with_chromiums_verdict(page: Page) -> None:
    watch = PageGuard()
    watch.watch(page)
    page.set_content("<p>about to crash</p>")
    with page.expect_event("crash"), contextlib.suppress(PlaywrightError):
        page.goto("chrome://crash", timeout=10_000)
    assert len(watch.problems) == 1, watch.problems
    report = watch.problems[0]
    assert report.startswith("Chromium's renderer crashed")
    assert "Machine:" in report and "available, load" in report
    assert "Chromium's log" in report and "session-browser" in report, report
    # NOTE: chrome://crash dereferences a null pointer: the minidump names it
    assert "Minidump " in report and "SIGSEGV SEGV_MAPERR" in report and "touching 0x0" in report, (
        report
    )


@pytest.mark.skipif(
    os.environ.get("RIACHO_E2E_SAMPLERS") == "1", reason="the samplers are on to reproduce issue 39"
)
def test_the_browsers_keep_playwrights_disabled_features_and_turn_the_samplers_off(
    page: Page,
) -> None:
    """Chromium honours only the last --disable-features switch: it must hold Playwright's list
    and the sampling profilers whose stack walks crash a Pyodide page (issue 39)."""
    page.goto("chrome://version")
    command = page.locator("#command_line").inner_text().split()
    lists = [arg.removeprefix(DISABLE).split(",") for arg in command if arg.startswith(DISABLE)]
    assert len(lists) >= 2, command
    honoured = set(lists[-1])
    assert set(CRASH_PRONE_FEATURES) <= honoured, lists[-1]
    assert set(lists[0]) <= honoured, f"Playwright's own list is lost: {set(lists[0]) - honoured}"
