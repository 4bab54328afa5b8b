"""A full disk in a real browser: the send is refused in words, and works once space returns.

The server's database is on a small tmpfs of its own (root only: skipped elsewhere); the test
fills it to the last byte after the page booted, sends, reads the page's words and countdown,
frees the space, presses Retry and gets the answer. Nothing sent before is lost.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import BOOT_TIMEOUT_MS, CLUSTER, LiveServer, PageGuard, serve
from tests.e2e.scenarios import answer_of, send
from tests.tmpfs import fill, mounted_tmpfs

STREAM_MS = 30_000

pytestmark = pytest.mark.skipif(
    CLUSTER, reason="about a SQLite file on a full disk; the cluster's database is PostgreSQL"
)


@pytest.fixture(scope="module")
def tmpfs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with mounted_tmpfs(tmp_path_factory.mktemp("tmpfs")) as mount:
        yield mount


@pytest.fixture(scope="module")
def disk_server(tmpfs: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    workdir = tmp_path_factory.mktemp("storage-full")
    arguments = ["server", "--db", str(tmpfs / "riacho.db"), "--demo-token-ms", "2"]
    with serve(workdir, arguments) as server:
        yield server


def test_a_full_disk_says_so_and_retry_works_once_space_returns(
    page: Page, guard: PageGuard, disk_server: LiveServer, tmpfs: Path
) -> None:
    guard.allow_console_error(r"status of 503")
    page.goto(disk_server.url + "/")
    page.wait_for_selector("html[data-ready]", state="attached", timeout=BOOT_TIMEOUT_MS)
    first = send(page, "Before the disk filled up")
    expect(first).to_have_attribute("data-status", "completed", timeout=STREAM_MS)

    filler = fill(tmpfs)
    send(page, "x" * 100_000)  # NOTE: more than a page of the file: it needs new space
    banner = page.locator("[data-error-code=storage_unavailable]")
    expect(banner).to_contain_text("cannot save right now", timeout=STREAM_MS)
    expect(banner.locator(".retry-in")).to_have_text(re.compile(r"^Try again in \d+ s\.$"))

    filler.unlink()
    retry = banner.locator("[data-action=retry]")
    expect(retry).to_be_enabled(timeout=20_000)
    with page.expect_request("**/api/respond/stream") as again:
        retry.click()
    answer = answer_of(page, again.value.post_data_json["runId"])
    expect(answer).to_have_attribute("data-status", "completed", timeout=STREAM_MS)
    expect(first).to_have_attribute("data-status", "completed")
