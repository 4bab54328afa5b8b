"""What the user sees when things are slow or go wrong, in real Chromium: waiting for a slow
first word, errors that count down and offer Retry, a drop while offline, a cut answer's
markdown, Copy's feedback, images pasted or dropped, files refused at Send (issue 25)."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.e2e import scenarios
from tests.e2e.conftest import BOOT_TIMEOUT_MS, LiveServer
from tests.e2e.scenarios import send, text

STREAM_MS = 20_000


@pytest.fixture
def browser_context_args(browser_context_args: dict[str, Any]) -> dict[str, Any]:
    return {**browser_context_args, "permissions": ["clipboard-read", "clipboard-write"]}


def reload(page: Page) -> None:
    page.reload()
    expect(page.locator("html[data-ready]")).to_be_attached(timeout=BOOT_TIMEOUT_MS)


def test_copy_says_copied_on_the_button_and_aloud_then_returns_to_its_icon(riacho: Page) -> None:
    answer = send(riacho, "Something to copy")
    expect(answer).to_have_attribute("data-status", "completed", timeout=STREAM_MS)
    copy = answer.locator("[data-action=copy]")

    copy.click()

    expect(copy).to_have_text("Copied")
    expect(copy).to_have_attribute("aria-label", "Copied")
    expect(riacho.locator("[data-announce]")).to_have_text("Copied the answer")
    copied = str(riacho.evaluate("navigator.clipboard.readText()"))
    assert "Something to copy" in copied
    expect(copy).to_have_text("", timeout=5_000)
    expect(copy).to_have_attribute("aria-label", "Copy answer")


def test_a_stopped_answer_shows_its_markdown_closed_not_its_markers(
    riacho: Page, server: LiveServer
) -> None:
    steps = [text("Intro.\n\nIt was **very impor"), {"hold": True}]
    seen = scenarios.on_next_stream(riacho, server, lambda _request: steps)
    answer = send(riacho, "Tell me something important")
    expect(answer.locator(".message-text strong")).to_have_text("very impor", timeout=STREAM_MS)

    riacho.locator("[data-action=stop]").click()

    expect(answer).to_have_attribute("data-status", "cancelled", timeout=STREAM_MS)
    expect(answer.locator(".message-text strong")).to_have_text("very impor")
    expect(answer.locator(".message-text")).not_to_contain_text("**")
    reload(riacho)
    again = scenarios.answer_of(riacho, seen[0].run_id)
    expect(again).to_have_attribute("data-status", "cancelled", timeout=STREAM_MS)
    expect(again.locator(".message-text strong")).to_have_text("very impor")
    expect(again.locator(".message-text")).not_to_contain_text("**")
