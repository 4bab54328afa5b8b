"""Code runs offline (SPEC §13): once the service worker holds the page's files, a Run needs no
network: the sandbox starts from the runtime and the standard library the worker kept."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect
from service_worker import WORKER_ACTIVE

from tests.e2e.conftest import BOOT_TIMEOUT_MS, LiveServer, PageGuard
from tests.e2e.test_code_run import answer_with_code, finished, run_block
from tests.e2e.test_offline import OFFLINE_ERRORS


@pytest.fixture
def browser_context_args(browser_context_args: dict[str, Any]) -> dict[str, Any]:
    return {**browser_context_args, "service_workers": "allow"}


def test_a_block_runs_with_the_network_off(
    page: Page, guard: PageGuard, server: LiveServer
) -> None:
    guard.allow_console_error(OFFLINE_ERRORS)  # NOTE: the page's own API calls, offline
    page.goto(server.url + "/")
    page.wait_for_selector("html[data-ready]", state="attached", timeout=BOOT_TIMEOUT_MS)
    page.evaluate(WORKER_ACTIVE)
    page.reload()
    page.wait_for_selector("html[data-ready]", state="attached", timeout=BOOT_TIMEOUT_MS)
    assert page.evaluate("navigator.serviceWorker.controller !== null")
    answer = answer_with_code(
        page, server, "import csv, json, tabulate\nprint(json.dumps({'offline': True}))"
    )
    failed: list[str] = []
    page.on("requestfailed", lambda request: failed.append(request.url))
    page.context.set_offline(True)
    panel = finished(run_block(answer), "done")
    expect(panel.locator('[data-stream="stdout"]')).to_have_text('{"offline": true}\n')
    assert [url for url in failed if "/static/" in url] == []
