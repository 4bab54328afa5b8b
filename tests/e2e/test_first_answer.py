"""The first vertical slice: boot offline, send a prompt, watch the answer stream in."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.e2e.conftest import LiveServer, PageGuard
from tests.e2e.scenarios import send


def test_page_shell_is_visible_before_python_starts(page: Page, live_server: LiveServer) -> None:
    page.route("**/pyscript/core.js", lambda route: route.abort())
    page.goto(live_server.url + "/")
    expect(page.locator("#boot-text")).to_have_text("Starting Python in your browser…")
    expect(page.locator("textarea[name=prompt]")).to_be_disabled()
    assert page.locator("html").get_attribute("data-ready") is None


def test_prompt_streams_answer_to_completion(app: Page) -> None:
    answer = send(app, "Hello there", press_enter=True)
    expect(app.locator("[data-role=user]")).to_have_text(["Hello there"])
    expect(answer).to_have_attribute("data-status", "completed", timeout=30_000)
    expect(answer.locator(".message-text")).not_to_be_empty()
    assert (answer.get_attribute("data-run-id") or "").startswith("run_")


def test_send_button_sends_too(app: Page) -> None:
    answer = send(app, "Via the button")
    expect(answer).to_have_attribute("data-status", "completed", timeout=30_000)


def test_loading_and_chatting_stays_on_this_machine(app: Page, guard: PageGuard) -> None:
    answer = send(app, "Anything off this machine?")
    expect(answer).to_have_attribute("data-status", "completed", timeout=30_000)
    assert any(url.endswith("/pyodide.asm.wasm") for url in guard.requests)
    assert any("/api/respond/stream" in url for url in guard.requests)
    assert guard.nonlocal_requests == []


def test_guard_catches_a_request_off_this_machine(app: Page, guard: PageGuard) -> None:
    app.evaluate("fetch('http://example.invalid/x').then(() => 'reached', () => 'blocked')")
    assert guard.nonlocal_requests == ["http://example.invalid/x"]
    assert any("ERR_FAILED" in problem for problem in guard.problems)
    # NOTE: deliberate; the fixture would (rightly) fail this test otherwise.
    guard.nonlocal_requests.clear()
    guard.problems.clear()
