"""Issue 37's missing parts, in real Chromium: each answer's model and time, the chat list's
menu (Rename, Pin, Delete), Settings (theme before the first paint, new chats' defaults), and
search's snippets and keys."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from playwright.sync_api import Locator, Page, Route, expect

from tests.e2e.conftest import BOOT_TIMEOUT_MS
from tests.e2e.scenarios import send

ANSWER_MS = 30_000
DARK_BG = "rgb(20, 22, 23)"  # --bg of the dark theme (static/riacho.css)
LIGHT_BG = "rgb(247, 247, 245)"


def _answer(page: Page, prompt: str) -> Locator:
    answer = send(page, prompt, press_enter=True)
    expect(answer).to_have_attribute("data-status", "completed", timeout=ANSWER_MS)
    return answer


def _reload(page: Page) -> None:
    page.reload()
    page.wait_for_selector("html[data-ready]", state="attached", timeout=BOOT_TIMEOUT_MS)


def _api(page: Page, path: str) -> str:
    return str(page.evaluate("() => location.origin")) + path


def _chat_id(page: Page) -> str:
    """The open chat's id, as the page keeps it in the URL."""
    return str(page.evaluate("() => location.hash.slice(1)"))


def _new_chat_with(page: Page, prompt: str) -> str:
    """A new chat with one answer; its id is the one the page keeps in the URL (the list's
    current entry may still be the chat before until the list is read again)."""
    before = _chat_id(page)
    page.locator("[data-action=new-chat]").click()
    _answer(page, prompt)
    chat_id = _chat_id(page)
    assert chat_id.startswith("chat_") and chat_id != before, (before, chat_id)
    current = page.locator(f'#chat-list [aria-current=true][data-chat-id="{chat_id}"]')
    expect(current).to_have_count(1)
    return chat_id


def _entry(page: Page, chat_id: str) -> Locator:
    return page.locator(f'#chat-list li:has([data-chat-id="{chat_id}"])')


def _menu_button(page: Page, chat_id: str) -> Locator:
    return page.locator(f'[data-action=chat-menu][data-menu-for="{chat_id}"]')


# --- each answer's model and time ---------------------------------------------------------------


def test_each_answer_shows_its_own_model_and_the_servers_time_the_same_after_a_reload(
    riacho: Page,
) -> None:
    riacho.locator("select[name=model]").select_option("riacho-mini")
    first = _answer(riacho, "Hello")
    riacho.locator("select[name=model]").select_option("riacho-demo")
    second = _answer(riacho, "And again")
    runs = [str(first.get_attribute("data-run-id")), str(second.get_attribute("data-run-id"))]
    expect(first.locator("[data-answer-meta]")).to_have_text(
        re.compile(r"^riacho-mini · \d\d:\d\d$")
    )
    expect(second.locator("[data-answer-meta]")).to_have_text(
        re.compile(r"^riacho-demo · \d\d:\d\d$")
    )
    before = [a.locator("[data-answer-meta]").evaluate("e => e.outerHTML") for a in (first, second)]

    detail = riacho.request.get(_api(riacho, f"/api/chats/{_chat_id(riacho)}")).json()
    stored = [m["createdAt"] for m in detail["messages"] if m["role"] == "assistant"]
    shown = [
        a.locator("[data-answer-meta] time").get_attribute("datetime") for a in (first, second)
    ]
    for stamp, time in zip(stored, shown, strict=True):
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        assert time is not None
        assert datetime.fromisoformat(time) == moment.replace(second=0, microsecond=0).astimezone(
            datetime.fromisoformat(time).tzinfo or UTC
        ), "the server's time, to the minute"

    _reload(riacho)
    after = [
        riacho.locator(f'[data-role=assistant][data-run-id="{run}"] [data-answer-meta]').evaluate(
            "e => e.outerHTML"
        )
        for run in runs
    ]
    assert after == before


# --- the chat list's menu -----------------------------------------------------------------------


def test_a_chat_pinned_from_its_menu_by_keyboard_is_listed_first_after_a_reload(
    riacho: Page,
) -> None:
    oldest = _new_chat_with(riacho, "The oldest chat")
    _new_chat_with(riacho, "A newer chat")
    newest = _new_chat_with(riacho, "The newest chat")
    button = _menu_button(riacho, oldest)
    expect(button).to_have_attribute("aria-haspopup", "menu")

    button.focus()
    riacho.keyboard.press("Enter")
    menu = riacho.locator("#chat-menu")
    expect(menu).to_be_visible()
    expect(button).to_have_attribute("aria-expanded", "true")
    expect(menu.locator("[data-action=chat-rename]")).to_be_focused()
    riacho.keyboard.press("ArrowDown")
    expect(menu.locator("[data-action=chat-pin]")).to_be_focused()
    expect(menu.locator("[data-action=chat-pin]")).to_have_text("Pin")
    with riacho.expect_response(lambda r: r.request.method == "PATCH" and oldest in r.url):
        riacho.keyboard.press("Enter")
    expect(menu).to_be_hidden()

    first_group = riacho.locator("#chat-list .chat-group").first
    expect(first_group.locator(".chat-group-label")).to_have_text("Pinned")
    expect(first_group.locator("[data-chat-id]")).to_have_count(1)
    expect(first_group.locator(f'[data-chat-id="{oldest}"]')).to_have_count(1)

    _reload(riacho)
    first_group = riacho.locator("#chat-list .chat-group").first
    expect(first_group.locator(".chat-group-label")).to_have_text("Pinned")
    expect(first_group.locator(f'[data-chat-id="{oldest}"]')).to_have_count(1)
    expect(riacho.locator("#chat-list [data-chat-id]").first).to_have_attribute(
        "data-chat-id", oldest
    )

    _menu_button(riacho, oldest).click()
    expect(riacho.locator("#chat-menu [data-action=chat-pin]")).to_have_text("Unpin")
    riacho.locator("#chat-menu [data-action=chat-pin]").click()
    expect(riacho.locator("#chat-list .chat-group-label", has_text="Pinned")).to_have_count(0)
    expect(riacho.locator("#chat-list [data-chat-id]").first).to_have_attribute(
        "data-chat-id", newest
    )


def test_the_menu_closes_on_escape_without_stopping_an_answer_and_arrows_wrap(
    riacho: Page,
) -> None:
    chat = _new_chat_with(riacho, "A chat")
    _menu_button(riacho, chat).click()
    menu = riacho.locator("#chat-menu")
    expect(menu.locator("[data-action=chat-rename]")).to_be_focused()
    riacho.keyboard.press("ArrowUp")
    expect(menu.locator("[data-action=chat-delete]")).to_be_focused()
    riacho.keyboard.press("Home")
    expect(menu.locator("[data-action=chat-rename]")).to_be_focused()
    riacho.keyboard.press("Escape")
    expect(menu).to_be_hidden()
    expect(_menu_button(riacho, chat)).to_be_focused()
    expect(_menu_button(riacho, chat)).to_have_attribute("aria-expanded", "false")


def test_rename_from_the_menu_is_kept_and_an_empty_title_is_refused_in_words(
    riacho: Page,
) -> None:
    chat = _new_chat_with(riacho, "Rivers of the world")
    _menu_button(riacho, chat).click()
    riacho.locator("#chat-menu [data-action=chat-rename]").click()
    dialog = riacho.locator("#chat-rename-dialog")
    field = dialog.locator("input[name=chat-new-title]")
    expect(dialog).to_be_visible()
    field.fill("   ")
    field.press("Enter")
    expect(dialog.locator("[data-dialog-note]")).to_have_text("A chat needs a title.")
    expect(dialog).to_be_visible()
    field.fill("Amazon & <Nile>")
    with riacho.expect_response(lambda r: r.request.method == "PATCH" and chat in r.url):
        field.press("Enter")
    expect(dialog).to_be_hidden()
    expect(_entry(riacho, chat).locator(".chat-item-title")).to_have_text("Amazon & <Nile>")
    _reload(riacho)
    expect(_entry(riacho, chat).locator(".chat-item-title")).to_have_text("Amazon & <Nile>")


def test_on_a_phone_rename_from_the_drawers_menu_keeps_tab_in_its_dialog(riacho: Page) -> None:
    """The drawer traps Tab while it is open; a dialog opened from it must keep Tab to itself
    (the drawer's trap once pulled focus back to the inert list behind the dialog)."""
    chat = _new_chat_with(riacho, "Rivers of the phone")
    riacho.set_viewport_size({"width": 390, "height": 800})
    riacho.locator("[data-action=open-drawer]").click()
    expect(riacho.locator("#sidebar")).to_have_attribute("aria-modal", "true")
    _menu_button(riacho, chat).click()
    riacho.locator("#chat-menu [data-action=chat-rename]").click()
    dialog = riacho.locator("#chat-rename-dialog")
    expect(dialog).to_be_visible()
    seen = set()
    for key in ("Tab", "Tab", "Shift+Tab", "Shift+Tab"):
        riacho.keyboard.press(key)
        where = riacho.evaluate(_WHERE)
        # NOTE: past the dialog's last stop Chromium moves to its own UI (the body is active)
        assert where["inDialog"] or where["isBody"], f"after {key} focus went to {where}"
        seen.add(where["html"])
    assert len(seen) >= 2, f"Tab did not move inside the dialog: {seen}"
    dialog.locator("input[name=chat-new-title]").fill("Renamed on a phone")
    with riacho.expect_response(lambda r: r.request.method == "PATCH" and chat in r.url):
        dialog.locator("input[name=chat-new-title]").press("Enter")
    expect(_entry(riacho, chat).locator(".chat-item-title")).to_have_text("Renamed on a phone")


_WHERE = """() => { const el = document.activeElement;
  return { inDialog: !!el.closest('#chat-rename-dialog'), isBody: el === document.body,
           html: el.outerHTML.slice(0, 80) }; }"""


def test_delete_from_the_menu_asks_in_the_page_and_waits_for_the_server(riacho: Page) -> None:
    keep = _new_chat_with(riacho, "Keep me")
    doomed = _new_chat_with(riacho, "Delete me")
    native: list[str] = []
    riacho.on("dialog", lambda d: (native.append(d.type), d.dismiss()))

    _menu_button(riacho, doomed).click()
    riacho.locator("#chat-menu [data-action=chat-delete]").click()
    dialog = riacho.locator("#chat-delete-dialog")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("Delete me")
    dialog.locator("[data-action=close-dialog]").click()
    expect(dialog).to_be_hidden()
    expect(_entry(riacho, doomed)).to_have_count(1)

    held: list[Route] = []

    def hold_delete(route: Route) -> None:
        if route.request.method == "DELETE":
            held.append(route)
        else:
            route.continue_()

    riacho.route(f"**/api/chats/{doomed}", hold_delete)
    _menu_button(riacho, doomed).click()
    riacho.locator("#chat-menu [data-action=chat-delete]").click()
    dialog.locator("[data-action=confirm-chat-delete]").click()
    expect(dialog.locator("[data-dialog-note]")).to_have_text("Deleting…")
    riacho.wait_for_timeout(300)
    assert len(held) == 1 and held[0].request.method == "DELETE"
    expect(_entry(riacho, doomed)).to_have_count(1)  # NOTE: the server has not said yet
    held[0].continue_()
    expect(dialog).to_be_hidden()
    expect(_entry(riacho, doomed)).to_have_count(0)
    expect(_entry(riacho, keep)).to_have_count(1)
    assert native == [], "asked in the page, never by window.confirm"
    _reload(riacho)
    expect(_entry(riacho, doomed)).to_have_count(0)


# --- settings -----------------------------------------------------------------------------------


def test_the_theme_is_kept_and_applied_before_the_first_paint(riacho: Page) -> None:
    riacho.locator("[data-action=settings]").click()
    panel = riacho.locator("#settings")
    expect(panel).to_be_visible()
    with riacho.expect_response(lambda r: r.request.method == "PATCH" and "settings" in r.url):
        panel.locator("select[name=theme]").select_option("dark")
    expect(riacho.locator("html")).to_have_attribute("data-theme", "dark")
    expect(panel.locator("[data-dialog-note]")).to_have_text("Saved")
    assert riacho.request.get(_api(riacho, "/api/settings")).json()["theme"] == "dark"
    riacho.keyboard.press("Escape")
    expect(panel).to_be_hidden()

    # NOTE: read at the first paint's moment: when the document is parsed, long before Python
    riacho.reload(wait_until="domcontentloaded")
    seen = riacho.evaluate(
        "() => [document.documentElement.dataset.theme ?? null,"
        " getComputedStyle(document.body).backgroundColor,"
        " document.documentElement.hasAttribute('data-ready')]"
    )
    assert seen == ["dark", DARK_BG, False]
    riacho.wait_for_selector("html[data-ready]", state="attached", timeout=BOOT_TIMEOUT_MS)

    # another device of the same user: nothing kept on it, the server's copy is applied
    riacho.evaluate("() => localStorage.removeItem('riacho.theme')")
    _reload(riacho)
    expect(riacho.locator("html")).to_have_attribute("data-theme", "dark")
    assert riacho.evaluate("() => localStorage.getItem('riacho.theme')") == "dark"

    riacho.locator("[data-action=settings]").click()
    panel.locator("select[name=theme]").select_option("light")
    expect(panel.locator("[data-dialog-note]")).to_have_text("Saved")
    expect(riacho.locator("body")).to_have_css("background-color", LIGHT_BG)


def test_a_new_chat_starts_with_the_defaults_of_the_settings(riacho: Page) -> None:
    thinking, tools = (
        riacho.locator("[data-action=thinking]"),
        riacho.locator("[data-action=tools]"),
    )
    _new_chat_with(riacho, "A first chat")
    riacho.locator("[data-action=settings]").click()
    panel = riacho.locator("#settings")
    for name, value in (("default-model", "riacho-mini"),):
        panel.locator(f"select[name={name}]").select_option(value)
        expect(panel.locator("[data-dialog-note]")).to_have_text("Saved")
    for name in ("default-thinking", "default-tools"):
        with riacho.expect_response(lambda r: r.request.method == "PATCH"):
            panel.locator(f"input[name={name}]").check()
        expect(panel.locator("[data-dialog-note]")).to_have_text("Saved")
    panel.locator("[data-action=close-dialog]").click()
    expect(thinking).to_have_attribute("aria-pressed", "false")

    riacho.locator("[data-action=new-chat]").click()
    expect(thinking).to_have_attribute("aria-pressed", "true")
    expect(tools).to_have_attribute("aria-pressed", "true")
    expect(riacho.locator("select[name=model]")).to_have_value("riacho-mini")
    with riacho.expect_request("**/api/respond/stream") as sent:
        riacho.locator("textarea[name=prompt]").fill("With the defaults")
        riacho.locator("textarea[name=prompt]").press("Enter")
    body = sent.value.post_data_json
    assert (body["thinkingEnabled"], body["toolIntent"], body["modelId"]) == (
        True,
        True,
        "riacho-mini",
    )


# --- search -------------------------------------------------------------------------------------


def test_search_shows_why_a_chat_matched_and_is_driven_by_keys(riacho: Page) -> None:
    floods = _new_chat_with(riacho, "Tell me how the <b>Amazon</b> FLOODS every May")
    other = _new_chat_with(riacho, "Rivers floods and droughts")
    _new_chat_with(riacho, "Nothing to see")
    search = riacho.locator("input[name=chat-search]")
    search.fill("floods")
    results = riacho.locator("#chat-list [data-chat-id]")
    expect(results).to_have_count(2)
    snippet = _entry(riacho, floods).locator("[data-snippet]")
    expect(snippet).to_contain_text("<b>Amazon</b> FLOODS every May")
    expect(snippet.locator("mark")).to_have_text(["FLOODS"])
    expect(riacho.locator("#chat-list b")).to_have_count(0)

    search.press("ArrowDown")
    expect(results.nth(0)).to_be_focused()
    riacho.keyboard.press("ArrowDown")
    expect(results.nth(1)).to_be_focused()
    riacho.keyboard.press("ArrowUp")
    riacho.keyboard.press("ArrowUp")
    expect(search).to_be_focused()
    search.press("ArrowDown")
    target = str(results.nth(0).get_attribute("data-chat-id"))
    riacho.keyboard.press("Enter")
    expect(riacho.locator(f'#chat-list [data-chat-id="{target}"]')).to_have_attribute(
        "aria-current", "true"
    )
    assert target in (floods, other)

    results.nth(0).focus()
    riacho.keyboard.press("Escape")
    expect(search).to_have_value("")
    expect(search).to_be_focused()
    expect(riacho.locator("#chat-list [data-chat-id]")).to_have_count(3)
