"""What users see, round 3 (issue 37), the rest: the phone's drawer is a modal dialog, the
context ring and Compact say what is true, Rename saves on blur and refuses an empty title in
words, and the smaller things (the folded options, a refused image, the page's heading, Enter
during an answer). Each test waits for the element of its own action (by run or chat id).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Locator, Page, expect

from tests.e2e import scenarios
from tests.e2e.conftest import LiveServer
from tests.e2e.scenarios import STREAM_ROUTE, StreamRequest, answer_of, send

ROOT = Path(__file__).resolve().parents[2]
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
STREAM_MS = 20_000
SHOTS = os.environ.get("RIACHO_UI3_SHOTS", "")
PHONE = {"width": 390, "height": 844}


def completed(answer: Locator) -> Locator:
    expect(answer).to_have_attribute("data-status", "completed", timeout=STREAM_MS)
    return answer


def context_event(used: int, window: int = 900) -> dict[str, Any]:
    ratio = round(used / window, 4)
    return {
        "type": "context_info",
        "usedTokens": used,
        "maxTokens": window,
        "ratio": ratio,
        "severity": "critical" if ratio >= 0.85 else "warning",
        "compactionRecommended": ratio >= 0.75,
    }


def answer_measured(page: Page, server: LiveServer, used: int, prompt: str) -> Locator:
    """An answer whose stream reports ``used`` tokens of the demo's 900-token window."""
    scenarios.on_next_stream(
        page,
        server,
        lambda _: [{"event": context_event(used)}, scenarios.text("Noted."), scenarios.done()],
    )
    return completed(send(page, prompt))


# --- item 7: the phone's chat drawer -------------------------------------------------------------


FOCUSED = """() => { const el = document.activeElement;
  return { inSidebar: !!el.closest('#sidebar'), visible: el.getClientRects().length > 0,
           inClosedDetails: !!el.closest('details:not([open]) > :not(summary)'),
           id: el.id || el.getAttribute('data-action') || el.getAttribute('data-chat-id')
               || el.getAttribute('name') || el.tagName,
           html: el.outerHTML.slice(0, 160) }; }"""


MAX_DRAWER_STOPS = 40


def test_the_phones_chat_drawer_is_a_modal_dialog_that_keeps_focus(riacho: Page) -> None:
    riacho.set_viewport_size(PHONE)
    completed(send(riacho, "A chat for the list"))
    # NOTE: a folded <details> in the drawer: its button is not a place Tab may stop
    riacho.evaluate(
        """() => document.querySelector('.sidebar-head').insertAdjacentHTML('beforeend',
             '<details><summary>More</summary>'
             + '<button type=button id=folded>x</button></details>')"""
    )
    opener = riacho.locator("[data-action=open-drawer]")
    opener.click()
    sidebar = riacho.locator("#sidebar")
    expect(sidebar).to_have_attribute("role", "dialog")
    expect(sidebar).to_have_attribute("aria-modal", "true")
    expect(riacho.locator("input[name=chat-search]")).to_be_focused()
    assert riacho.evaluate("document.querySelector('main.conversation').inert") is True

    # NOTE: Tab until a stop comes round again (the drawer holds a dozen or so stops)
    stops: list[str] = []
    while len(stops) < MAX_DRAWER_STOPS and (len(stops) < 2 or stops[-1] not in stops[:-1]):
        riacho.keyboard.press("Tab")
        where = riacho.evaluate(FOCUSED)
        assert where["inSidebar"] and where["visible"], where
        assert not where["inClosedDetails"] and where["id"] != "folded", where
        stops.append(str(where["id"]) + ":" + str(where.get("html", "")))
    distinct = list(dict.fromkeys(stops))
    assert stops[-1] == distinct[0], f"Tab does not cycle: {stops}"
    assert any(stop.startswith("chat-search:") for stop in distinct), distinct
    assert any(stop.startswith("new-chat:") for stop in distinct), distinct
    riacho.locator("input[name=chat-search]").focus()
    for _ in range(len(distinct) + 1):
        riacho.keyboard.press("Shift+Tab")
        assert riacho.evaluate(FOCUSED)["inSidebar"]

    riacho.keyboard.press("Escape")
    expect(riacho.locator("#app.drawer-open")).to_have_count(0)
    expect(opener).to_be_focused()
    expect(sidebar).not_to_have_attribute("role", "dialog")
    assert riacho.evaluate("document.querySelector('main.conversation').inert") is False


# --- item 12: the ring, the callout and Compact ------------------------------------------------


@pytest.mark.parametrize("width", [1280, 390])
def test_compact_says_what_it_did_and_the_ring_stops_claiming_full(
    riacho: Page, server: LiveServer, width: int
) -> None:
    riacho.set_viewport_size({"width": width, "height": 844})
    completed(send(riacho, "Tell me about rivers"))
    ring = riacho.locator("[data-context-ring]")
    # NOTE: one demo answer fills a quarter of its 900-token window: no callout
    expect(ring).to_have_attribute("aria-label", re.compile(r"^2\d\d of 900 tokens \(2\d%\)$"))
    expect(riacho.locator("[data-callout=compaction]")).to_have_count(0)
    answer_measured(riacho, server, 1208, "And about lakes")
    label = str(ring.get_attribute("aria-label"))
    assert "1,208 tokens" in label and "900-token window" in label, label
    assert "100%" not in label and "of 900" not in label, label
    callout = riacho.locator("[data-callout=compaction]")
    expect(callout).to_contain_text("no longer fits")
    expect(callout).not_to_contain_text("almost full")
    assert_inside_the_ring(riacho)
    if SHOTS:
        riacho.screenshot(path=f"{SHOTS}/past-the-window-{width}.png")

    with riacho.expect_response("**/compact") as answered:
        callout.locator("[data-action=compact]").click()
    after = answered.value.json()
    note = riacho.locator("#messages [data-note=compacted]")
    expect(note).to_contain_text("2 earlier turns summarised")
    expect(note).to_contain_text(f"now sends {after['usedTokens']:,} of 900 tokens")
    expect(callout).to_have_count(0)
    shown = re.compile(rf"^{after['usedTokens']:,} of 900 tokens \(\d+%\)$")
    expect(ring).to_have_attribute("aria-label", shown)
    assert "100%" not in str(ring.get_attribute("aria-label"))

    follow_up = completed(send(riacho, "And about the sea"))
    expect(follow_up).to_be_visible()
    expect(note).to_have_count(0)  # NOTE: the next answer measures anew


def assert_inside_the_ring(page: Page) -> None:
    """The ring's words fit inside its circle (never "100%" spilling out)."""
    fits = page.evaluate(
        """() => { const ring = document.querySelector('[data-context-ring]');
             const words = ring.querySelector('span');
             const r = ring.getBoundingClientRect(), w = words.getBoundingClientRect();
             return [words.scrollWidth <= words.clientWidth + 0.5,
                     w.left >= r.left && w.right <= r.right, words.textContent]; }"""
    )
    assert fits[0] and fits[1], fits


def test_near_the_window_the_ring_says_full_inside_it_and_the_callout_almost_full(
    riacho: Page, server: LiveServer
) -> None:
    riacho.set_viewport_size(PHONE)
    answer_measured(riacho, server, 899, "A chat near its window")
    expect(riacho.locator("[data-context-ring] span")).to_have_text("Full")
    assert_inside_the_ring(riacho)
    expect(riacho.locator("[data-callout=compaction]")).to_contain_text("Context almost full")


def test_three_quarters_full_is_said_as_a_share_not_almost_full(
    riacho: Page, server: LiveServer
) -> None:
    answer_measured(riacho, server, 683, "A chat three quarters full")
    callout = riacho.locator("[data-callout=compaction]")
    expect(callout).to_contain_text("76% used")
    expect(callout).not_to_contain_text("almost full")


# --- item 13: Rename ------------------------------------------------------------------------------


def chat_item(page: Page) -> Locator:
    chat_id = str(page.evaluate("location.hash.slice(1)"))
    return page.locator(f'#chat-list [data-chat-id="{chat_id}"]')


@pytest.mark.parametrize("width", [1280, 390])
def test_rename_saves_on_blur_and_escape_or_cancel_keep_the_old_title(
    riacho: Page, width: int
) -> None:
    riacho.set_viewport_size({"width": width, "height": 844})
    completed(send(riacho, "Rivers of the Amazon basin"))
    heading = riacho.locator("#chat-head h1")
    expect(heading).to_have_text("Rivers of the Amazon basin")

    riacho.locator("[data-action=rename-chat]").click()
    field = riacho.locator("input[name=chat-title]")
    field.fill("Amazon notes")
    riacho.locator("#messages").click(position={"x": 20, "y": 20})
    expect(field).to_have_count(0)
    expect(heading).to_have_text("Amazon notes")
    expect(chat_item(riacho)).to_have_text("Amazon notes")

    riacho.locator("[data-action=rename-chat]").click()
    field.fill("Something else")
    field.press("Escape")
    expect(field).to_have_count(0)
    expect(heading).to_have_text("Amazon notes")

    riacho.locator("[data-action=rename-chat]").click()
    field.fill("Something else again")
    riacho.locator("[data-action=cancel-title]").click()
    expect(field).to_have_count(0)
    expect(heading).to_have_text("Amazon notes")
    riacho.wait_for_timeout(300)  # NOTE: no late blur may save what Cancel dropped
    expect(chat_item(riacho)).to_have_text("Amazon notes")


@pytest.mark.parametrize("blank", ["", "   "])
def test_an_empty_title_is_refused_in_words_next_to_the_field(riacho: Page, blank: str) -> None:
    completed(send(riacho, "Rivers of the Amazon basin"))
    riacho.locator("[data-action=rename-chat]").click()
    field = riacho.locator("input[name=chat-title]")
    field.fill(blank)
    field.press("Enter")
    refusal = riacho.locator("[data-refusal=chat-title]")
    expect(refusal).to_be_visible()
    expect(refusal).to_contain_text("A chat needs a title")
    expect(refusal).to_contain_text("Rivers of the Amazon basin")
    expect(field).to_have_attribute("aria-invalid", "true")
    expect(field).to_have_attribute("aria-describedby", str(refusal.get_attribute("id")))
    expect(field).to_be_focused()
    expect(chat_item(riacho)).to_have_text("Rivers of the Amazon basin")

    riacho.locator("#messages").click(position={"x": 20, "y": 20})  # NOTE: a blur refuses too
    expect(refusal).to_be_visible()
    riacho.reload()
    riacho.wait_for_selector("html[data-ready]", state="attached")
    expect(riacho.locator("#chat-head h1")).to_have_text("Rivers of the Amazon basin")

    riacho.locator("[data-action=rename-chat]").click()
    field.fill("Amazon notes")
    field.press("Enter")
    expect(riacho.locator("#chat-head h1")).to_have_text("Amazon notes")
    expect(refusal).to_have_count(0)


# --- item 16: the smaller things ------------------------------------------------------------------


def heading_one_violations(page: Page) -> list[str]:
    page.evaluate(AXE.read_text(encoding="utf-8") + "\n;true")
    results = page.evaluate(
        "axe.run(document, {runOnly: {type: 'rule', values: ['page-has-heading-one']}})"
    )
    return [str(v["id"]) for v in results["violations"]]


def test_the_page_keeps_its_heading_while_renaming_or_confirming_a_delete(riacho: Page) -> None:
    completed(send(riacho, "A chat with a heading"))
    riacho.locator("[data-action=rename-chat]").click()
    expect(riacho.locator("input[name=chat-title]")).to_be_focused()
    assert heading_one_violations(riacho) == []
    riacho.locator("input[name=chat-title]").press("Escape")
    riacho.locator("[data-action=delete-chat]").click()
    expect(riacho.locator("[data-action=confirm-delete]")).to_be_visible()
    assert heading_one_violations(riacho) == []


def hold(_: StreamRequest) -> list[scenarios.Step]:
    return [scenarios.sleep(60_000)]


def test_enter_during_an_answer_sends_nothing_and_the_hint_says_so(
    riacho: Page, server: LiveServer
) -> None:
    hint = riacho.locator("#composer-hint")
    expect(hint).to_contain_text("Enter sends")
    scenarios.on_next_stream(riacho, server, hold)
    streaming = send(riacho, "An answer that takes its time")
    expect(streaming).to_have_attribute("data-status", "connecting", timeout=STREAM_MS)
    expect(hint).to_contain_text("Enter sends once the answer ends")
    expect(hint).to_contain_text("Esc stops")

    asked: list[str] = []
    riacho.on("request", lambda r: asked.append(r.url) if "respond/stream" in r.url else None)
    prompt = riacho.locator("textarea[name=prompt]")
    prompt.fill("The next question")
    prompt.press("Enter")
    expect(riacho.locator("[data-announce]")).to_contain_text("Not sent: the answer is still")
    expect(prompt).to_have_value("The next question")
    assert asked == []

    riacho.locator("[data-action=stop]").click()
    expect(streaming.locator("[data-cancel=confirmed]")).to_have_text("Stopped", timeout=STREAM_MS)
    expect(hint).not_to_contain_text("once the answer ends")
    with riacho.expect_request(STREAM_ROUTE) as sent:
        prompt.press("Enter")
    run_id = json.loads(sent.value.post_data or "{}")["runId"]
    completed(answer_of(riacho, run_id))


def test_the_phones_folded_options_say_what_is_on(riacho: Page) -> None:
    riacho.set_viewport_size(PHONE)
    options = riacho.locator("[data-action=composer-options]")
    badge = options.locator("[data-options-on]")
    expect(badge).to_be_hidden()
    expect(options).to_have_accessible_name("Options")
    options.click()
    riacho.locator("[data-action=thinking]").click()
    options.click()
    expect(riacho.locator("#composer-options")).to_be_hidden()
    expect(badge).to_be_visible()
    expect(badge).to_have_text("Thinking")
    expect(options).to_have_accessible_name("Options Thinking")
    options.click()
    riacho.locator("[data-action=tools]").click()
    options.click()
    expect(badge).to_have_text("Thinking · Tools")

    riacho.reload()
    riacho.wait_for_selector("html[data-ready]", state="attached")
    expect(badge).to_have_text("Thinking · Tools")
    expect(options).to_have_accessible_name("Options Thinking · Tools")


def test_a_refused_image_chip_shows_an_icon_not_a_broken_thumbnail(riacho: Page) -> None:
    files = riacho.locator("input[type=file][name=attachments]")
    huge = b"\x89PNG" + b"x" * (5 * 1024 * 1024 + 1)
    files.set_input_files([{"name": "huge.png", "mimeType": "image/png", "buffer": huge}])
    refused = riacho.locator("#attachment-list [data-file-state=error]")
    expect(refused.locator(".chip-error")).to_have_text("5 MB max")
    expect(refused.locator("img")).to_have_count(0)
    expect(refused.locator("svg.icon").first).to_be_visible()
