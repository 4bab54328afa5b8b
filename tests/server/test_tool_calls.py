"""Tools that act, at most once (server/tools/calls.py, approvals.py, store/tool_calls.py), run
against the real example MCP server: every line in its notes file is one execution."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from app.wire.protocol import StreamEvent, ToolApprovalRequestedEvent, ToolDecidedEvent
from server.config.tools import McpSettings
from server.contract.tool_effects import TRANSITIONS, after
from server.store import tool_calls
from server.store.db import Database, open_database
from server.tools.approvals import DecisionBell, decide
from server.tools.calls import CallOutcome, ToolRoom, run_call
from server.tools.connections import McpServers, McpTool
from tests.mcp_notes import cancelled, saved, stdio_settings

KEY, RUN = "user_1/run_1", "run_1"


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = open_database(str(tmp_path / "riacho.db"))
    await database.open()
    yield database
    await database.close()


async def _servers(settings: McpSettings) -> McpServers:
    servers = McpServers((settings,))
    await servers.start()
    return servers


def _room(db: Database, servers: McpServers, bell: DecisionBell, timeout_s: float = 60) -> ToolRoom:
    return ToolRoom(db, servers, bell, KEY, RUN, timeout_s)


def _tool(servers: McpServers, name: str) -> McpTool:
    tool = servers.find(f"notes__{name}")
    assert tool is not None
    return tool


async def _play(
    room: ToolRoom, tool: McpTool, call_id: str, arguments: dict[str, Any]
) -> tuple[list[StreamEvent], CallOutcome]:
    events: list[StreamEvent] = []
    outcome = None
    async for item in run_call(room, tool, call_id, arguments):
        if isinstance(item, CallOutcome):
            outcome = item
        else:
            events.append(item)
    assert outcome is not None
    return events, outcome


async def _waiting(db: Database, call_id: str) -> None:
    while (await tool_calls.get(db, KEY, call_id)) is None:
        await asyncio.sleep(0.01)


@pytest.fixture
async def notes(tmp_path: Path) -> AsyncIterator[tuple[McpServers, Path]]:
    path = tmp_path / "notes.txt"
    servers = await _servers(stdio_settings(path))
    yield servers, path
    await servers.stop()


@pytest.mark.parametrize(
    ("state", "transition", "expected"),
    [
        pytest.param("awaiting_approval", "approve", "approved", id="approve"),
        pytest.param("awaiting_approval", "deny", "denied", id="deny"),
        pytest.param("denied", "approve", None, id="a-denial-stands"),
        pytest.param("approved", "deny", None, id="an-approval-stands"),
        pytest.param("approved", "start", "running", id="start"),
        pytest.param("running", "start", None, id="never-started-twice"),
        pytest.param("done", "start", None, id="a-done-call-never-runs-again"),
        pytest.param("running", "lose", "unknown", id="lost-mid-call-is-unknown"),
        pytest.param("approved", "lose", "failed", id="lost-before-start-never-ran"),
        pytest.param("awaiting_approval", "lose", "denied", id="stop-while-waiting-denies"),
        pytest.param("unknown", "finish", None, id="unknown-stays-unknown"),
        pytest.param("awaiting_client", "finish", "done", id="a-page-result"),
        pytest.param("awaiting_client", "fail", "failed", id="a-page-error-or-the-deadline"),
        pytest.param("awaiting_client", "lose", "failed", id="stop-while-a-page-runs-it"),
        pytest.param("done", "finish", None, id="the-first-page-result-stands"),
        pytest.param("awaiting_client", "approve", None, id="a-page-call-is-not-approved-here"),
    ],
)
def test_transitions(state: Any, transition: Any, expected: Any) -> None:
    assert after(state, transition) == expected


def test_no_transition_leaves_a_final_state() -> None:
    assert not any(state in ("denied", "done", "failed", "unknown") for state, _ in TRANSITIONS)


async def test_a_read_only_tool_runs_without_asking(
    db: Database, notes: tuple[McpServers, Path]
) -> None:
    servers, _path = notes
    events, outcome = await _play(
        _room(db, servers, DecisionBell()), _tool(servers, "list_notes"), "c1", {}
    )
    assert events == []
    assert (outcome.effect, outcome.is_error) == ("none", False)
    assert outcome.result == {"text": "(no notes yet)"}


async def test_an_approved_call_runs_once_with_its_idempotency_key(
    db: Database, notes: tuple[McpServers, Path]
) -> None:
    servers, path = notes
    bell = DecisionBell()
    play = asyncio.create_task(
        _play(_room(db, servers, bell), _tool(servers, "save_note"), "c1", {"text": "river high"})
    )
    await _waiting(db, "c1")
    assert saved(path) == []  # NOTE: nothing happens before the decision
    decided = await decide(db, bell, KEY, "c1", True, "user")
    assert decided is not None and decided.taken_now and decided.answer == "approved"
    events, outcome = await play
    assert [type(e) for e in events] == [ToolApprovalRequestedEvent, ToolDecidedEvent]
    assert isinstance(events[1], ToolDecidedEvent) and events[1].by == "user"
    assert (outcome.effect, outcome.is_error) == ("done", False)
    assert saved(path) == [{"text": "river high", "key": "run_1:c1"}]


async def test_a_replay_of_the_run_reads_the_ledger_and_never_runs_again(
    db: Database, notes: tuple[McpServers, Path]
) -> None:
    servers, path = notes
    bell = DecisionBell()
    room, tool = _room(db, servers, bell), _tool(servers, "save_note")
    play = asyncio.create_task(_play(room, tool, "c1", {"text": "once"}))
    await _waiting(db, "c1")
    await decide(db, bell, KEY, "c1", True, "user")
    _events, first = await play
    events, again = await _play(room, tool, "c1", {"text": "once"})
    assert events == []  # NOTE: no second approval either
    assert again == first
    assert len(saved(path)) == 1


async def test_a_repeated_decision_stands_and_the_other_one_is_refused(
    db: Database, notes: tuple[McpServers, Path]
) -> None:
    servers, path = notes
    bell = DecisionBell()
    play = asyncio.create_task(
        _play(_room(db, servers, bell), _tool(servers, "save_note"), "c1", {"text": "x"})
    )
    await _waiting(db, "c1")
    first, same, other = await asyncio.gather(
        decide(db, bell, KEY, "c1", True, "user"),
        decide(db, bell, KEY, "c1", True, "user"),
        decide(db, bell, KEY, "c1", False, "user"),
    )
    await play
    decisions = [first, same, other]
    assert all(d is not None and d.answer == "approved" for d in decisions)
    assert sum(d.taken_now for d in decisions if d is not None) == 1
    assert len(saved(path)) == 1


async def test_two_runners_of_one_call_execute_it_once(
    db: Database, notes: tuple[McpServers, Path]
) -> None:
    servers, path = notes
    bell = DecisionBell()
    room, tool = _room(db, servers, bell), _tool(servers, "save_note")
    plays = [asyncio.create_task(_play(room, tool, "c1", {"text": "x"})) for _ in range(2)]
    await _waiting(db, "c1")
    await decide(db, bell, KEY, "c1", True, "user")
    outcomes = [outcome for _events, outcome in await asyncio.gather(*plays)]
    assert len(saved(path)) == 1
    assert "done" in {o.effect for o in outcomes}


async def test_a_denial_is_told_to_the_model_and_nothing_runs(
    db: Database, notes: tuple[McpServers, Path]
) -> None:
    servers, path = notes
    bell = DecisionBell()
    play = asyncio.create_task(
        _play(_room(db, servers, bell), _tool(servers, "save_note"), "c1", {"text": "x"})
    )
    await _waiting(db, "c1")
    await decide(db, bell, KEY, "c1", False, "user", "not now")
    events, outcome = await play
    assert isinstance(events[-1], ToolDecidedEvent) and not events[-1].approved
    assert outcome.effect == "denied" and outcome.is_error
    assert isinstance(outcome.result, dict)
    assert outcome.result["by"] == "user" and outcome.result["reason"] == "not now"
    assert "denied" in str(outcome.result["message"])
    assert saved(path) == []


async def test_no_decision_by_the_deadline_is_a_denial(
    db: Database, notes: tuple[McpServers, Path]
) -> None:
    servers, path = notes
    room = _room(db, servers, DecisionBell(), timeout_s=0.3)
    events, outcome = await _play(room, _tool(servers, "save_note"), "c1", {"text": "x"})
    assert isinstance(events[-1], ToolDecidedEvent)
    assert (events[-1].approved, events[-1].by) == (False, "timeout")
    assert outcome.effect == "denied"
    assert saved(path) == []


async def test_stop_while_waiting_denies_and_a_later_approval_finds_it_taken(
    db: Database, notes: tuple[McpServers, Path]
) -> None:
    servers, path = notes
    bell = DecisionBell()
    play = asyncio.create_task(
        _play(_room(db, servers, bell), _tool(servers, "save_note"), "c1", {"text": "x"})
    )
    await _waiting(db, "c1")
    play.cancel()
    with pytest.raises(asyncio.CancelledError):
        await play
    late = await decide(db, bell, KEY, "c1", True, "user")
    assert late is not None and not late.taken_now and late.answer == "denied"
    record = await tool_calls.get(db, KEY, "c1")
    assert record is not None and (record.effect, record.decided_by) == ("denied", "stop")
    assert saved(path) == []


async def test_a_worker_lost_mid_call_leaves_unknown_and_nothing_runs_it_again(
    db: Database, notes: tuple[McpServers, Path]
) -> None:
    servers, path = notes
    room, tool = _room(db, servers, DecisionBell()), _tool(servers, "save_note")
    await tool_calls.open_call(
        db, KEY, "c1", tool.qualified_name, {"text": "x"}, acts=True, deadline_at=None
    )
    await tool_calls.move(db, KEY, "c1", "approve", decided_by="user")
    await tool_calls.move(db, KEY, "c1", "start")  # NOTE: the worker died right after this
    assert await tool_calls.lose_open_calls(db, KEY, "the worker ended") == 1
    events, outcome = await _play(room, tool, "c1", {"text": "x"})
    assert events == [] and outcome.effect == "unknown"
    assert "may have happened" in str(outcome.result)
    assert saved(path) == []


async def _until_running(db: Database, call_id: str) -> None:
    while True:
        record = await tool_calls.get(db, KEY, call_id)
        if record is not None and record.state == "running":
            return
        await asyncio.sleep(0.02)


async def test_stop_mid_call_sends_mcp_cancellation_and_leaves_unknown(
    db: Database, tmp_path: Path
) -> None:
    path = tmp_path / "notes.txt"
    servers = await _servers(stdio_settings(path, slow_s=60))
    try:
        bell = DecisionBell()
        play = asyncio.create_task(
            _play(_room(db, servers, bell), _tool(servers, "save_note"), "c1", {"text": "x"})
        )
        await _waiting(db, "c1")
        await decide(db, bell, KEY, "c1", True, "user")
        await _until_running(db, "c1")
        play.cancel()
        with pytest.raises(asyncio.CancelledError):
            await play
        record = await tool_calls.get(db, KEY, "c1")
        assert record is not None and record.effect == "unknown"
        async with asyncio.timeout(20):
            while not cancelled(path):
                await asyncio.sleep(0.05)
        assert cancelled(path) == [{"cancelled": "run_1:c1"}]
        assert saved(path) == []
    finally:
        await servers.stop()


async def test_a_call_past_its_time_limit_is_unknown_not_failed(
    db: Database, tmp_path: Path
) -> None:
    path = tmp_path / "notes.txt"
    servers = await _servers(stdio_settings(path, slow_s=60, call_timeout_s=0.5))
    try:
        room = _room(db, servers, DecisionBell())
        tool = _tool(servers, "save_note")
        await tool_calls.open_call(
            db, KEY, "c1", tool.qualified_name, {"text": "x"}, acts=True, deadline_at=None
        )
        await tool_calls.move(db, KEY, "c1", "approve", decided_by="user")
        _events, outcome = await _play(room, tool, "c1", {"text": "x"})
        assert outcome.effect == "unknown"
        assert "0.5 s" in str(outcome.result) and "may have happened" in str(outcome.result)
        assert saved(path) == []
    finally:
        await servers.stop()


async def test_a_long_result_is_cut_with_a_note_for_the_model(db: Database, tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text(
        "".join(json.dumps({"text": "n" * 100, "key": str(i)}) + "\n" for i in range(50)),
        encoding="utf-8",
    )
    servers = await _servers(stdio_settings(path, result_max_chars=1000))
    try:
        room = _room(db, servers, DecisionBell())
        _events, outcome = await _play(room, _tool(servers, "list_notes"), "c1", {})
        assert isinstance(outcome.result, dict)
        assert len(str(outcome.result["text"])) == 1000
        assert "cut at 1000 of" in str(outcome.result["truncated"])
    finally:
        await servers.stop()


async def test_a_tool_error_is_said_in_words_and_the_call_failed(
    db: Database, tmp_path: Path
) -> None:
    path = tmp_path / "notes.txt"
    servers = await _servers(stdio_settings(path, read_only=("save_note",)))
    try:
        room = _room(db, servers, DecisionBell())
        _events, outcome = await _play(room, _tool(servers, "save_note"), "c1", {})
        assert outcome.is_error and isinstance(outcome.result, dict)
        assert "text" in str(outcome.result["error"]).lower()
        assert saved(path) == []
    finally:
        await servers.stop()


async def test_a_server_that_is_down_fails_the_call_in_words(db: Database, tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    servers = await _servers(stdio_settings(path))
    tool = _tool(servers, "save_note")
    await servers.stop()
    room = _room(db, servers, DecisionBell())
    await tool_calls.open_call(
        db, KEY, "c1", tool.qualified_name, {"text": "x"}, acts=True, deadline_at=None
    )
    await tool_calls.move(db, KEY, "c1", "approve", decided_by="user")
    _events, outcome = await _play(room, tool, "c1", {"text": "x"})
    assert outcome.effect == "failed"
    assert "down" in str(outcome.result)
