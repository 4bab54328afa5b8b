"""The model's Python, run by the page (SPEC §13) in Chromium: the demo model, asked to
"run python: CODE", calls its ``python`` tool; the card shows the code with Run; the page runs it
in its sandbox and posts the result once; the answer goes on with it. Across a reload, two
tabs, the deadline, Stop, and "Run code automatically"."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Locator, Page, Response, expect

from tests.e2e.conftest import LiveServer, PageGuard, database, serve
from tests.e2e.scenarios import send

TIMEOUT_MS = 30_000
LATE_S = 3


@pytest.fixture(scope="module")
def python_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    workdir = tmp_path_factory.mktemp("python")
    db = database(str(workdir / "riacho.db"))
    with serve(workdir, ["server", "--db", db, "--demo-token-ms", "2"]) as server:
        yield server


@pytest.fixture(scope="module")
def late_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A server that waits only :data:`LATE_S` seconds for a page's result."""
    workdir = tmp_path_factory.mktemp("late")
    db = database(str(workdir / "riacho.db"))
    arguments = ["server", "--db", db, "--demo-token-ms", "2"]
    with serve(workdir, [*arguments, "--client-tool-timeout-s", str(LATE_S)]) as server:
        yield server


@pytest.fixture
def page_server(request: pytest.FixtureRequest) -> LiveServer:
    late = request.node.get_closest_marker("late") is not None
    server: LiveServer = request.getfixturevalue("late_server" if late else "python_server")
    return server


def _ask(app: Page, code: str) -> tuple[Locator, Locator]:
    """Ask the demo to run ``code``: this run's answer, and its card once it waits."""
    with app.expect_request("**/api/respond/stream") as sent:
        answer = send(app, f"Run python: {code}")
    assert json.loads(sent.value.post_data or "{}")["clientTools"] == ["python"]
    card = answer.locator('[data-tool-call-id][data-runs-in="client"]')
    expect(card).to_have_attribute("data-tool-status", "completed", timeout=TIMEOUT_MS)
    expect(card.locator(".tool-code")).to_have_text(code)
    return answer, card


def _calls(page: Page, run_id: str) -> list[dict[str, Any]]:
    """The run's calls as the server keeps them (read with the page's own session)."""
    answer = page.evaluate(
        "async (path) => (await fetch(path, {credentials: 'include'})).json()",
        f"/api/runs/{run_id}/tool-calls",
    )
    calls: list[dict[str, Any]] = answer["toolCalls"]
    return calls


def _results_posted(page: Page) -> list[int]:
    statuses: list[int] = []

    def on_response(response: Response) -> None:
        if re.search(r"/tool-calls/[^/]+/result$", response.url):
            statuses.append(response.status)

    page.on("response", on_response)
    return statuses


def test_the_code_runs_after_run_and_the_answer_goes_on_with_its_output(
    app: Page, page_server: LiveServer
) -> None:
    posted = _results_posted(app)
    answer, card = _ask(app, "print(6 * 7)")
    expect(card.locator(".tool-status")).to_have_text("Waits for this page to run it")
    assert posted == []  # NOTE: nothing runs before the user's Run
    card.locator("[data-action=approve-tool]").click()
    expect(answer).to_have_attribute("data-status", "completed", timeout=TIMEOUT_MS)
    expect(answer.locator(".message-text")).to_contain_text("The code printed: 42")
    expect(card).to_have_attribute("data-tool-status", "done")
    expect(card.locator("[data-code-output]")).to_have_attribute("data-run-state", "done")
    assert posted == [200]
    run_id = str(answer.get_attribute("data-run-id"))
    (call,) = _calls(app, run_id)
    assert call["result"]["stdout"] == "42\n" and call["isError"] is False


def test_a_reload_while_it_waits_offers_it_again_and_it_runs_once(
    app: Page, page_server: LiveServer
) -> None:
    answer, card = _ask(app, "print('after the reload')")
    run_id = str(answer.get_attribute("data-run-id"))
    call_id = str(card.get_attribute("data-tool-call-id"))
    app.reload()
    app.wait_for_selector("html[data-ready]", state="attached", timeout=TIMEOUT_MS)
    posted = _results_posted(app)
    waiting = app.locator(
        f'[data-run-id="{run_id}"] [data-tool-call-id="{call_id}"][data-runs-in="client"]'
    )
    expect(waiting.locator("[data-action=approve-tool]")).to_be_visible(timeout=TIMEOUT_MS)
    waiting.locator("[data-action=approve-tool]").click()
    answer = app.locator(f'[data-role=assistant][data-run-id="{run_id}"]')
    expect(answer).to_have_attribute("data-status", "completed", timeout=TIMEOUT_MS)
    expect(answer.locator(".message-text")).to_contain_text("The code printed: after the reload")
    assert posted == [200]
    assert [c["result"]["stdout"] for c in _calls(app, run_id)] == ["after the reload\n"]


def test_two_tabs_running_it_at_once_deliver_one_result(
    app: Page, guard: PageGuard, page_server: LiveServer
) -> None:
    guard.allow_console_error(r"status of 409")
    code = "import random\nprint(random.random())"
    answer, card = _ask(app, code)
    run_id = str(answer.get_attribute("data-run-id"))
    call_id = str(card.get_attribute("data-tool-call-id"))
    chat_id = app.locator("[data-chat-id][aria-current=true]").get_attribute("data-chat-id")
    other = app.context.new_page()
    guard.watch(other)
    other.goto(app.url)
    other.wait_for_selector("html[data-ready]", state="attached", timeout=TIMEOUT_MS)
    other.locator(f'#chat-list [data-chat-id="{chat_id}"]').click()
    other_card = other.locator(f'[data-run-id="{run_id}"] [data-tool-call-id="{call_id}"]')
    expect(other_card.locator("[data-action=approve-tool]")).to_be_visible(timeout=TIMEOUT_MS)
    first, second = _results_posted(app), _results_posted(other)
    first_run = card.locator("[data-action=approve-tool]").element_handle()
    second_run = other_card.locator("[data-action=approve-tool]").element_handle()
    first_run.evaluate("button => button.click()")
    second_run.evaluate("button => button.click()")
    for tab in (app, other):
        tab_answer = tab.locator(f'[data-role=assistant][data-run-id="{run_id}"]')
        expect(tab_answer).to_have_attribute("data-status", "completed", timeout=TIMEOUT_MS)
        # NOTE: the slower tab's code is stopped once the other tab's result stands (the call
        # no longer waits), unless it finished first: then its post is refused
        expect(tab.locator(f'[data-run-id="{run_id}"] [data-code-output]')).to_have_attribute(
            "data-run-state", re.compile("^(done|stopped)$"), timeout=TIMEOUT_MS
        )
    app.wait_for_function("() => true")  # NOTE: let the last response events arrive
    assert sorted(first + second) in ([200], [200, 409]), (first, second)
    (call,) = _calls(app, run_id)
    texts = {
        tab.locator(f'[data-role=assistant][data-run-id="{run_id}"] .message-text').inner_text()
        for tab in (app, other)
    }
    assert len(texts) == 1  # NOTE: both tabs show the one result that stands
    assert call["result"]["stdout"].strip() in texts.pop()


@pytest.mark.late
def test_no_page_within_the_deadline_tells_the_model_and_the_answer_goes_on(app: Page) -> None:
    answer, card = _ask(app, "print('never run')")
    expect(answer).to_have_attribute("data-status", "completed", timeout=TIMEOUT_MS)
    expect(answer.locator(".message-text")).to_contain_text("No browser ran the code in time")
    expect(card).to_have_attribute("data-tool-status", "error")
    expect(card.locator("[data-action=approve-tool]")).to_have_count(0)


def test_stop_while_it_runs_stops_the_run_and_the_code(app: Page, page_server: LiveServer) -> None:
    answer, card = _ask(app, "while True:\n    pass")
    card.locator("[data-action=approve-tool]").click()
    panel = card.locator("[data-code-output]")
    expect(panel).to_have_attribute("data-run-state", "running", timeout=TIMEOUT_MS)
    app.locator("[data-action=stop]").click()
    expect(answer).to_have_attribute("data-status", "cancelled", timeout=TIMEOUT_MS)
    expect(panel).to_have_attribute("data-run-state", "stopped", timeout=5_000)
    run_id = str(answer.get_attribute("data-run-id"))
    (call,) = _calls(app, run_id)
    assert call["isError"] is True and "stopped" in call["result"]["error"]


def test_with_run_code_automatically_on_the_next_code_runs_without_asking(app: Page) -> None:
    answer, card = _ask(app, "print(2 + 3)")
    card.locator("[name=auto-run-code]").check()  # NOTE: this one runs at once, as later ones
    expect(answer).to_have_attribute("data-status", "completed", timeout=TIMEOUT_MS)
    expect(answer.locator(".message-text")).to_contain_text("The code printed: 5")
    with app.expect_request("**/api/respond/stream"):
        later = send(app, "Run python: print(10 * 10)")
    expect(later).to_have_attribute("data-status", "completed", timeout=TIMEOUT_MS)
    expect(later.locator(".message-text")).to_contain_text("The code printed: 100")
    expect(later.locator("[data-code-output]")).to_have_attribute("data-run-state", "done")


def test_an_attachment_is_read_from_the_server_once_and_kept_on_the_device(app: Page) -> None:
    app.locator("input[type=file][name=attachments]").set_input_files(
        [{"name": "rain.csv", "mimeType": "text/csv", "buffer": b"city,mm\nPorto,30\nLisboa,10\n"}]
    )
    expect(app.locator("#attachment-list [data-file-state=ready]")).to_have_count(1)
    code = "import csv\nrows = list(csv.DictReader(open('/mnt/data/rain.csv')))\nprint(len(rows))"
    with app.expect_request(lambda r: "/api/attachments/" in r.url and r.method == "GET"):
        answer, card = _ask(app, code)
        card.locator("[data-action=approve-tool]").click()
    expect(answer.locator(".message-text")).to_contain_text(
        "The code printed: 2", timeout=TIMEOUT_MS
    )
    app.reload()
    app.wait_for_selector("html[data-ready]", state="attached", timeout=TIMEOUT_MS)
    reads: list[str] = []
    app.on("request", lambda r: reads.append(r.url) if "/api/attachments/" in r.url else None)
    again, card = _ask(app, "print(open('/mnt/data/rain.csv').read().count('\\n'))")
    card.locator("[data-action=approve-tool]").click()
    expect(again.locator(".message-text")).to_contain_text(
        "The code printed: 3", timeout=TIMEOUT_MS
    )
    assert [url for url in reads if "/api/attachments/" in url and "thumb" not in url] == []


def test_a_chats_time_limit_is_changed_under_a_run_and_the_limit_hit_is_said(app: Page) -> None:
    answer, card = _ask(app, "print('first')")
    card.locator("[data-action=approve-tool]").click()
    expect(answer).to_have_attribute("data-status", "completed", timeout=TIMEOUT_MS)
    limit = card.locator("[data-code-output] select[name=code-time-limit]")
    expect(limit).to_have_value("30")  # NOTE: the default
    limit.select_option("10")
    slow, slow_card = _ask(app, "while True:\n    pass")
    slow_card.locator("[data-action=approve-tool]").click()
    panel = slow_card.locator("[data-code-output]")
    expect(panel).to_have_attribute("data-run-state", "killed", timeout=TIMEOUT_MS)
    expect(panel).to_have_attribute("data-limit", "time")
    expect(panel.locator(".code-run-state")).to_contain_text("time limit of 10 s")
    expect(slow.locator(".message-text")).to_contain_text(
        "The code did not finish", timeout=TIMEOUT_MS
    )
    expect(panel.locator("select[name=code-time-limit]")).to_have_value("10")
