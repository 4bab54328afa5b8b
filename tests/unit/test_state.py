"""State queries: lookups and the derived fields the view reads."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from app.state.state import (
    ChatState,
    ContextInfo,
    EndReason,
    GapHeld,
    Live,
    MessageState,
    Replaying,
    RunState,
    RunStatus,
    State,
    settled_runs,
)
from app.state.trace import RunTrace

INFO = ContextInfo(10, 100, 0.1, "ok", False)


def chat() -> ChatState:
    return ChatState(
        "c1",
        messages=(
            MessageState("local_u", "user", text="q", server_id="srv_u"),
            MessageState("local_a", "assistant", reply_to="local_u", run_ids=("r1", "r2"), shown=1),
        ),
        runs={
            "r1": RunState("r1", "c1", status="completed", message_id="srv_a1"),
            "r2": RunState("r2", "c1", attempt=2, status="receiving", trace=RunTrace("r2")),
        },
        live_runs=("r2",),
        context_info=INFO,
    )


@pytest.mark.parametrize(
    ("key", "found"),
    [
        pytest.param("local_a", "local_a", id="local-id"),
        pytest.param("srv_u", "local_u", id="server-id"),
        pytest.param("r2", "local_a", id="run-id"),
        pytest.param("srv_a1", "local_a", id="attempt-server-id"),
        pytest.param("nope", None, id="unknown"),
    ],
)
def test_find_message(key: str, found: str | None) -> None:
    message = chat().find_message(key)
    assert (message.id if message else None) == found


def test_active_chat_views() -> None:
    state = State(chats={"c1": chat(), "c2": ChatState("c2")}, active_chat_id="c1")
    answer = state.messages[1]
    assert state.is_generating and state.context_info == INFO
    assert state.active_chat is not None
    shown = state.active_chat.shown_run(answer)
    assert shown is not None and shown.run_id == "r2"
    assert set(state.runs) == {"r1", "r2"}
    assert dict(state.context_cache) == {"c1": INFO}
    assert state.find_run("r1") is not None and state.find_run("zz") is None
    empty = State()
    assert (empty.active_chat, empty.messages, dict(empty.runs)) == (None, (), {})
    assert (empty.is_generating, empty.context_info) == (False, None)


RUN_FLAGS = [
    pytest.param("connecting", None, False, (True, True, False, False), id="connecting"),
    pytest.param("completed", None, False, (False, False, False, True), id="completed"),
    pytest.param("completed", None, True, (False, True, False, True), id="completed-with-gap"),
    pytest.param("cancelling", None, False, (False, True, False, False), id="cancelling"),
    pytest.param("cancelled", None, False, (False, True, False, True), id="cancelled"),
    pytest.param("interrupted", "eof", False, (False, True, True, True), id="interrupted"),
    pytest.param("interrupted", "expired", False, (False, True, False, True), id="expired"),
    pytest.param("failed", "timeout", False, (False, True, False, True), id="failed"),
]


@pytest.mark.parametrize(("status", "reason", "gap", "flags"), RUN_FLAGS)
def test_run_flags(
    status: RunStatus, reason: EndReason | None, gap: bool, flags: tuple[bool, bool, bool, bool]
) -> None:
    run = RunState("r", "c", status=status, reason=reason, has_gap=gap)
    assert (run.is_live, run.is_partial, run.can_resume, run.can_regenerate) == flags


FILLING_GAP = [
    pytest.param({}, False, id="no-gap"),
    pytest.param({"has_gap": True}, False, id="gap-still-streaming"),
    pytest.param({"has_gap": True, "phase": GapHeld()}, True, id="terminal-held"),
    pytest.param({"status": "connecting", "phase": Replaying()}, True, id="replay-aside"),
    pytest.param({"phase": Live(contiguous=True)}, False, id="replay-caught-up"),
]


@pytest.mark.parametrize(("fields", "filling"), FILLING_GAP)
def test_filling_gap(fields: dict[str, Any], filling: bool) -> None:
    fields.setdefault("status", "receiving")
    assert RunState("r", "c", **fields).filling_gap is filling


def test_settled_runs_are_runs_that_just_settled() -> None:
    before = State(chats={"c1": chat()})
    c1 = before.chats["c1"]
    done = replace(c1.runs["r2"], status="completed")
    after = replace(before, chats={"c1": replace(c1, runs={**c1.runs, "r2": done})})
    assert [run.run_id for run in settled_runs(after, before)] == ["r2"]
    assert settled_runs(after, after) == []
    loaded = replace(after, chats={**after.chats, "c2": chat()})
    assert settled_runs(loaded, after) == []  # a chat loaded from history is not "settling"
