"""Offline and install (SPEC §11): the service worker, a new build's offer, reading offline.

These tests allow the service worker (the rest of the suite blocks it, see conftest): it
controls the page from its second load on and answers the page's files from its cache.
"""

from __future__ import annotations

import re
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import dist
import pytest
from playwright.sync_api import Locator, Page, Response, Route, expect
from service_worker import WORKER_ACTIVE

from tests.e2e.conftest import (
    BOOT_TIMEOUT_MS,
    LiveServer,
    PageGuard,
    add_password_user,
    database,
    free_port,
    serve,
)
from tests.e2e.scenarios import STREAM_ROUTE, send
from tests.e2e.test_static_deploy import _static_host as static_host

STREAM_MS = 60_000
STREAM_PATH = "/api/respond/stream"
LONG_PROMPT = "Explain how a river forms, with a table of the five longest rivers"
BUILD = re.compile(r'"build":"([0-9a-f]+)"')
WAITING = """navigator.serviceWorker.getRegistration().then((registration) =>
new Promise((resolve) => {
  const check = () => registration.waiting && resolve(true);
  if (check()) return;
  registration.addEventListener("updatefound", () =>
    registration.installing.addEventListener("statechange", check));
  registration.update();
}))"""
CACHED_URLS = """caches.keys().then((names) => Promise.all(names.map((name) =>
  caches.open(name).then((cache) => cache.keys())
    .then((requests) => requests.map((request) => [name, request.url])))))
  .then((all) => all.flat())"""
BUILD_MARK = "--riacho-build"


@pytest.fixture
def browser_context_args(browser_context_args: dict[str, Any]) -> dict[str, Any]:
    return {**browser_context_args, "service_workers": "allow"}


def _boot(page: Page, url: str) -> None:
    page.goto(url)
    page.wait_for_selector("html[data-ready]", state="attached", timeout=BOOT_TIMEOUT_MS)


def _boot_controlled(page: Page, url: str) -> None:
    """Boot, wait for the worker to take over, and boot again under it."""
    _boot(page, url)
    page.evaluate(WORKER_ACTIVE)
    page.reload()
    page.wait_for_selector("html[data-ready]", state="attached", timeout=BOOT_TIMEOUT_MS)
    assert page.evaluate("navigator.serviceWorker.controller !== null")


def _served_build(url: str) -> str:
    with urllib.request.urlopen(url + "/sw.js", timeout=10) as response:
        assert response.headers["Cache-Control"] == "no-cache"  # NOTE: revalidated each load
        found = BUILD.search(response.read().decode())
    assert found is not None, "sw.js has no build written in"
    return found.group(1)


def test_the_worker_serves_this_builds_files_and_leaves_the_api_and_streams_alone(
    page: Page, guard: PageGuard, server: LiveServer
) -> None:
    _boot(page, server.url + "/")
    assert page.evaluate("navigator.serviceWorker.controller") is None  # NOTE: first load: none
    page.evaluate(WORKER_ACTIVE)
    build = _served_build(server.url)
    assert f"riacho-build-{build}" in page.evaluate("caches.keys()")

    answered: dict[str, Response] = {}
    page.on("response", lambda response: answered.setdefault(response.url, response))
    page.reload()
    page.wait_for_selector("html[data-ready]", state="attached", timeout=BOOT_TIMEOUT_MS)
    assert page.evaluate("navigator.serviceWorker.controller !== null")
    for path in ("/", "/static/riacho.css", "/app/main.py", "/static/vendor/pyodide/pyodide.mjs"):
        assert answered[server.url + path].from_service_worker, f"{path} not from the worker"
    assert not answered[server.url + "/api/session"].from_service_worker

    answer = send(page, "Hello under a service worker")
    expect(answer).to_have_attribute("data-status", "completed", timeout=STREAM_MS)
    stream_url = next(url for url in answered if url.endswith("/api/respond/stream"))
    assert not answered[stream_url].from_service_worker
    cached = page.evaluate(CACHED_URLS)
    assert [url for _, url in cached if "/api/" in url] == []
    assert {name for name, _ in cached if name.startswith("riacho-build-")} == {
        f"riacho-build-{build}"
    }


@pytest.fixture
def bundle_server(tmp_path: Path) -> Iterator[tuple[LiveServer, Path]]:
    """The reference server on a ``make dist`` bundle of its own, which a test may rebuild."""
    bundle = dist.build("", tmp_path / "dist")
    arguments = ["server", "--host", "127.0.0.1", "--db", str(tmp_path / "riacho.db")]
    options = ["--static-root", str(bundle), "--demo-token-ms", "25"]
    with serve(tmp_path, [*arguments, *options]) as live:
        yield live, bundle


def _build_mark(page: Page) -> str:
    script = f"getComputedStyle(document.documentElement).getPropertyValue('{BUILD_MARK}')"
    return str(page.evaluate(script)).strip()


def test_a_new_build_is_offered_never_mid_answer_and_never_mixed_in(
    page: Page, guard: PageGuard, bundle_server: tuple[LiveServer, Path]
) -> None:
    live, bundle = bundle_server
    _boot_controlled(page, live.url + "/")
    first = _served_build(live.url)
    offer = page.locator("[data-action=update-app]")
    expect(offer).to_be_hidden()

    stylesheet = bundle / "static" / "riacho.css"
    stylesheet.write_text(stylesheet.read_text() + f"\n:root {{ {BUILD_MARK}: two; }}\n")
    assert _served_build(live.url) != first
    page.evaluate(WAITING)
    expect(offer).to_be_visible()
    expect(page.locator("#app-update")).to_contain_text("A new version is ready")

    # A reload keeps the build the page started with: nothing of the new one mixed in.
    page.reload()
    page.wait_for_selector("html[data-ready]", state="attached", timeout=BOOT_TIMEOUT_MS)
    assert _build_mark(page) == ""
    expect(offer).to_be_visible()

    answer = send(page, LONG_PROMPT)
    expect(answer).to_have_attribute("data-status", "receiving", timeout=STREAM_MS)
    expect(offer).to_be_hidden()  # NOTE: never offered while an answer arrives
    expect(answer).to_have_attribute("data-status", "completed", timeout=STREAM_MS)
    expect(offer).to_be_visible()

    with page.expect_navigation():
        offer.click()
    page.wait_for_selector("html[data-ready]", state="attached", timeout=BOOT_TIMEOUT_MS)
    assert _build_mark(page) == "two"
    second = _served_build(live.url)
    names = [name for name in page.evaluate("caches.keys()") if name.startswith("riacho-build-")]
    assert names == [f"riacho-build-{second}"]


OFFLINE_ERRORS = r"ERR_INTERNET_DISCONNECTED|ERR_CONNECTION_REFUSED|Failed to fetch"
PROBE_QUERY = "?reachProbeMs=300"


@pytest.fixture
def restartable(tmp_path: Path) -> Iterator[Restartable]:
    holder = Restartable(tmp_path, free_port())
    try:
        yield holder
    finally:
        holder.stop()


class Restartable:
    """The reference server on one port and one database, stopped and started again."""

    def __init__(self, workdir: Path, port: int) -> None:
        self.workdir, self.port = workdir, port
        self.url = f"http://127.0.0.1:{port}"
        self._running: ExitStack | None = None
        self.start()

    def start(self) -> None:
        stack = ExitStack()
        arguments = ["server", "--host", "127.0.0.1", "--db", database(str(self.workdir / "r.db"))]
        stack.enter_context(
            serve(self.workdir, [*arguments, "--demo-token-ms", "5"], port=self.port)
        )
        self._running = stack

    def stop(self) -> None:
        if self._running is not None:
            self._running.close()
            self._running = None


def _chat_text(page: Page) -> str:
    return page.locator("#message-column").inner_text()


def _open_chat(page: Page, chat_id: str) -> None:
    page.locator(f'[data-chat-id="{chat_id}"]').first.click()
    expect(page.locator(f'[data-chat-id="{chat_id}"][aria-current="true"]')).to_have_count(1)
    expect(page.locator("[data-role=assistant]").first).to_be_visible()


def _two_chats(page: Page) -> dict[str, str]:
    """Two chats, each with one answer; the text of each as shown, by chat id."""
    shown: dict[str, str] = {}
    for prompt in ("Hello, kept for later", "A second chat to read on a train"):
        page.locator("[data-action=new-chat]").click()
        answer = send(page, prompt)
        expect(answer).to_have_attribute("data-status", "completed", timeout=STREAM_MS)
        chat_id = page.evaluate("location.hash.slice(1)")
        listed = page.locator(f'#chat-list [data-chat-id="{chat_id}"]')
        expect(listed).to_have_count(1)
        expect(listed).not_to_contain_text("New chat")  # NOTE: named by the server by now
        shown[chat_id] = _chat_text(page)
    return shown


def first_chat(shown: dict[str, str]) -> str:
    return next(iter(shown))


def _titles(page: Page) -> list[str]:
    return page.locator("#chat-list [data-chat-id]").all_inner_texts()


def test_offline_the_page_opens_lists_its_chats_and_shows_each_as_last_seen(
    page: Page, guard: PageGuard, restartable: Restartable
) -> None:
    guard.allow_console_error(OFFLINE_ERRORS)
    _boot_controlled(page, restartable.url + "/" + PROBE_QUERY)
    shown = _two_chats(page)
    titles = _titles(page)
    notice = page.locator("[data-offline]")
    expect(notice).to_have_count(0)

    page.context.set_offline(True)
    expect(notice).to_be_visible()  # NOTE: the browser said so: no request needed to know
    page.reload()
    page.wait_for_selector("html[data-ready]", state="attached", timeout=BOOT_TIMEOUT_MS)
    expect(notice).to_contain_text("Offline")
    expect(notice).to_contain_text("wait")
    assert _titles(page) == titles
    for chat_id, text in shown.items():
        _open_chat(page, chat_id)
        assert _chat_text(page) == text

    # Renamed on the server meanwhile (as from another device): back online, the list says so.
    renamed = page.context.request.patch(
        f"{restartable.url}/api/chats/{first_chat(shown)}", data={"title": "Renamed elsewhere"}
    )
    assert renamed.ok, renamed.text()
    page.context.set_offline(False)
    expect(notice).to_have_count(0, timeout=10_000)
    expect(page.locator(f'[data-chat-id="{first_chat(shown)}"]')).to_contain_text(
        "Renamed elsewhere"
    )
    titles = _titles(page)

    # The server itself gone (the network up): the same, and it is noticed when it is back.
    restartable.stop()
    page.reload()
    page.wait_for_selector("html[data-ready]", state="attached", timeout=BOOT_TIMEOUT_MS)
    expect(notice).to_be_visible()
    assert _titles(page) == titles
    first = first_chat(shown)
    _open_chat(page, first)
    assert _chat_text(page) == shown[first]
    restartable.start()
    expect(notice).to_have_count(0, timeout=10_000)
    answer = send(page, "Back on the line")
    expect(answer).to_have_attribute("data-status", "completed", timeout=STREAM_MS)


PASSWORD = "a train through a tunnel"
DEVICE_CACHES = "caches.keys().then((names) => names.filter((n) => n.startsWith('riacho-device-')))"
RIACHO_KEYS = "Object.keys(localStorage).filter((key) => key.startsWith('riacho.'))"


@pytest.fixture
def two_users(tmp_path: Path) -> Iterator[LiveServer]:
    db = database(str(tmp_path / "riacho.db"))
    for name in ("ana", "bea"):
        add_password_user(db, name, PASSWORD)
    arguments = ["server", "--db", db, "--auth", "password", "--demo-token-ms", "2"]
    with serve(tmp_path, arguments) as live:
        yield live


def _signed_in_as(page: Page, name: str) -> None:
    expect(page.locator("form[name=sign-in]")).to_be_visible(timeout=BOOT_TIMEOUT_MS)
    page.locator("input[name=username]").fill(name)
    page.locator("input[name=password]").fill(PASSWORD)
    page.locator("form[name=sign-in] button[type=submit]").click()
    page.wait_for_selector("html[data-ready]", state="attached", timeout=BOOT_TIMEOUT_MS)
    expect(page.locator("#account-name")).to_have_text(name)


def _chat_of_ones_own(page: Page, prompt: str) -> None:
    answer = send(page, prompt)
    expect(answer).to_have_attribute("data-status", "completed", timeout=STREAM_MS)
    chat_id = page.evaluate("location.hash.slice(1)")
    expect(page.locator(f'[data-chat-id="{chat_id}"]')).to_have_count(1)


def _offline_titles(page: Page) -> str:
    """The chat list of a page reloaded with no network."""
    page.context.set_offline(True)
    page.reload()
    page.wait_for_selector("html[data-ready]", state="attached", timeout=BOOT_TIMEOUT_MS)
    expect(page.locator("[data-offline]")).to_be_visible()
    titles = page.locator("#chat-list").inner_text()
    page.context.set_offline(False)
    return titles


def test_what_is_kept_is_the_signed_in_users_only(
    page: Page, guard: PageGuard, two_users: LiveServer
) -> None:
    guard.allow_console_error(r"status of 401")
    guard.allow_console_error(OFFLINE_ERRORS)
    page.goto(two_users.url + "/")
    _signed_in_as(page, "ana")
    page.evaluate(WORKER_ACTIVE)
    _chat_of_ones_own(page, "Ana's plan for the weekend")
    assert len(page.evaluate(DEVICE_CACHES)) == 1
    assert "Ana" in _offline_titles(page)
    expect(page.locator("[data-offline]")).to_have_count(0, timeout=10_000)

    # Sign-out removes everything of hers from the device.
    with page.expect_navigation():
        page.locator("[data-action=sign-out]").click()
    expect(page.locator("form[name=sign-in]")).to_be_visible(timeout=BOOT_TIMEOUT_MS)
    assert page.evaluate(DEVICE_CACHES) == []
    assert page.evaluate(RIACHO_KEYS) == []

    _signed_in_as(page, "bea")
    _chat_of_ones_own(page, "Bea's shopping list")
    bea_offline = _offline_titles(page)
    assert "Bea" in bea_offline
    assert "Ana" not in bea_offline
    expect(page.locator("[data-offline]")).to_have_count(0, timeout=10_000)

    # Another user on this browser without a sign-out (the session cookie gone): the page
    # started for her forgets Bea's copies before it keeps anything of hers.
    page.context.clear_cookies()
    page.reload()
    _signed_in_as(page, "ana")
    assert len(page.evaluate(DEVICE_CACHES)) == 1
    ana_offline = _offline_titles(page)
    assert "Ana" in ana_offline
    assert "Bea" not in ana_offline


def _queue(page: Page, prompt: str) -> Locator:
    """Send ``prompt`` offline; its waiting prompt (by the words, never "the last one")."""
    page.locator("textarea[name=prompt]").fill(prompt)
    page.locator("[data-action=send]").click()
    waiting = page.locator("[data-queued]", has_text=prompt)
    expect(waiting).to_be_visible()
    return waiting


def _runs_on_server(page: Page, url: str, chat_id: str, run_id: str) -> int:
    chat = page.context.request.get(f"{url}/api/chats/{chat_id}").json()
    return sum(message.get("runId") == run_id for message in chat["messages"])


def test_prompts_sent_offline_wait_survive_a_reload_and_are_answered_exactly_once(
    page: Page, guard: PageGuard, restartable: Restartable
) -> None:
    guard.allow_console_error(OFFLINE_ERRORS)
    guard.allow_console_error(r"net::ERR_FAILED|status of 409")  # NOTE: the lost answer's
    _boot_controlled(page, restartable.url + "/" + PROBE_QUERY)
    first = send(page, "Hello before the tunnel")
    expect(first).to_have_attribute("data-status", "completed", timeout=STREAM_MS)
    chat_id = page.evaluate("location.hash.slice(1)")
    posted: list[str] = []
    page.on("request", lambda r: posted.append(r.url) if r.url.endswith(STREAM_PATH) else None)

    page.context.set_offline(True)
    expect(page.locator("[data-offline]")).to_be_visible()
    waiting = _queue(page, "Which river is the longest?")
    expect(waiting).to_contain_text("Waiting for the connection")
    run_id = str(waiting.get_attribute("data-run-id"))
    removed = _queue(page, "A prompt I change my mind about")
    removed.locator("[data-action=remove-queued]").click()
    expect(removed).to_have_count(0)
    edited = _queue(page, "A prompt with a tpyo")
    edited.locator("[data-action=edit-queued]").click()
    expect(edited).to_have_count(0)
    expect(page.locator("textarea[name=prompt]")).to_have_value("A prompt with a tpyo")
    page.locator("textarea[name=prompt]").fill("")

    page.reload()  # NOTE: offline: the page and the queue come from the device
    page.wait_for_selector("html[data-ready]", state="attached", timeout=BOOT_TIMEOUT_MS)
    waiting = page.locator(f'[data-queued][data-run-id="{run_id}"]')
    expect(waiting).to_contain_text("Which river is the longest?")
    expect(page.locator("[data-queued]")).to_have_count(1)
    assert posted == []

    # Back online, the first request reaches the server but its answer is lost on the way
    # back; the page sends it again with the same run id and attaches to the run it made.
    lost: list[str] = []

    def lose_the_answer(route: Route) -> None:
        route.fetch()
        lost.append(route.request.url)
        route.abort()

    page.route(STREAM_ROUTE, lose_the_answer, times=1)
    page.context.set_offline(False)
    answer = page.locator(f'[data-role=assistant][data-run-id="{run_id}"]')
    expect(answer).to_have_attribute("data-status", "completed", timeout=STREAM_MS)
    expect(page.locator("[data-queued]")).to_have_count(0)
    assert len(lost) == 1
    assert len(posted) == 2  # NOTE: the lost one and the one answered 409 run_exists
    assert _runs_on_server(page, restartable.url, chat_id, run_id) == 1
    page.reload()
    page.wait_for_selector("html[data-ready]", state="attached", timeout=BOOT_TIMEOUT_MS)
    expect(answer).to_have_attribute("data-status", "completed")
    expect(page.locator("[data-queued]")).to_have_count(0)


def test_a_prompt_queued_while_the_server_is_down_goes_when_it_is_back(
    page: Page, guard: PageGuard, restartable: Restartable
) -> None:
    guard.allow_console_error(OFFLINE_ERRORS)
    _boot_controlled(page, restartable.url + "/" + PROBE_QUERY)
    restartable.stop()
    page.locator("[data-action=new-chat]").click()
    page.locator("textarea[name=prompt]").fill("Sent while the server was down")
    page.locator("[data-action=send]").click()
    # NOTE: the browser still says online: the failed request tells the page
    waiting = page.locator("[data-queued]", has_text="Sent while the server was down")
    expect(waiting).to_be_visible()
    expect(page.locator("[data-offline]")).to_be_visible()
    run_id = str(waiting.get_attribute("data-run-id"))
    restartable.start()
    answer = page.locator(f'[data-role=assistant][data-run-id="{run_id}"]')
    expect(answer).to_have_attribute("data-status", "completed", timeout=STREAM_MS)
    expect(page.locator("[data-offline]")).to_have_count(0)
    chat_id = page.evaluate("location.hash.slice(1)")
    expect(page.locator(f'#chat-list [data-chat-id="{chat_id}"]')).to_have_count(1)
    assert _runs_on_server(page, restartable.url, chat_id, run_id) == 1


def test_a_static_deploy_on_another_origin_opens_and_reads_offline(
    page: Page, guard: PageGuard, tmp_path: Path
) -> None:
    """``make dist`` on a plain static host, the API on another origin: the worker is the
    bundle's, and the copies are of the API the bundle names."""
    guard.allow_console_error(OFFLINE_ERRORS)
    page_port = free_port()
    page_origin = f"http://127.0.0.1:{page_port}"
    db = database(str(tmp_path / "riacho.db"))
    arguments = ["server", "--db", db, "--allowed-origin", page_origin, "--demo-token-ms", "2"]
    with serve(tmp_path, arguments) as api:
        bundle = dist.build(api.url, tmp_path / "dist")
        with static_host(bundle, page_port, tmp_path / "static-host.log"):
            _boot_controlled(page, page_origin + "/")
            answer = send(page, "Hello from a static host")
            expect(answer).to_have_attribute("data-status", "completed", timeout=STREAM_MS)
            chat_id = page.evaluate("location.hash.slice(1)")
            expect(page.locator(f'[data-chat-id="{chat_id}"]')).to_have_count(1)
            shown = _chat_text(page)
            page.context.set_offline(True)
            page.reload()
            page.wait_for_selector("html[data-ready]", state="attached", timeout=BOOT_TIMEOUT_MS)
            expect(page.locator("[data-offline]")).to_be_visible()
            expect(page.locator(f'[data-chat-id="{chat_id}"]')).to_have_count(1)
            assert _chat_text(page) == shown
