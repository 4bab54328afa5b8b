"""Tools that act in Chromium (SPEC §12): the demo model asks to save a note with the example
MCP server; the card waits for Approve / Deny; every line in the notes file is one execution."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Locator, Page, expect

from tests.e2e.conftest import LiveServer, PageGuard, database, serve
from tests.e2e.scenarios import send

ROOT = Path(__file__).resolve().parents[2]
NOTE = "Save a note that the river is high"
TIMEOUT_MS = 30_000


@pytest.fixture(scope="module")
def notes_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("notes") / "notes.txt"


@pytest.fixture(scope="module")
def tools_server(
    tmp_path_factory: pytest.TempPathFactory, notes_file: Path
) -> Iterator[LiveServer]:
    workdir = tmp_path_factory.mktemp("tools")
    config = workdir / "riacho.toml"
    config.write_text(
        "[[mcp]]\n"
        'name = "notes"\n'
        f'command = ["python", "{ROOT / "examples" / "notes_server.py"}"]\n'
        f'env = {{ NOTES_FILE = "{notes_file}" }}\n',
        encoding="utf-8",
    )
    db = database(str(workdir / "riacho.db"))
    arguments = ["server", "--db", db, "--config", str(config), "--demo-token-ms", "2"]
    with serve(workdir, arguments) as server:
        yield server


@pytest.fixture
def page_server(tools_server: LiveServer) -> LiveServer:
    return tools_server


def _lines(notes: Path) -> list[dict[str, Any]]:
    if not notes.exists():
        return []
    return [json.loads(line) for line in notes.read_text(encoding="utf-8").splitlines() if line]


def _ask(app: Page) -> tuple[Locator, Locator]:
    """Tools on, ask for a note: this run's answer, and its card once it waits."""
    tools = app.locator("[data-action=tools]")
    if tools.get_attribute("aria-pressed") != "true":
        tools.click()
    answer = send(app, NOTE)
    card = answer.locator('[data-tool-call-id][data-effect="awaiting_approval"]')
    expect(card).to_be_visible(timeout=TIMEOUT_MS)
    expect(card.locator(".tool-args")).to_contain_text("the river is high")
    return answer, card


def test_approve_saves_the_note_once_and_a_reload_does_not_save_it_again(
    app: Page, notes_file: Path
) -> None:
    before = len(_lines(notes_file))
    answer, card = _ask(app)
    run_id = answer.get_attribute("data-run-id")
    call_id = card.get_attribute("data-tool-call-id")
    assert len(_lines(notes_file)) == before  # NOTE: nothing acts before the decision
    card.locator("[data-action=approve-tool]").click()
    expect(answer).to_have_attribute("data-status", "completed", timeout=TIMEOUT_MS)
    done = answer.locator(f'[data-tool-call-id="{call_id}"]')
    expect(done).to_have_attribute("data-effect", "done")
    expect(answer.locator(".message-text")).to_contain_text("I saved the note.")
    assert _lines(notes_file)[before:] == [
        {"text": "the river is high", "key": f"{run_id}:{call_id}"}
    ]
    app.reload()
    app.wait_for_selector("html[data-ready]", state="attached", timeout=TIMEOUT_MS)
    again = app.locator(f'[data-run-id="{run_id}"] [data-tool-call-id="{call_id}"]')
    expect(again).to_have_attribute("data-effect", "done", timeout=TIMEOUT_MS)
    assert len(_lines(notes_file)) == before + 1


def test_deny_is_said_on_the_card_and_in_the_answer_and_nothing_is_saved(
    app: Page, notes_file: Path
) -> None:
    before = len(_lines(notes_file))
    answer, card = _ask(app)
    call_id = card.get_attribute("data-tool-call-id")
    card.locator("[data-action=deny-tool]").click()
    expect(answer).to_have_attribute("data-status", "completed", timeout=TIMEOUT_MS)
    denied = answer.locator(f'[data-tool-call-id="{call_id}"]')
    expect(denied).to_have_attribute("data-effect", "denied")
    expect(denied.locator(".tool-status")).to_contain_text("Denied")
    expect(answer.locator(".message-text")).to_contain_text("did not allow")
    assert len(_lines(notes_file)) == before


def test_a_reload_while_waiting_shows_the_waiting_card_and_approving_then_saves_once(
    app: Page, notes_file: Path
) -> None:
    before = len(_lines(notes_file))
    answer, card = _ask(app)
    run_id = answer.get_attribute("data-run-id")
    call_id = card.get_attribute("data-tool-call-id")
    app.reload()
    app.wait_for_selector("html[data-ready]", state="attached", timeout=TIMEOUT_MS)
    waiting = app.locator(
        f'[data-run-id="{run_id}"] [data-tool-call-id="{call_id}"][data-effect="awaiting_approval"]'
    )
    expect(waiting).to_be_visible(timeout=TIMEOUT_MS)
    waiting.locator("[data-action=approve-tool]").click()
    answer = app.locator(f'[data-role=assistant][data-run-id="{run_id}"]')
    expect(answer).to_have_attribute("data-status", "completed", timeout=TIMEOUT_MS)
    expect(answer.locator(f'[data-tool-call-id="{call_id}"]')).to_have_attribute(
        "data-effect", "done"
    )
    assert len(_lines(notes_file)) == before + 1


def test_two_tabs_deciding_at_once_take_one_decision(
    app: Page, guard: PageGuard, notes_file: Path
) -> None:
    guard.allow_console_error(r"status of 409")
    before = len(_lines(notes_file))
    answer, card = _ask(app)
    run_id = answer.get_attribute("data-run-id")
    call_id = card.get_attribute("data-tool-call-id")
    chat_id = app.locator("[data-chat-id][aria-current=true]").get_attribute("data-chat-id")
    other = app.context.new_page()
    guard.watch(other)
    other.goto(app.url)
    other.wait_for_selector("html[data-ready]", state="attached", timeout=TIMEOUT_MS)
    other.locator(f'#chat-list [data-chat-id="{chat_id}"]').click()
    other_card = other.locator(
        f'[data-run-id="{run_id}"] [data-tool-call-id="{call_id}"][data-effect="awaiting_approval"]'
    )
    expect(other_card).to_be_visible(timeout=TIMEOUT_MS)
    # NOTE: both buttons are found first, then pressed one right after the other: the
    # second may find its card already decided (its click then reaches nothing) or be
    # answered 409 decision_taken; either way one decision stands
    deny = other_card.locator("[data-action=deny-tool]").element_handle()
    approve = card.locator("[data-action=approve-tool]").element_handle()
    deny.evaluate("button => button.click()")
    approve.evaluate("button => button.click()")
    for tab in (app, other):
        tab_answer = tab.locator(f'[data-role=assistant][data-run-id="{run_id}"]')
        expect(tab_answer).to_have_attribute("data-status", "completed", timeout=TIMEOUT_MS)
    effects = {
        tab.locator(f'[data-run-id="{run_id}"] [data-tool-call-id="{call_id}"]').get_attribute(
            "data-effect"
        )
        for tab in (app, other)
    }
    assert len(effects) == 1, effects  # NOTE: both tabs show the one decision that stands
    (effect,) = effects
    assert effect in ("done", "denied")
    assert len(_lines(notes_file)) == before + (1 if effect == "done" else 0)


def test_regenerate_first_lists_the_actions_that_stay_done(app: Page, notes_file: Path) -> None:
    answer, card = _ask(app)
    run_id = answer.get_attribute("data-run-id")
    card.locator("[data-action=approve-tool]").click()
    expect(answer).to_have_attribute("data-status", "completed", timeout=TIMEOUT_MS)
    asked: list[str] = []

    def say_no(dialog: Any) -> None:
        asked.append(dialog.message)
        dialog.dismiss()

    app.once("dialog", say_no)
    answer.locator("[data-action=regenerate]").click()
    expect(answer).to_have_attribute("data-attempt", "1")
    assert len(asked) == 1 and "notes__save_note: done" in asked[0]
    app.once("dialog", lambda dialog: dialog.accept())
    with app.expect_request("**/api/respond/stream") as sent:
        answer.locator("[data-action=regenerate]").click()
    body = json.loads(sent.value.post_data or "{}")
    assert body.get("retryOfRunId") == run_id
    attempt = app.locator(f'[data-role=assistant][data-run-id="{body["runId"]}"]')
    expect(attempt).to_have_attribute("data-attempt", "2", timeout=TIMEOUT_MS)
    # NOTE: the new attempt asks anew (its own call); the first one's note stays saved once
    waiting = attempt.locator('[data-tool-call-id][data-effect="awaiting_approval"]')
    expect(waiting).to_be_visible(timeout=TIMEOUT_MS)
    waiting.locator("[data-action=deny-tool]").click()
    expect(attempt).to_have_attribute("data-status", "completed", timeout=TIMEOUT_MS)
    assert [line["key"].split(":")[0] for line in _lines(notes_file)].count(run_id) == 1
