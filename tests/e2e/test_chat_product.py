"""The chat product around the stream, at 1280 px and at 360 px on a touch screen, in real
Chromium: managing chats, edit and branches, code and math, layout, scrolling, accessibility
(axe-core, light and dark), attachments and the small things (SPEC §8 hooks)."""

from __future__ import annotations

import json
import re
import time
from typing import Any

import pytest
from playwright.sync_api import Locator, Page, Route, expect

from tests.e2e import scenarios
from tests.e2e.conftest import BOOT_TIMEOUT_MS, ROOT, LiveServer, PageGuard
from tests.e2e.scenarios import answer_of, done, error, send, sleep, text

STREAM_MS = 30_000
SIZES: dict[str, dict[str, Any]] = {
    "desktop": {"viewport": {"width": 1280, "height": 800}},
    "mobile": {"viewport": {"width": 360, "height": 740}, "is_mobile": True, "has_touch": True},
}
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"


@pytest.fixture(params=list(SIZES))
def size(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def browser_context_args(browser_context_args: dict[str, Any], size: str) -> dict[str, Any]:
    return {
        **browser_context_args,
        **SIZES[size],
        "permissions": ["clipboard-read", "clipboard-write"],
    }


def completed(answer: Locator) -> Locator:
    expect(answer).to_have_attribute("data-status", "completed", timeout=STREAM_MS)
    return answer


def open_chat_list(page: Page, size: str) -> None:
    """On a phone the chat list is a drawer: open it."""
    if size == "mobile":
        page.locator("[data-action=open-drawer]").click()
        expect(page.locator("#sidebar")).to_be_in_viewport()


def chat_item(page: Page, chat_id: str) -> Locator:
    return page.locator(f'#chat-list [data-chat-id="{chat_id}"]')


def active_chat_id(page: Page) -> str:
    return str(page.evaluate("location.hash.slice(1)"))


def at_bottom(page: Page) -> bool:
    gap = page.evaluate(
        "(() => { const m = document.querySelector('#messages');"
        " return m.scrollHeight - m.scrollTop - m.clientHeight; })()"
    )
    return bool(gap < 60)


# --- chats: rename, delete, search, made by the first answer --------------------------------------


def test_rename_in_place_then_delete_after_asking(riacho: Page, size: str) -> None:
    completed(send(riacho, "Rivers of the Amazon basin"))
    chat_id = active_chat_id(riacho)
    riacho.locator("[data-action=rename-chat]").click()
    title = riacho.locator("input[name=chat-title]")
    expect(title).to_be_focused()
    expect(title).to_have_value("Rivers of the Amazon basin")
    title.fill("Amazon notes")
    title.press("Enter")
    expect(riacho.locator("#chat-head h1")).to_have_text("Amazon notes")
    open_chat_list(riacho, size)
    expect(chat_item(riacho, chat_id)).to_have_text("Amazon notes")
    if size == "mobile":
        riacho.locator("[data-action=close-drawer]").first.click()

    riacho.reload()
    riacho.wait_for_selector("html[data-ready]", state="attached", timeout=BOOT_TIMEOUT_MS)
    expect(riacho.locator("#chat-head h1")).to_have_text("Amazon notes")

    riacho.locator("[data-action=delete-chat]").click()
    expect(riacho.locator("#chat-head .confirm")).to_contain_text("Amazon notes")
    riacho.locator("[data-action=cancel-delete]").click()
    expect(riacho.locator("#chat-head h1")).to_have_text("Amazon notes")
    riacho.locator("[data-action=delete-chat]").click()
    riacho.locator("[data-action=confirm-delete]").click()
    expect(riacho.locator("#chat-head h1")).to_have_text("New chat")
    expect(riacho.locator(".empty-state")).to_be_visible()
    expect(chat_item(riacho, chat_id)).to_have_count(0)
    expect(riacho.locator("textarea[name=prompt]")).to_be_focused()


def test_search_finds_chats_by_content_and_lists_them_by_day(riacho: Page, size: str) -> None:
    completed(send(riacho, "Tell me about the pantanal wetlands"))
    wetlands = active_chat_id(riacho)
    open_chat_list(riacho, size)
    riacho.locator("[data-action=new-chat]").click()
    completed(send(riacho, "Samba rhythms"))
    samba = active_chat_id(riacho)

    open_chat_list(riacho, size)
    expect(riacho.locator(".chat-group-label")).to_have_text(["Today"])
    expect(riacho.locator("#chat-list [data-chat-id]")).to_have_count(2)
    search = riacho.locator("input[name=chat-search]")
    search.fill("PANTANAL")
    expect(riacho.locator("#chat-list [data-chat-id]")).to_have_count(1)
    expect(chat_item(riacho, wetlands)).to_be_visible()
    search.fill("deterministic demo model")  # NOTE: words of the answers, not the titles
    expect(riacho.locator("#chat-list [data-chat-id]")).to_have_count(2)
    search.fill("nothing says this")
    expect(riacho.locator("#chat-list .list-note")).to_have_text(
        "No chat contains “nothing says this”."
    )
    search.fill("")
    expect(riacho.locator("#chat-list [data-chat-id]")).to_have_count(2)
    expect(riacho.locator("#chat-list [data-chat-id]").first).to_have_attribute(
        "data-chat-id", samba
    )
    search.fill("nothing says this")
    expect(riacho.locator("#chat-list .list-note")).to_be_visible()
    search.press("Escape")
    expect(search).to_have_value("")
    expect(riacho.locator("#chat-list .list-note")).to_have_count(0)
    expect(riacho.locator("#chat-list [data-chat-id]")).to_have_count(2)


def test_a_first_send_the_server_refuses_leaves_no_chat_behind(
    riacho: Page, server: LiveServer, guard: PageGuard
) -> None:
    guard.allow_console_error(r"status of 503")
    busy = {"status": 503, "json": {"error": {"code": "model_unavailable", "message": "busy"}}}
    scenarios.on_next_stream(riacho, server, lambda _: [busy])
    riacho.locator("textarea[name=prompt]").fill("Is anyone there?")
    riacho.locator("[data-action=send]").click()
    expect(riacho.locator("[data-error-code=model_unavailable]")).to_be_visible()
    expect(riacho.locator("textarea[name=prompt]")).to_have_value("Is anyone there?")
    expect(riacho.locator("#chat-list [data-chat-id]")).to_have_count(0)
    assert json.loads(server.api("GET", "/api/chats")) == []


def test_an_error_banner_replaces_the_last_answers_announcement(
    riacho: Page, server: LiveServer, guard: PageGuard
) -> None:
    guard.allow_console_error(r"status of 503")
    completed(send(riacho, "A first question"))
    announce = riacho.locator("[data-announce]")
    expect(announce).to_have_text("Answer complete")
    busy = {"status": 503, "json": {"error": {"code": "model_unavailable", "message": "busy"}}}
    scenarios.on_next_stream(riacho, server, lambda _: [busy])
    riacho.locator("textarea[name=prompt]").fill("A second one")
    riacho.locator("[data-action=send]").click()
    expect(riacho.locator("[data-error-code=model_unavailable]")).to_be_visible()
    expect(announce).to_have_text("")


def test_a_server_fault_says_what_to_do_in_words_with_retry_never_the_servers_text(
    riacho: Page, server: LiveServer, guard: PageGuard
) -> None:
    guard.allow_console_error(r"status of 500")
    for body in (
        {"message": "Internal Server Error: upstream pool exhausted"},
        {"error": {"code": "internal", "message": "boom internal"}},
    ):
        scenarios.on_next_stream(riacho, server, lambda _, b=body: [{"status": 500, "json": b}])
        riacho.locator("textarea[name=prompt]").fill("Hello?")
        riacho.locator("[data-action=send]").click()
        banner = riacho.locator("[data-error-code]")
        expect(banner).to_contain_text("The server ran into a problem")
        expect(banner).to_contain_text("try again in a minute")
        expect(banner).not_to_contain_text("upstream pool exhausted")
        expect(banner).not_to_contain_text("boom internal")
        expect(riacho.locator("textarea[name=prompt]")).to_have_value("Hello?")
        retry = banner.locator("[data-action=retry]")
        expect(retry).to_be_enabled()
        if "error" in body:
            with riacho.expect_request(scenarios.STREAM_ROUTE) as again:
                retry.click()
            run_id = (again.value.post_data_json or {})["runId"]
            completed(scenarios.answer_of(riacho, run_id))
            expect(banner).to_have_count(0)
        else:
            banner.locator("[data-action=dismiss-error]").click()


# --- edit and branches ----------------------------------------------------------------------------


def test_an_edited_prompt_is_a_branch_and_both_survive_a_reload(riacho: Page) -> None:
    completed(send(riacho, "First question"))
    completed(send(riacho, "Second question"))
    second = riacho.locator("[data-role=user]").filter(has_text="Second question")
    second.locator("[data-action=edit]").click()
    editor = riacho.locator("textarea[name=edit-prompt]")
    expect(editor).to_be_focused()
    editor.fill("Second question, better put")
    with riacho.expect_request("**/api/respond/stream") as sent:
        editor.press("Enter")
    body = json.loads(sent.value.post_data or "{}")
    completed(answer_of(riacho, body["runId"]))
    assert body["afterRunId"] and not body.get("atTop")

    users = riacho.locator("[data-role=user] .bubble")
    expect(users).to_have_text(["First question", "Second question, better put"])
    edited = riacho.locator("[data-role=user]").filter(has_text="better put")
    expect(edited.locator(".switcher-label")).to_have_text("2 / 2")
    edited.locator("[data-action=branch-prev]").click()
    expect(users).to_have_text(["First question", "Second question"])
    original = riacho.locator("[data-role=user]").filter(has_text="Second question")
    expect(original.locator(".switcher-label")).to_have_text("1 / 2")
    expect(original.locator("[data-action=branch-prev]")).to_be_disabled()

    riacho.reload()
    riacho.wait_for_selector("html[data-ready]", state="attached", timeout=BOOT_TIMEOUT_MS)
    expect(users).to_have_text(["First question", "Second question"])  # NOTE: as on screen
    riacho.locator("[data-role=user] [data-action=branch-next]").click()
    expect(users).to_have_text(["First question", "Second question, better put"])
    expect(riacho.locator("[data-role=assistant]")).to_have_count(2)


def test_focus_stays_on_the_switcher_after_branch_and_attempt_arrows(riacho: Page) -> None:
    completed(send(riacho, "Name a river"))
    riacho.locator("[data-role=user] [data-action=edit]").click()
    editor = riacho.locator("textarea[name=edit-prompt]")
    editor.fill("Name a lake")
    with riacho.expect_request("**/api/respond/stream") as sent:
        editor.press("Enter")
    lake = completed(answer_of(riacho, json.loads(sent.value.post_data or "{}")["runId"]))
    riacho.locator("[data-role=user] [data-action=branch-prev]").click()
    focused = riacho.locator("[data-role=user] [data-action=branch-next]")
    expect(focused).to_be_focused()  # NOTE: prev is disabled at 1 / 2: its neighbour
    riacho.keyboard.press("Enter")
    expect(riacho.locator("[data-role=user] .bubble")).to_have_text(["Name a lake"])
    expect(riacho.locator("[data-role=user] [data-action=branch-prev]")).to_be_focused()

    with riacho.expect_request("**/api/respond/stream") as again:
        lake.locator("[data-action=regenerate]").click()
    completed(answer_of(riacho, json.loads(again.value.post_data or "{}")["runId"]))
    riacho.locator("[data-role=assistant] [data-action=attempt-prev]").click()
    expect(riacho.locator("[data-role=assistant] [data-action=attempt-next]")).to_be_focused()


# --- code and math --------------------------------------------------------------------------------


def test_code_is_labelled_copied_and_highlighted_math_typeset_both_loaded_late(
    riacho: Page, guard: PageGuard
) -> None:
    assert not [r for r in guard.requests if "katex" in r], "not at boot"
    answer = completed(send(riacho, "Show some code and the quadratic formula math"))
    block = answer.locator(".code-block").first
    expect(block.locator(".code-lang")).to_have_text(re.compile(r"^(python|javascript|sql)$"))
    expect(block.locator("code[data-highlighted] span").first).to_be_attached(timeout=STREAM_MS)
    expect(answer.locator(".math .katex").first).to_be_attached(timeout=STREAM_MS)
    expect(answer.locator('.math[data-math="display"] .katex-display')).to_have_count(1)

    copy = block.locator("[data-action=copy-code]")
    copy.click()
    expect(copy).to_have_text("Copied")
    copied = riacho.evaluate("navigator.clipboard.readText()")
    assert copied == block.locator("code").text_content()
    assert any("katex.min.js" in r for r in guard.requests)
    assert any("pygments" in r for r in guard.requests)
    fetched_here = "performance.getEntriesByType('resource').some(e => e.name.includes('pygments'))"
    assert riacho.evaluate(fetched_here) is False, "the wheel is fetched by a worker, not the page"
    loaded_at, ready_at = riacho.evaluate(
        "[performance.timeOrigin,"
        " performance.timeOrigin + performance.getEntriesByName('riacho:ready')[0].startTime]"
    )
    # NOTE: this page's requests (with RIACHO_E2E_SNAPSHOT the page was loaded twice)
    asked = [r.timing["startTime"] for r in guard.asked if "pygments" in r.url]
    pygments = [at for at in asked if at >= loaded_at]
    assert pygments and min(pygments) > ready_at, "Pygments is asked for after data-ready"


def test_code_highlighting_is_loaded_after_boot_before_any_code_block(
    riacho: Page, guard: PageGuard
) -> None:
    """Idle moments after data-ready load Pygments (and prepare Python's lexer), so that the
    first answer with code does not do it between its frames."""
    loaded_at = riacho.evaluate("performance.timeOrigin")

    def asked_by_this_page() -> bool:  # NOTE: with RIACHO_E2E_SNAPSHOT it was loaded twice
        return any("pygments" in r.url and r.timing["startTime"] >= loaded_at for r in guard.asked)

    deadline = time.monotonic() + 10
    while not asked_by_this_page():
        assert time.monotonic() < deadline, "Pygments was not loaded after boot"
        riacho.wait_for_timeout(100)
    assert riacho.locator(".code-block").count() == 0


def test_a_pygments_load_ahead_that_fails_is_tried_again_at_the_first_code_block(
    page: Page, guard: PageGuard, server: LiveServer
) -> None:
    asked: list[str] = []

    def fail_the_first(route: Route) -> None:
        asked.append(route.request.url)
        if len(asked) == 1:
            route.abort()  # NOTE: the worker's fetch, in the idle moments after data-ready
        else:
            route.continue_()

    page.route("**/pygments-*.whl", fail_the_first)
    page.goto(server.url + "/?bootSnapshotDelayMs=600000")
    page.wait_for_selector("html[data-ready]", state="attached", timeout=BOOT_TIMEOUT_MS)
    deadline = time.monotonic() + 10
    while not asked:
        assert time.monotonic() < deadline, "Pygments was not loaded after boot"
        page.wait_for_timeout(100)
    scenarios.on_next_stream(
        page, server, lambda _: [text("```python\nx = [1, 2]\n```\n\nAfter the code."), done()]
    )
    answer = send(page, "Some code")
    code = answer.locator(".code-block code")
    expect(code).to_have_attribute("data-highlighted", "", timeout=STREAM_MS)
    expect(code.locator("span").first).to_be_attached()
    assert len(asked) == 2


# --- layout, scrolling ----------------------------------------------------------------------------


def test_code_in_any_language_is_highlighted_or_left_plain_while_the_answer_streams(
    riacho: Page, server: LiveServer, guard: PageGuard
) -> None:
    fences = {
        "rust": 'fn main() { println!("hi"); }',
        "haskell": "main = putStrLn (show [x * 2 | x <- [1..3]])",
        "nosuchlanguage": "just <text> & symbols",
    }
    scenarios.on_next_stream(
        riacho,
        server,
        lambda _: [
            *[text(f"```{lang}\n{code}\n```\n\n") for lang, code in fences.items()],
            *[x for i in range(20) for x in (sleep(30), text(f"Words after the code {i}. "))],
            done(),
        ],
    )
    answer = send(riacho, "Code in three languages")
    blocks = answer.locator(".code-block")
    expect(blocks).to_have_count(3, timeout=STREAM_MS)
    for index, (lang, code) in enumerate(fences.items()):
        code_element = blocks.nth(index).locator("code")
        expect(code_element).to_have_attribute("data-highlighted", "", timeout=STREAM_MS)
        expect(code_element).to_have_text(code)
        spans = code_element.locator("span")
        if lang == "nosuchlanguage":
            expect(spans).to_have_count(0)  # no lexer: the text as it came, nothing lost
        else:
            expect(spans.first).to_be_attached()
    completed(answer)
    assert any("pygments" in r for r in guard.requests)


def test_touch_targets_composer_and_drawer_on_a_phone(riacho: Page, size: str) -> None:
    if size != "mobile":
        pytest.skip("the phone layout")
    composer = riacho.locator("#composer").bounding_box()
    assert composer is not None and composer["height"] <= 130, composer
    expect(riacho.locator("#sidebar")).not_to_be_in_viewport()
    for selector in (
        "[data-action=open-drawer]",
        "[data-action=send]",
        "[data-action=composer-options]",
    ):
        box = riacho.locator(selector).bounding_box()
        assert box is not None and box["width"] >= 44 and box["height"] >= 44, (selector, box)
    open_chat_list(riacho, size)
    new_chat = riacho.locator("[data-action=new-chat]").bounding_box()
    assert new_chat is not None and 44 <= new_chat["height"] < 60, "one line, big enough"
    riacho.locator(".scrim").click(position={"x": 350, "y": 400})
    expect(riacho.locator("#sidebar")).not_to_be_in_viewport()


def test_the_view_follows_the_stream_through_images_until_the_reader_scrolls_up(
    riacho: Page, size: str, server: LiveServer
) -> None:
    if size == "mobile":
        riacho.locator("[data-action=composer-options]").click()
    riacho.locator("[data-action=tools]").click()
    if size == "mobile":
        riacho.locator("[data-action=composer-options]").click()
    answer = completed(send(riacho, "Draw a picture of a long river"))
    expect(answer.locator("[data-image-status=completed] img")).to_be_visible()
    riacho.wait_for_function(
        "Array.from(document.querySelectorAll('.image img')).every(i => i.complete)"
    )
    riacho.wait_for_timeout(300)
    assert at_bottom(riacho), "followed to the end, image and all"
    expect(riacho.locator("[data-action=jump-to-latest]")).to_be_hidden()

    seen = scenarios.on_next_stream(
        riacho,
        server,
        lambda _: [
            text("Line one.\n\n"),
            *[x for i in range(30) for x in (sleep(60), text(f"More words, paragraph {i}.\n\n"))],
            done(),
        ],
    )
    follow_up = send(riacho, "Keep talking")
    expect(follow_up.locator(".message-text")).to_contain_text("paragraph 3", timeout=STREAM_MS)
    riacho.locator("#messages").evaluate("m => { m.scrollTop = 0; }")
    jump = riacho.locator("[data-action=jump-to-latest]")
    expect(jump).to_be_visible()
    completed(follow_up)
    assert not at_bottom(riacho), "stayed where the reader scrolled"
    jump.click()
    expect(jump).to_be_hidden()
    expect(riacho.locator("textarea[name=prompt]")).to_be_focused()  # NOTE: not <body>
    assert at_bottom(riacho)
    assert seen

    riacho.locator("#messages").evaluate("m => { m.scrollTop = 0; }")
    expect(jump).to_be_visible()
    third = send(riacho, "A new prompt comes into view")
    prompt = riacho.locator("[data-role=user]").filter(has_text="A new prompt comes into view")
    expect(prompt).to_be_in_viewport()
    completed(third)


# --- accessibility --------------------------------------------------------------------------------


def test_the_transcript_is_quiet_one_announcement_per_answer_focus_after_stop(
    riacho: Page, server: LiveServer
) -> None:
    assert riacho.locator("#messages").get_attribute("aria-live") is None
    announce = riacho.locator("[data-announce]")
    completed(send(riacho, "Hello there"))
    expect(announce).to_have_text("Answer complete")
    polite = riacho.locator("[aria-live=polite]:visible, [role=status]:visible, [role=log]")
    expect(polite).to_have_count(1)
    assert polite.get_attribute("data-announce") is not None, "the one polite region"

    held = send(riacho, "Please write a long answer")
    expect(held).to_have_attribute("data-status", "receiving", timeout=STREAM_MS)
    expect(held.locator(".message-text")).not_to_be_empty()
    riacho.locator("[data-action=stop]").click()
    expect(riacho.locator("textarea[name=prompt]")).to_be_focused()
    expect(held).to_have_attribute("data-status", "cancelled", timeout=STREAM_MS)
    expect(announce).to_have_text("Stopped")
    stopped = held.locator("[data-cancel=confirmed]")
    expect(stopped).to_be_visible()
    expect(stopped).to_have_text("Stopped")

    scenarios.on_next_stream(
        riacho, server, lambda _: [text("Half"), error("the model broke", "generation_failed")]
    )
    failed = send(riacho, "Break please")
    expect(failed).to_have_attribute("data-status", "failed", timeout=STREAM_MS)
    expect(announce).to_have_text("Failed: The answer could not be generated.")


def run_axe(page: Page) -> list[str]:
    """Serious and critical axe-core violations on the page as it is now."""
    page.evaluate(AXE.read_text(encoding="utf-8") + "\n;true")
    results = page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    return [
        f"{v['id']} ({v['impact']}): {[n['target'] for n in v['nodes']][:4]}"
        for v in results["violations"]
        if v["impact"] in ("serious", "critical")
    ]


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_axe_finds_nothing_serious_in_any_view(
    riacho: Page, server: LiveServer, size: str, scheme: str
) -> None:
    riacho.emulate_media(color_scheme=scheme)
    found: dict[str, list[str]] = {"empty": run_axe(riacho)}
    if size == "mobile":
        riacho.locator("[data-action=composer-options]").click()
    riacho.locator("[data-action=tools]").click()
    riacho.locator("[data-action=thinking]").click()
    if size == "mobile":
        riacho.locator("[data-action=composer-options]").click()
    completed(send(riacho, "Draw a river, show code and the math formula"))
    riacho.wait_for_selector(".math .katex", state="attached", timeout=STREAM_MS)
    riacho.locator(".tool-result-box summary").first.click()
    riacho.locator(".thinking summary").first.click()
    found["answer with code, table, tool, image, math"] = run_axe(riacho)
    scenarios.on_next_stream(
        riacho, server, lambda _: [text("Half"), error("the model broke", "generation_failed")]
    )
    expect(send(riacho, "Break please")).to_have_attribute(
        "data-status", "failed", timeout=STREAM_MS
    )
    found["failed answer"] = run_axe(riacho)
    if size == "mobile":
        open_chat_list(riacho, size)
        found["drawer"] = run_axe(riacho)
    assert {view: v for view, v in found.items() if v} == {}


# --- the small things -----------------------------------------------------------------------------


def test_drafts_survive_a_reload_per_chat(riacho: Page, size: str) -> None:
    completed(send(riacho, "A chat with a draft"))
    prompt = riacho.locator("textarea[name=prompt]")
    prompt.fill("half a thought, not sent")
    riacho.reload()
    riacho.wait_for_selector("html[data-ready]", state="attached", timeout=BOOT_TIMEOUT_MS)
    expect(prompt).to_have_value("half a thought, not sent")
    open_chat_list(riacho, size)
    riacho.locator("[data-action=new-chat]").click()
    expect(prompt).to_have_value("")


def test_unavailable_models_are_disabled_with_their_reason(riacho: Page) -> None:
    offline = riacho.locator("select[name=model] option[value=riacho-offline]")
    expect(offline).to_be_disabled()
    expect(offline).to_have_text(re.compile(r"unavailable: this demo model is always offline"))


FIRST_TAB_STOP = """() => [...document.querySelectorAll('button, a[href], input, select, textarea')]
    .find((e) => !e.disabled && e.tabIndex >= 0 && !e.closest('[hidden], dialog'))"""


def test_a_skip_link_is_the_first_tab_stop_and_goes_past_the_chat_list(riacho: Page) -> None:
    skip = riacho.locator("[data-action=skip-to-composer]")
    assert riacho.evaluate(f"({FIRST_TAB_STOP})() === document.querySelector('.skip-link')")
    expect(skip).not_to_be_in_viewport()
    skip.focus()
    expect(skip).to_be_in_viewport()
    expect(skip).to_have_text("Skip to the message box")
    riacho.keyboard.press("Enter")
    expect(riacho.locator("textarea[name=prompt]")).to_be_focused()


def test_the_phone_s_options_panel_closes_on_escape_a_tap_elsewhere_and_send(
    riacho: Page, size: str
) -> None:
    if size != "mobile":
        pytest.skip("the options panel is a phone's (the options are inline on a wide screen)")
    toggle = riacho.locator("[data-action=composer-options]")
    panel = riacho.locator("#composer-options")

    def open_panel() -> None:
        toggle.click()
        expect(panel).to_be_visible()
        expect(toggle).to_have_attribute("aria-expanded", "true")

    open_panel()
    riacho.keyboard.press("Escape")
    expect(panel).to_be_hidden()
    expect(toggle).to_have_attribute("aria-expanded", "false")
    expect(toggle).to_be_focused()

    open_panel()
    riacho.locator("[data-action=thinking]").click()  # NOTE: inside: it stays open
    expect(panel).to_be_visible()
    riacho.locator("#messages").click(position={"x": 20, "y": 20})
    expect(panel).to_be_hidden()

    open_panel()
    answer = send(riacho, "Options closed?")
    expect(panel).to_be_hidden()
    completed(answer)


def test_the_picker_shows_each_chats_model_and_the_toggles_survive_a_reload(
    riacho: Page, size: str
) -> None:
    picker = riacho.locator("select[name=model]")

    def show_options() -> None:  # NOTE: on a phone they are in a panel
        toggle = riacho.locator("[data-action=composer-options]")
        if size == "mobile" and toggle.get_attribute("aria-expanded") != "true":
            toggle.click()

    show_options()
    picker.select_option("riacho-mini")
    completed(send(riacho, "A chat with the mini model"))
    mini_chat = active_chat_id(riacho)
    open_chat_list(riacho, size)
    riacho.locator("[data-action=new-chat]").click()
    show_options()
    picker.select_option("riacho-demo")
    completed(send(riacho, "A chat with the demo model"))
    open_chat_list(riacho, size)
    chat_item(riacho, mini_chat).click()
    expect(picker).to_have_value("riacho-mini")

    show_options()
    riacho.locator("[data-action=thinking]").click()
    riacho.locator("[data-action=tools]").click()
    riacho.locator("select[name=reasoningEffort]").select_option("high")
    riacho.reload()
    riacho.wait_for_selector("html[data-ready]", state="attached", timeout=BOOT_TIMEOUT_MS)
    expect(picker).to_have_value("riacho-mini")
    expect(riacho.locator("[data-action=thinking]")).to_have_attribute("aria-pressed", "true")
    expect(riacho.locator("[data-action=tools]")).to_have_attribute("aria-pressed", "true")
    expect(riacho.locator("select[name=reasoningEffort]")).to_have_value("high")


def test_what_a_finger_taps_is_44_px_tall_on_a_phone(riacho: Page, size: str) -> None:
    if size != "mobile":
        pytest.skip("touch targets of a phone")
    code = completed(send(riacho, "Show some code"))
    riacho.locator("[data-action=composer-options]").click()
    riacho.locator("[data-action=tools]").click()
    drawn = completed(send(riacho, "Please draw a river at dawn"))
    targets = [
        code.locator("[data-action=copy-code]").first,
        code.locator(".run-details > summary"),
        drawn.locator(".tool-result-box summary").first,
    ]
    for target in targets:
        box = target.bounding_box()
        assert box is not None and box["height"] >= 44, (target, box)


def test_keyboard_shortcuts(riacho: Page, size: str) -> None:
    if size == "mobile":
        pytest.skip("single-key shortcuts are for keyboards")
    answer = completed(send(riacho, "Something to copy"))
    riacho.locator("#messages").focus()
    riacho.keyboard.press("?")
    dialog = riacho.locator("#shortcuts")
    expect(dialog).to_be_visible()
    expect(dialog.locator("dd")).to_contain_text(["New chat", "Focus the message box"])
    riacho.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    riacho.locator("#messages").focus()
    riacho.keyboard.press("c")
    expect(riacho.locator("[data-announce]")).to_have_text("Copied the last answer")
    copied = str(riacho.evaluate("navigator.clipboard.readText()"))
    assert copied.startswith("## ") and "Something to copy" in copied, "the answer's markdown"
    assert "Something to copy" in str(answer.text_content())
    riacho.keyboard.press("/")
    expect(riacho.locator("textarea[name=prompt]")).to_be_focused()
    riacho.locator("#messages").focus()
    riacho.keyboard.press("n")
    expect(riacho.locator(".empty-state")).to_be_visible()


def test_thinking_says_how_long_and_a_reload_says_the_same(riacho: Page, size: str) -> None:
    if size == "mobile":
        riacho.locator("[data-action=composer-options]").click()
    riacho.locator("[data-action=thinking]").click()
    if size == "mobile":
        riacho.locator("[data-action=composer-options]").click()
    answer = completed(send(riacho, "Think about rivers"))
    label = answer.locator("[data-part=thinking] summary")
    expect(label).to_have_text(re.compile(r"^Thought for (less than a second|\d+ s)$"))
    words = label.text_content()
    run_id = answer.get_attribute("data-run-id")
    riacho.reload()
    riacho.wait_for_selector("html[data-ready]", state="attached", timeout=BOOT_TIMEOUT_MS)
    expect(answer_of(riacho, str(run_id)).locator("[data-part=thinking] summary")).to_have_text(
        str(words)
    )


def test_tool_status_words_stay_the_same_kind_from_start_to_end(riacho: Page, size: str) -> None:
    if size == "mobile":
        riacho.locator("[data-action=composer-options]").click()
    riacho.locator("[data-action=tools]").click()
    if size == "mobile":
        riacho.locator("[data-action=composer-options]").click()
    answer = send(riacho, "Search for rivers")
    seen: set[str] = set()
    status = answer.locator("[data-tool-call-id] .tool-status").first
    for _ in range(200):
        if answer.get_attribute("data-status") == "completed":
            break
        if status.count():
            seen.add(str(status.text_content()))
        riacho.wait_for_timeout(10)
    completed(answer)
    seen.add(str(status.text_content()))
    assert seen <= {"Preparing…", "Running…", "Done"}, seen
    assert "Done" in seen


def test_an_image_attachment_is_previewed_and_a_big_file_is_refused_in_megabytes(
    riacho: Page,
) -> None:
    data = _tiny_png()
    files = riacho.locator("input[type=file][name=attachments]")
    files.set_input_files([{"name": "river.png", "mimeType": "image/png", "buffer": data}])
    chip = riacho.locator("#attachment-list [data-file-state=ready]")
    expect(chip.locator("img.chip-preview")).to_have_attribute("src", re.compile(r"^blob:"))
    completed(send(riacho, "What is in this picture?"))
    sent = riacho.locator("[data-role=user]").filter(has_text="What is in this picture?")
    preview = sent.locator("img.chip-preview")
    expect(preview).to_have_attribute("src", re.compile(r"/api/attachments/att_"))
    riacho.wait_for_function(
        "img => img.complete && img.naturalWidth > 0", arg=preview.element_handle()
    )

    files.set_input_files(
        [{"name": "huge.txt", "mimeType": "text/plain", "buffer": b"x" * (5 * 1024 * 1024 + 1)}]
    )
    refused = riacho.locator("#attachment-list [data-file-state=error]")
    expect(refused.locator(".chip-error")).to_have_text("5 MB max")
    expect(refused.locator(".chip-size")).to_have_text("5 MB")


def _tiny_png() -> bytes:
    import base64

    return base64.b64decode(
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
    )


def test_a_suggestion_starts_the_chat(riacho: Page) -> None:
    suggestion = riacho.locator("[data-action=suggest]").first
    words = str(suggestion.get_attribute("data-prompt"))
    with riacho.expect_request("**/api/respond/stream") as sent:
        suggestion.click()
    body = json.loads(sent.value.post_data or "{}")
    assert body["prompt"] == words
    completed(answer_of(riacho, body["runId"]))
    expect(riacho.locator("[data-role=user] .bubble")).to_have_text([words])


def test_focus_in_a_footer_that_re_renders_stays_on_the_page(riacho: Page) -> None:
    answer = send(riacho, "Please write a long answer")
    expect(answer).to_have_attribute("data-status", "receiving", timeout=STREAM_MS)
    answer.locator(".run-details > summary").focus()
    completed(answer)  # NOTE: the footer is replaced when the run settles
    focused = riacho.evaluate("document.activeElement.tagName.toLowerCase()")
    assert focused != "body"
    expect(riacho.locator("textarea[name=prompt]")).to_be_focused()


def test_reduced_motion_stills_the_cursor_and_the_drawer(riacho: Page, size: str) -> None:
    cursor_animation = (
        "name => { const c = document.querySelector('.cursor');"
        " return c !== null && getComputedStyle(c).animationName === name; }"
    )
    answer = send(riacho, "Please write a long answer")
    riacho.wait_for_function(cursor_animation, arg="blink", timeout=STREAM_MS)
    riacho.emulate_media(reduced_motion="reduce")
    riacho.wait_for_function(cursor_animation, arg="none", timeout=STREAM_MS)
    riacho.locator("[data-action=stop]").click()
    expect(answer).not_to_have_attribute("data-status", "receiving", timeout=STREAM_MS)
    if size == "mobile":
        sidebar = riacho.locator("#sidebar")
        assert sidebar.evaluate("s => getComputedStyle(s).transitionDuration") in ("0s", "0s, 0s")
