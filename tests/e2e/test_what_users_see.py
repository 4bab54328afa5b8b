"""What users see, round 3 (issue 37): each defect a user met, replayed in real Chromium.

Each test waits for the element of its own action (found by the run id the page sent).
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from playwright.sync_api import Locator, Page, expect

from tests.e2e import scenarios
from tests.e2e.conftest import LiveServer
from tests.e2e.scenarios import STREAM_ROUTE, StreamRequest, answer_of, send

STREAM_MS = 20_000
SHOTS = os.environ.get("RIACHO_UI3_SHOTS", "")


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args: dict[str, Any]) -> dict[str, Any]:
    return {**browser_context_args, "permissions": ["clipboard-read", "clipboard-write"]}


def hold(_: StreamRequest) -> list[scenarios.Step]:
    """An answer that stalls before its first event, until Stop (a sleep, not ``hold``: a
    held scenario ends at the client's disconnect, before the cancel arrives)."""
    return [scenarios.sleep(60_000)]


def completed(answer: Locator) -> None:
    expect(answer).to_have_attribute("data-status", "completed", timeout=STREAM_MS)


def sent_body(page: Page, prompt: str) -> tuple[dict[str, Any], str]:
    """Send ``prompt``; the request body the page sent, and its run id."""
    with page.expect_request(STREAM_ROUTE) as sent:
        page.locator("textarea[name=prompt]").fill(prompt)
        page.locator("[data-action=send]").click()
    body: dict[str, Any] = json.loads(sent.value.post_data or "{}")
    return body, str(body["runId"])


def test_follow_up_after_stop_before_any_word_follows_that_turn(
    riacho: Page, server: LiveServer
) -> None:
    scenarios.on_next_stream(riacho, server, hold)
    stalled = send(riacho, "An answer that never starts")
    expect(stalled).to_have_attribute("data-status", "connecting", timeout=STREAM_MS)
    riacho.locator("[data-action=stop]").click()
    expect(stalled.locator("[data-cancel=confirmed]")).to_have_text("Stopped", timeout=STREAM_MS)
    stalled_run = stalled.get_attribute("data-run-id")

    body, run_id = sent_body(riacho, "A follow-up")
    follow_up = answer_of(riacho, run_id)
    expect(follow_up).to_have_attribute("data-status", "completed", timeout=STREAM_MS)
    assert body.get("afterRunId") == stalled_run
    assert body.get("atTop") is not True
    user = riacho.locator("[data-role=user]")
    expect(user).to_have_count(2)
    expect(user.first).to_contain_text("An answer that never starts")
    expect(riacho.locator("[data-action=branch-prev]:enabled")).to_have_count(0)

    riacho.reload()
    riacho.wait_for_selector("html[data-ready]", state="attached")
    expect(answer_of(riacho, run_id)).to_have_attribute("data-status", "completed")
    expect(riacho.locator("[data-role=user]")).to_have_count(2)


def test_regenerate_and_edit_after_a_reload_go_with_the_options_shown(riacho: Page) -> None:
    for toggle in ("thinking", "tools"):
        riacho.locator(f"[data-action={toggle}]").click()
        expect(riacho.locator(f"[data-action={toggle}]")).to_have_attribute("aria-pressed", "true")
    body, run_id = sent_body(riacho, "Options that must stay")
    completed(answer_of(riacho, run_id))
    model = body["modelId"]
    assert model

    riacho.reload()
    riacho.wait_for_selector("html[data-ready]", state="attached")
    for toggle in ("thinking", "tools"):
        expect(riacho.locator(f"[data-action={toggle}]")).to_have_attribute("aria-pressed", "true")
    with riacho.expect_request(STREAM_ROUTE) as regenerated:
        answer_of(riacho, run_id).locator("[data-action=regenerate]").click()
    again: dict[str, Any] = json.loads(regenerated.value.post_data or "{}")
    expect(answer_of(riacho, again["runId"])).to_have_attribute(
        "data-status", "completed", timeout=STREAM_MS
    )
    assert (again["thinkingEnabled"], again["toolIntent"], again["modelId"]) == (True, True, model)

    riacho.locator("[data-role=user] [data-action=edit]").click()
    riacho.locator("[data-role=user] form textarea").fill("Options that must stay, edited")
    with riacho.expect_request(STREAM_ROUTE) as edited:
        riacho.locator("[data-role=user] form textarea").press("Enter")
    changed: dict[str, Any] = json.loads(edited.value.post_data or "{}")
    expect(answer_of(riacho, changed["runId"])).to_have_attribute(
        "data-status", "completed", timeout=STREAM_MS
    )
    assert (changed["thinkingEnabled"], changed["toolIntent"], changed["modelId"]) == (
        True,
        True,
        model,
    )


def test_a_stopped_image_never_says_generating_after_a_reload_either(
    riacho: Page, server: LiveServer
) -> None:
    started = {"type": "image_generation_started", "imageId": "img_1", "prompt": "a red fox"}
    scenarios.on_next_stream(
        riacho, server, lambda _: [{"event": started}, scenarios.sleep(60_000)]
    )
    answer = send(riacho, "Draw a fox")
    image = answer.locator('[data-image-id="img_1"]')
    expect(image).to_have_attribute("data-image-status", "pending", timeout=STREAM_MS)
    riacho.locator("[data-action=stop]").click()
    expect(answer).to_have_attribute("data-status", "cancelled", timeout=STREAM_MS)
    expect(image).to_have_attribute("data-image-status", "unfinished")
    expect(image).not_to_contain_text("Generating image")
    expect(image).to_contain_text("Image not finished")

    run_id = answer.get_attribute("data-run-id")
    riacho.reload()
    riacho.wait_for_selector("html[data-ready]", state="attached")
    again = answer_of(riacho, str(run_id)).locator('[data-image-id="img_1"]')
    expect(again).to_have_attribute("data-image-status", "unfinished")
    expect(again).not_to_contain_text("Generating image")


def test_the_status_line_belongs_to_its_run_and_chat(riacho: Page, server: LiveServer) -> None:
    status_line = riacho.locator("[data-announce]")
    completed(send(riacho, "A first answer"))
    expect(status_line).to_have_text("Answer complete")

    scenarios.on_next_stream(riacho, server, hold)
    streaming = send(riacho, "A second answer that takes its time")
    expect(streaming).to_have_attribute("data-status", "connecting")
    expect(status_line).to_have_text("")
    riacho.locator("[data-action=stop]").click()
    expect(streaming).to_have_attribute("data-status", "cancelled", timeout=STREAM_MS)
    expect(status_line).to_have_text("Stopped")

    riacho.locator("[data-action=delete-chat]").click()
    riacho.locator("[data-action=confirm-delete]").click()
    expect(riacho.locator("[data-chat-id]")).to_have_count(0)
    expect(status_line).to_have_text("")

    completed(send(riacho, "An answer in a new chat"))
    expect(status_line).to_have_text("Answer complete")
    riacho.locator("[data-action=new-chat]").click()
    expect(status_line).to_have_text("")


FALLBACK = {
    "type": "fallback_notice",
    "reason": "model_changed",
    "message": "Another model answers",
}


def test_the_model_change_notice_stays_in_its_chat_clear_of_the_composer_and_leaves(
    riacho: Page, server: LiveServer
) -> None:
    riacho.set_viewport_size({"width": 390, "height": 844})
    riacho.goto(riacho.url.split("?")[0] + "?noticeMs=3000")
    riacho.wait_for_selector("html[data-ready]", state="attached")
    scenarios.on_next_stream(
        riacho, server, lambda _: [{"event": FALLBACK}, scenarios.text("Hi"), scenarios.done()]
    )
    completed(send(riacho, "Switch models"))
    toast = riacho.locator("[data-toast=fallback]")
    expect(toast).to_be_visible()
    box, composer = toast.bounding_box(), riacho.locator("#composer").bounding_box()
    assert box is not None and composer is not None
    assert box["y"] + box["height"] <= composer["y"], "the notice covers the composer"

    riacho.locator("[data-action=open-drawer]").click()
    riacho.locator("[data-action=new-chat]").click()
    expect(toast).to_have_count(0)
    riacho.locator("[data-action=open-drawer]").click()
    riacho.locator("[data-chat-id]").first.click()
    expect(riacho.locator("[data-role=user]")).to_have_count(1)
    expect(toast).to_have_count(0, timeout=STREAM_MS)


def test_developer_words_stay_behind_the_answers_menu(riacho: Page, server: LiveServer) -> None:
    transition = {"type": "continuation_transition", "mode": "replay", "recovered": True}
    scenarios.on_next_stream(
        riacho,
        server,
        lambda _: [
            {"event": transition},
            scenarios.text("Half an answer"),
            scenarios.error("boom internal", "provider_error"),
        ],
    )
    failed = send(riacho, "Break halfway")
    expect(failed).to_have_attribute("data-status", "failed", timeout=STREAM_MS)
    expect(failed.locator("[data-error-code=provider_error]")).to_be_visible()
    assert "provider_error" not in failed.locator(".message-foot").inner_text()
    marker = failed.locator("[data-part=continuation]")
    expect(marker).not_to_contain_text("Continuation (")
    expect(marker).not_to_contain_text("recovered")
    trace = failed.locator("[data-run-trace]")
    expect(trace).to_be_hidden()
    failed.locator("[data-part=answer-menu] > summary").click()
    expect(failed.locator(".answer-facts")).to_be_visible()
    expect(trace).to_be_hidden()
    failed.locator(".bug-report > summary").click()
    expect(trace).to_contain_text("error=provider_error")

    scenarios.on_next_stream(riacho, server, hold)
    empty = send(riacho, "Stop me before any word")
    expect(empty).to_have_attribute("data-status", "connecting")
    riacho.locator("[data-action=stop]").click()
    expect(empty).to_have_attribute("data-status", "cancelled", timeout=STREAM_MS)
    expect(empty.locator("[data-warning=partial]")).to_have_count(0)
    expect(empty).not_to_contain_text("Partial answer")


def test_a_stopped_answer_offers_copy_partial_in_words(riacho: Page, server: LiveServer) -> None:
    scenarios.on_next_stream(
        riacho, server, lambda _: [scenarios.text("Half of it"), scenarios.sleep(60_000)]
    )
    answer = send(riacho, "Start, then stop")
    expect(answer.locator(".message-text")).to_have_text("Half of it", timeout=STREAM_MS)
    riacho.locator("[data-action=stop]").click()
    expect(answer).to_have_attribute("data-status", "cancelled", timeout=STREAM_MS)
    expect(answer.locator("[data-action=copy]")).to_be_disabled()
    copy_partial = answer.locator("[data-action=copy-partial]")
    expect(copy_partial).to_be_enabled()
    expect(copy_partial).to_contain_text("Copy partial answer")
    copy_partial.click()
    expect(riacho.locator("[data-announce]")).to_have_text("Copied the partial answer")
    assert riacho.evaluate("navigator.clipboard.readText()") == "Half of it"

    done = send(riacho, "A whole answer")
    completed(done)
    expect(done.locator("[data-action=copy-partial]")).to_have_count(0)


def _luminance(css: str) -> float:
    """WCAG relative luminance of an ``rgb(r, g, b)`` / ``rgba(...)`` computed colour."""
    values = [float(v) for v in css[css.index("(") + 1 : css.index(")")].split(",")[:3]]

    def channel(value: float) -> float:
        c = value / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(v) for v in values)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast_under_pointer(button: Locator) -> float:
    """The contrast ratio of a button's words with its background, while hovered."""
    button.hover()
    colours = button.evaluate(
        "b => { const s = getComputedStyle(b); return [s.color, s.backgroundColor]; }"
    )
    first, second = sorted((_luminance(c) for c in colours), reverse=True)
    return (first + 0.05) / (second + 0.05)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_a_pressed_toggle_and_a_danger_button_stay_readable_under_the_pointer(
    riacho: Page, scheme: str
) -> None:
    riacho.emulate_media(color_scheme=scheme)
    riacho.add_style_tag(content="* { transition: none !important; }")
    thinking = riacho.locator("[data-action=thinking]")
    thinking.click()
    expect(thinking).to_have_attribute("aria-pressed", "true")
    assert contrast_under_pointer(thinking) >= 4.5

    completed(send(riacho, "A chat to delete"))
    riacho.locator("[data-action=delete-chat]").click()
    assert contrast_under_pointer(riacho.locator("[data-action=confirm-delete]")) >= 4.5


CONTEXT_FULL = {
    "type": "context_info",
    "usedTokens": 880,
    "maxTokens": 900,
    "ratio": 0.978,
    "severity": "critical",
    "compactionRecommended": True,
}


def centre_hit(page: Page, selector: str) -> str:
    """What a tap at the centre of the element ``selector`` lands on: ``"itself"``, or the
    start of the element covering it (one task in the page: no re-render in between)."""
    return str(
        page.evaluate(
            """selector => { const el = document.querySelector(selector);
              const r = el.getBoundingClientRect();
              const hit = document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2);
              if (hit !== null && hit.closest(selector) === el) return "itself";
              return hit === null ? "nothing" : hit.outerHTML.slice(0, 120); }""",
            selector,
        )
    )


def test_the_phone_header_leaves_delete_tappable_and_the_title_room(
    riacho: Page, server: LiveServer
) -> None:
    riacho.set_viewport_size({"width": 390, "height": 844})
    scenarios.on_next_stream(
        riacho,
        server,
        lambda _: [{"event": CONTEXT_FULL}, scenarios.text("Noted."), scenarios.done()],
    )
    completed(send(riacho, "A rather long title about planning a trip along the coast of Brazil"))
    expect(riacho.locator("[data-context-ring]")).to_be_visible()
    expect(riacho.locator("[data-callout=compaction]")).to_be_visible()
    for action in ("delete-chat", "rename-chat", "open-drawer"):
        expect(riacho.locator(f"[data-action={action}]")).to_be_visible()
        assert centre_hit(riacho, f"[data-action={action}]") == "itself", action
    title = riacho.locator("h1.chat-title").bounding_box()
    assert title is not None and title["width"] >= 80, f"the title has no room: {title}"
    for hook in ("[data-context-ring]", "[data-callout=compaction]"):
        box = riacho.locator(hook).bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, hook
    if SHOTS:
        riacho.screenshot(path=SHOTS + "/phone-header.png")


@pytest.mark.parametrize("width", [1280, 390])
def test_new_chat_and_search_stay_in_view_with_many_chats(riacho: Page, width: int) -> None:
    riacho.evaluate(
        """async () => { for (let n = 0; n < 60; n++) {
             await fetch('/api/chats', {method: 'POST', credentials: 'same-origin',
                                        headers: {'Content-Type': 'application/json'},
                                        body: '{}'}); } }"""
    )
    riacho.set_viewport_size({"width": width, "height": 800})
    riacho.reload()
    riacho.wait_for_selector("html[data-ready]", state="attached")
    if width < 768:
        riacho.locator("[data-action=open-drawer]").click()
    items = riacho.locator("[data-chat-id]")
    expect(items).to_have_count(60)
    items.last.scroll_into_view_if_needed()
    expect(items.last).to_be_in_viewport()
    for selector in ("[data-action=new-chat]", "input[name=chat-search]"):
        expect(riacho.locator(selector)).to_be_in_viewport()
        assert centre_hit(riacho, selector) == "itself", selector


def test_editing_a_prompt_puts_the_caret_after_its_text(riacho: Page) -> None:
    completed(send(riacho, "Fix my words"))
    riacho.locator("[data-role=user] [data-action=edit]").click()
    editor = riacho.locator("textarea[name=edit-prompt]")
    expect(editor).to_be_focused()
    riacho.keyboard.type(", please")
    expect(editor).to_have_value("Fix my words, please")
