"""The first vertical slice: boot offline, send a prompt, watch the answer stream in."""

from __future__ import annotations

import json
from urllib.parse import urlparse

from playwright.sync_api import Page, Route, expect

from tests.e2e.conftest import BOOT_TIMEOUT_MS, LiveServer, PageGuard
from tests.e2e.scenarios import send


def test_page_shell_is_visible_and_typeable_before_python_starts(
    page: Page, live_server: LiveServer
) -> None:
    page.route("**/pyscript/core.js", lambda route: route.abort())
    page.goto(live_server.url + "/")
    expect(page.locator("#boot-text")).to_have_text("Starting Python in your browser…")
    expect(page.locator("textarea[name=prompt]")).to_be_enabled()
    page.locator("textarea[name=prompt]").fill("typed at once")
    expect(page.locator("textarea[name=prompt]")).to_have_value("typed at once")
    assert page.locator("html").get_attribute("data-ready") is None


def test_a_prompt_sent_before_python_is_ready_is_sent_once_after(
    page: Page, server: LiveServer, guard: PageGuard
) -> None:
    held: list[Route] = []
    page.route("**/app/main.py", lambda route: held.append(route))  # NOTE: held: no Python yet
    streams: list[str] = []
    page.on(
        "request",
        lambda request: (
            streams.append(request.post_data or "")
            if request.url.endswith("/api/respond/stream")
            else None
        ),
    )
    page.goto(server.url + "/", wait_until="domcontentloaded")  # NOTE: load waits for main.py
    prompt = page.locator("textarea[name=prompt]")
    expect(prompt).to_be_enabled()
    prompt.fill("Sent before the start")
    prompt.press("Enter")
    queued = page.locator("[data-queued]")
    expect(queued).to_contain_text("Sent before the start")
    expect(queued).to_contain_text("Queued")
    expect(prompt).to_have_value("")
    assert page.locator("html").get_attribute("data-ready") is None, "sent before data-ready"
    assert len(held) == 1
    held[0].continue_()

    page.wait_for_selector("html[data-ready]", state="attached", timeout=BOOT_TIMEOUT_MS)
    answer = page.locator("[data-role=assistant]")
    expect(answer).to_have_attribute("data-status", "completed", timeout=30_000)
    expect(page.locator("[data-role=user]")).to_have_text(["Sent before the start"])
    expect(queued).to_have_count(0)
    page.wait_for_timeout(500)
    assert len(streams) == 1 and json.loads(streams[0])["prompt"] == "Sent before the start"


# NOTE: when the page's Python begins to run app/main.py (PyScript's hook), page clock
PYTHON_RUNS_AT = """
import("/static/vendor/pyscript/core.js").then(({ hooks }) => {
  const runs = () => { window.__pythonRunsAt ??= performance.now(); };
  hooks.main.onBeforeRun.add(runs);
  hooks.main.onBeforeRunAsync.add(runs);
});
"""


def test_the_first_reads_are_made_once_while_python_starts(
    page: Page, server: LiveServer, guard: PageGuard
) -> None:
    page.add_init_script(PYTHON_RUNS_AT)
    early = ["/config.json", "/api/session", "/api/models", "/api/chats"]
    reads: list[str] = []
    page.on(
        "request",
        lambda request: (
            reads.append(urlparse(request.url).path)
            if urlparse(request.url).path in early
            else None
        ),
    )
    page.goto(server.url + "/")
    page.wait_for_selector("html[data-ready]", state="attached", timeout=BOOT_TIMEOUT_MS)

    expect(page.locator("select[name=model] option").first).to_be_attached()  # models read
    expect(page.locator("select[name=model]")).to_be_enabled()
    page.wait_for_timeout(300)
    assert sorted(reads) == sorted(early), "each read once, none again"
    begun: dict[str, float] = page.evaluate(
        """(early) => Object.fromEntries(performance.getEntriesByType("resource")
          .filter((e) => early.includes(new URL(e.name).pathname))
          .map((e) => [new URL(e.name).pathname, e.startTime]))""",
        early,
    )
    python_runs_at = page.evaluate("window.__pythonRunsAt")
    assert sorted(begun) == sorted(early) and isinstance(python_runs_at, (int, float))
    assert all(at < python_runs_at for at in begun.values()), (begun, python_runs_at)


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
    # NOTE: on a page without Riacho's policy (the app's own CSP refuses the fetch first).
    other = app.context.new_page()
    guard.watch(other)
    other.goto("about:blank")
    other.evaluate("fetch('http://example.invalid/x').then(() => 'reached', () => 'blocked')")
    assert guard.nonlocal_requests == ["http://example.invalid/x"]
    assert any("ERR_FAILED" in problem for problem in guard.problems)
    # NOTE: deliberate; the fixture would (rightly) fail this test otherwise.
    guard.nonlocal_requests.clear()
    guard.problems.clear()


def test_the_page_loads_under_a_strict_policy_and_it_holds(
    page: Page, guard: PageGuard, live_server: LiveServer
) -> None:
    violations = []
    page.on("console", lambda message: violations.append(message.text))
    with page.expect_response(live_server.url + "/") as loaded:
        page.goto(live_server.url + "/")
    page.wait_for_selector("html[data-ready]", state="attached", timeout=BOOT_TIMEOUT_MS)
    policy = loaded.value.headers["content-security-policy"]
    assert "default-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert "http" not in policy.replace("'self'", ""), "no remote origin is allowed"
    assert not [text for text in violations if "Content Security Policy" in text]
    guard.allow_console_error("Content Security Policy")
    refused = page.evaluate(
        "fetch('http://example.invalid/x').then(() => 'reached', (e) => 'refused')"
    )
    assert refused == "refused"
    assert guard.nonlocal_requests == [], "refused by the policy before any request"
    guard.problems.clear()
