"""A renderer crash fails the test with what Chromium and the machine said (issue 39).

The crash is made on purpose (Chromium's own ``chrome://crash`` page crashes its renderer):
the guard must record it as a problem whose report names the crash, Chromium's verdict on the
tab and the machine's state, instead of a bare "Target crashed".
"""

from __future__ import annotations

import contextlib

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
