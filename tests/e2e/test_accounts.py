"""Password accounts in Chromium: sign in, chat, sign out — and the chat is gone from reach."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import (
    BOOT_TIMEOUT_MS,
    LiveServer,
    PageGuard,
    add_password_user,
    database,
    serve,
)
from tests.e2e.scenarios import send

PASSWORD = "correct horse battery"


@pytest.fixture(scope="module")
def accounts_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    workdir = tmp_path_factory.mktemp("accounts")
    db = database(str(workdir / "riacho.db"))  # NOTE: in cluster mode, the workers' database
    add_password_user(db, "ana", PASSWORD)
    arguments = ["server", "--db", db, "--auth", "password", "--demo-token-ms", "2"]
    with serve(workdir, arguments) as server:
        yield server


def _sign_in(page: Page, password: str) -> None:
    page.locator("input[name=username]").fill("ana")
    page.locator("input[name=password]").fill(password)
    page.locator("form[name=sign-in] button[type=submit]").click()


def test_sign_in_chat_sign_out_and_the_chat_is_out_of_reach(
    page: Page, guard: PageGuard, accounts_server: LiveServer
) -> None:
    guard.allow_console_error(r"status of 401")
    page.goto(accounts_server.url + "/")
    form = page.locator("form[name=sign-in]")
    expect(form).to_be_visible(timeout=BOOT_TIMEOUT_MS)
    assert page.locator("html").get_attribute("data-ready") is None

    _sign_in(page, "not the password")
    expect(page.locator("#sign-in-error")).to_contain_text("invalid_credentials")
    _sign_in(page, PASSWORD)
    page.wait_for_selector("html[data-ready]", state="attached", timeout=BOOT_TIMEOUT_MS)
    expect(form).to_be_hidden()
    expect(page.locator("#account-name")).to_have_text("ana")
    session = {cookie["name"]: cookie for cookie in page.context.cookies()}["riacho_session"]
    assert (session["httpOnly"], session["sameSite"]) == (True, "Lax")

    answer = send(page, "Hello from a real account")
    expect(answer).to_have_attribute("data-status", "completed", timeout=30_000)
    chat_id = page.locator("[data-chat-id][aria-current=true]").get_attribute("data-chat-id")
    read = f"fetch('/api/chats/{chat_id}', {{credentials: 'include'}}).then((r) => r.status)"
    assert page.evaluate(read) == 200

    page.locator("[data-action=sign-out]").click()
    expect(page.locator("form[name=sign-in]")).to_be_visible(timeout=BOOT_TIMEOUT_MS)
    assert page.evaluate(read) == 401
    cookies = {cookie["name"]: cookie for cookie in page.context.cookies()}
    assert "riacho_session" not in cookies
