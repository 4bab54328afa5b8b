"""What the user sees when things are slow or go wrong, in real Chromium: waiting for a slow
first word, errors that count down and offer Retry, a drop while offline, a cut answer's
markdown, Copy's feedback, images pasted or dropped, files refused at Send (issue 25)."""

from __future__ import annotations

import base64
import re
from typing import Any

import pytest
from playwright.sync_api import BrowserContext, Page, expect

from tests.e2e import scenarios
from tests.e2e.conftest import BOOT_TIMEOUT_MS, LiveServer, PageGuard
from tests.e2e.scenarios import done, send, sleep, text

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
    steps = [text("Intro.\n\nIt was **very impor"), sleep(20_000), done()]
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


PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
FILE_EVENT = """([kind, name, bytes]) => {
  const data = new DataTransfer();
  const how = {bubbles: true, cancelable: true};
  data.items.add(new File([new Uint8Array(bytes)], name, {type: 'image/png'}));
  const box = document.querySelector('textarea[name=prompt]');
  if (kind === 'paste') {
    return box.dispatchEvent(new ClipboardEvent('paste', {clipboardData: data, ...how}));
  }
  const target = document.querySelector('#messages');
  target.dispatchEvent(new DragEvent('dragover', {dataTransfer: data, ...how}));
  const shown = document.querySelector('#composer').hasAttribute('data-dropping');
  const dropped = target.dispatchEvent(new DragEvent('drop', {dataTransfer: data, ...how}));
  return [shown, dropped];
}"""


def test_an_image_pasted_into_the_box_or_dropped_on_the_page_is_attached_and_sent(
    riacho: Page,
) -> None:
    not_handled = riacho.evaluate(FILE_EVENT, ["paste", "pasted.png", list(PNG)])
    assert not_handled is False, "the page takes the pasted file (the box does not)"
    shown, not_dropped = riacho.evaluate(FILE_EVENT, ["drop", "dropped.png", list(PNG)])
    assert shown is True, "the composer shows where a dragged file goes"
    assert not_dropped is False, "the browser does not open the file in place of the page"
    chips = riacho.locator("#attachment-list [data-file-state=ready]")
    expect(chips).to_have_count(2)
    expect(chips.locator(".chip-name")).to_have_text(["pasted.png", "dropped.png"])
    expect(riacho.locator("#composer")).not_to_have_attribute("data-dropping", "")

    answer = send(riacho, "What are these two pictures?")

    expect(answer).to_have_attribute("data-status", "completed", timeout=STREAM_MS)
    sent = riacho.locator("[data-role=user]").filter(has_text="What are these two pictures?")
    expect(sent.locator("img.chip-preview")).to_have_count(2)


def test_send_with_a_refused_file_sends_nothing_and_says_which_file_and_why(riacho: Page) -> None:
    requests: list[str] = []
    riacho.on("request", lambda r: requests.append(r.url) if "respond/stream" in r.url else None)
    files = riacho.locator("input[type=file][name=attachments]")
    big = {"name": "huge.txt", "mimeType": "text/plain", "buffer": b"x" * (5 * 1024 * 1024 + 1)}
    files.set_input_files([big])
    refused = riacho.locator("#attachment-list [data-file-state=error]")
    expect(refused.locator(".chip-error")).to_have_text("5 MB max")
    prompt = riacho.locator("textarea[name=prompt]")
    prompt.fill("Summarise the attached file")

    riacho.locator("[data-action=send]").click()

    banner = riacho.locator("[data-error-code=attachment_refused]")
    expect(banner).to_be_visible()
    expect(banner).to_contain_text("huge.txt: 5 MB max")
    expect(prompt).to_have_value("Summarise the attached file")
    expect(refused.locator("[data-action=remove-attachment]")).to_be_focused()
    assert requests == [], "nothing was sent"
    expect(riacho.locator("[data-role=user]")).to_have_count(0)

    refused.locator("[data-action=remove-attachment]").click()
    answer = send(riacho, "Summarise nothing then")
    expect(answer).to_have_attribute("data-status", "completed", timeout=STREAM_MS)


def test_a_drop_while_offline_says_so_and_resumes_by_itself_when_the_connection_returns(
    riacho: Page, server: LiveServer, context: BrowserContext
) -> None:
    steps = [text("One. "), sleep(2000), {"detach": True}, sleep(300), text("Two."), done()]
    seen = scenarios.on_next_stream(riacho, server, lambda _request: steps)
    answer = send(riacho, "Cut me off on a train")
    expect(answer.locator(".message-text")).to_contain_text("One.", timeout=STREAM_MS)

    context.set_offline(True)

    expect(answer).to_have_attribute("data-status", "interrupted", timeout=STREAM_MS)
    expect(answer.locator(".status-text")).to_contain_text(
        "You are offline. The answer resumes when the connection returns."
    )
    context.set_offline(False)
    expect(answer).to_have_attribute("data-status", "completed", timeout=STREAM_MS)
    expect(answer.locator(".message-text")).to_have_text("One. Two.")
    assert answer.get_attribute("data-run-id") == seen[0].run_id


def test_resume_is_no_longer_offered_once_the_server_has_nothing_more(
    riacho: Page, server: LiveServer
) -> None:
    steps = [text("Part one, "), text("part two"), {"close": "clean"}]
    scenarios.on_next_stream(riacho, server, lambda _request: steps)
    answer = send(riacho, "Cut me short for good")
    expect(answer).to_have_attribute("data-status", "interrupted", timeout=STREAM_MS)
    resume = answer.locator("[data-action=resume]")

    resume.click()

    expect(answer.locator(".status-text")).to_contain_text(
        "Nothing more of this answer exists on the server; regenerate it.", timeout=STREAM_MS
    )
    expect(resume).to_have_count(0)
    expect(answer).to_have_attribute("data-status", "interrupted")
    expect(answer.locator(".message-text")).to_have_text("Part one, part two")
    expect(answer.locator("[data-warning=partial]")).to_be_visible()
    expect(answer.locator("[data-action=regenerate]")).to_be_visible()


def test_try_again_in_counts_down_then_retry_sends_the_prompt_again(
    riacho: Page, server: LiveServer, guard: PageGuard
) -> None:
    guard.allow_console_error(r"the server responded with a status of 503")
    unavailable = {"code": "model_unavailable", "message": "The model is resting."}
    first = {"status": 503, "json": {"error": unavailable}, "headers": {"Retry-After": "4"}}
    scenarios.on_next_stream(riacho, server, lambda _request: [first])
    send(riacho, "Are you awake?")
    banner = riacho.locator("[data-error-code=model_unavailable]")
    retry = banner.locator("[data-action=retry]")
    counting = banner.locator(".retry-in")
    expect(counting).to_have_text(re.compile(r"^Try again in [234] s\.$"), timeout=STREAM_MS)
    expect(retry).to_be_disabled()

    expect(counting).to_have_text("Try again in 1 s.")
    expect(retry).to_be_enabled(timeout=3_000)
    expect(counting).to_have_text("")
    with riacho.expect_request("**/api/respond/stream") as again:
        retry.click()

    answer = scenarios.answer_of(riacho, again.value.post_data_json["runId"])
    expect(answer).to_have_attribute("data-status", "completed", timeout=STREAM_MS)
    assert again.value.post_data_json["prompt"] == "Are you awake?"
    expect(banner).to_have_count(0)


def test_an_answer_the_page_gave_up_waiting_for_reads_the_same_after_a_reload(
    riacho: Page, server: LiveServer
) -> None:
    riacho.goto(server.url + "/?firstEventTimeoutMs=1500")
    expect(riacho.locator("html[data-ready]")).to_be_attached(timeout=BOOT_TIMEOUT_MS)
    steps = [sleep(10_000), text("Too late"), done()]
    seen = scenarios.on_next_stream(riacho, server, lambda _request: steps)
    answer = send(riacho, "Are you there?")
    expect(answer).to_have_attribute("data-status", "failed", timeout=STREAM_MS)
    said = answer.locator(".status-line").inner_text()
    expect(answer.locator("[data-error-code=first_event_timeout]")).to_be_visible()
    scenarios.wait_for_record(server, seen[0].run_id, lambda r: r["status"] == "cancelled")

    reload(riacho)

    again = scenarios.answer_of(riacho, seen[0].run_id)
    expect(again).to_have_attribute("data-status", "failed", timeout=STREAM_MS)
    expect(again.locator("[data-error-code=first_event_timeout]")).to_be_visible()
    assert again.locator(".status-line").inner_text() == said
