"""A chat's history as client state."""

from __future__ import annotations

from typing import Any

import pytest

from app.state.history import END_CAUSES, chat_from_detail, detached_runs, run_from_message
from app.state.state import ErrorInfo, Restored
from app.wire.api import MessageOut
from app.wire.codes import RUN_END_CAUSES
from app.wire.parts import (
    ContinuationPart,
    ImagePart,
    Parts,
    SystemEventPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    parts_from_json,
)
from app.wire.text import Text
from tests.unit.fakes import detail


def test_attempts_of_one_answer_are_grouped_in_attempt_order() -> None:
    chat = chat_from_detail(
        detail(
            "c1",
            [
                MessageOut(id="u1", role="user", text="q1"),
                MessageOut(
                    id="a2", role="assistant", text="two", run_id="r2", parent_id="u1", attempt=2
                ),
                MessageOut(
                    id="a1",
                    role="assistant",
                    text="one",
                    run_id="r1",
                    parent_id="u1",
                    attempt=1,
                    status="cancelled",
                ),
                MessageOut(id="u2", role="user", text="q2"),
                MessageOut(
                    id="a3",
                    role="assistant",
                    text="three",
                    run_id="r3",
                    parent_id="u2",
                    status="failed",
                ),
            ],
            title="T",
        )
    )
    assert (chat.chat_id, chat.title, chat.loaded, chat.live_runs) == ("c1", "T", True, ())
    assert [(m.id, m.role, m.run_ids, m.shown) for m in chat.messages] == [
        ("u1", "user", (), 0),
        ("a2", "assistant", ("r1", "r2"), 1),
        ("u2", "user", (), 0),
        ("a3", "assistant", ("r3",), 0),
    ]
    assert chat.messages[1].reply_to == "u1"
    assert (chat.runs["r1"].status, chat.runs["r1"].cancel) == ("cancelled", "confirmed")
    assert (chat.runs["r3"].status, chat.runs["r3"].reason) == ("failed", "error")
    assert detached_runs(chat) == ()


STATUSES = [
    pytest.param("running", "interrupted", "detached", id="running-is-detached"),
    pytest.param("completed", "completed", None, id="completed"),
    pytest.param("interrupted", "interrupted", "eof", id="interrupted-is-resumable"),
    pytest.param(None, "completed", None, id="no-status-is-completed"),
]


@pytest.mark.parametrize(("stored", "status", "reason"), STATUSES)
def test_run_status_from_history(stored: Any, status: str, reason: str | None) -> None:
    run = run_from_message("c1", MessageOut(id="a", role="assistant", status=stored, run_id="r"))
    assert (run.status, run.reason, run.phase) == (status, reason, Restored())


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        ("first_event_timeout", "first_event"),
        ("idle_timeout", "idle"),
        ("total_timeout", "total"),
    ],
)
def test_a_run_the_page_cancelled_for_its_timeout_reads_back_as_that_failure(
    code: str, kind: str
) -> None:
    stored = MessageOut(id="a", role="assistant", status="cancelled", reason=code, run_id="r")

    run = run_from_message("c1", stored)

    assert (run.status, run.reason, run.cancel, run.trace.timeout_fired) == (
        "failed",
        "timeout",
        None,
        kind,
    )
    assert run.error is not None and run.error.code == code


def test_a_run_the_user_stopped_stays_stopped() -> None:
    stored = MessageOut(
        id="a", role="assistant", status="cancelled", reason="user_cancelled", run_id="r"
    )

    run = run_from_message("c1", stored)

    assert (run.status, run.cancel, run.error, run.trace.timeout_fired) == (
        "cancelled",
        "confirmed",
        None,
        None,
    )


def test_every_end_cause_the_server_keeps_has_a_meaning_on_the_page() -> None:
    assert set(END_CAUSES) == RUN_END_CAUSES


@pytest.mark.parametrize(
    ("stored", "cause", "status", "reason"),
    [
        ("cancelled", "user_cancelled", "cancelled", None),
        ("cancelled", "cancelled", "cancelled", None),
        ("cancelled", "orphaned", "cancelled", "orphaned"),
        ("interrupted", "stream_ended", "interrupted", "eof"),
        ("interrupted", "worker_lost", "interrupted", "eof"),
        ("interrupted", "server_restarted", "interrupted", "server_restarted"),
        ("interrupted", "server_shutdown", "interrupted", "server_shutdown"),
        ("completed", "orphaned", "completed", None),
    ],
)
def test_an_end_cause_reads_back_as_the_page_says_it(
    stored: str, cause: str, status: str, reason: str | None
) -> None:
    message = MessageOut(id="a", role="assistant", status=stored, reason=cause, run_id="r")
    run = run_from_message("c1", message)
    assert (run.status, run.reason) == (status, reason)


def test_a_message_without_run_id_or_parts_still_shows_its_text() -> None:
    run = run_from_message("c1", MessageOut(id="a9", role="assistant", text="plain", partial=True))
    assert (run.run_id, run.text, run.message_id, run.has_gap) == ("stored_a9", "plain", "a9", True)


def test_running_runs_are_listed_for_reattaching() -> None:
    chat = chat_from_detail(
        detail(
            "c1",
            [
                MessageOut(id="a", role="assistant", status="running", run_id="live"),
            ],
        )
    )
    assert detached_runs(chat) == ("live",)


PERSISTED = [
    pytest.param([{"type": "text", "text": "hi"}], (TextPart(Text("hi")),), id="text"),
    pytest.param([{"type": "thinking", "text": "hm"}], (ThinkingPart(Text("hm")),), id="thinking"),
    pytest.param(
        [
            {
                "type": "tool_call",
                "toolCallId": "t",
                "toolName": "s",
                "argumentsText": "{}",
                "arguments": {"a": 1},
                "status": "done",
                "result": [1],
                "isError": False,
            }
        ],
        (ToolCallPart("t", "s", "{}", {"a": 1}, "done", [1], False),),
        id="tool-call",
    ),
    pytest.param(
        [{"type": "tool_call", "toolCallId": "t", "status": "weird", "arguments": None}],
        (),
        id="tool-call-with-an-unknown-status-is-skipped",
    ),
    pytest.param(
        [
            {
                "type": "image",
                "imageId": "i",
                "prompt": "p",
                "status": "completed",
                "url": "https://x/i.png",
                "alt": "a",
                "toolCallId": "t",
            }
        ],
        (ImagePart("i", "p", "t", "completed", "https://x/i.png", "a"),),
        id="image",
    ),
    pytest.param(
        [{"type": "image", "imageId": "i", "status": "?"}],
        (),
        id="image-with-an-unknown-status-is-skipped",
    ),
    pytest.param(
        [{"type": "continuation", "mode": "cursor", "recovered": True}],
        (ContinuationPart("cursor", True),),
        id="continuation",
    ),
    pytest.param(
        [{"type": "system_event", "kind": "k", "message": "m"}, {"type": "system_event"}],
        (SystemEventPart("k", "m"),),
        id="system-event",
    ),
    pytest.param(
        [{"type": "future"}, {"type": "tool_call"}, {"type": "text", "text": "ok"}],
        (TextPart(Text("ok")),),
        id="unknown-and-malformed-are-skipped",
    ),
]


@pytest.mark.parametrize(("items", "expected"), PERSISTED)
def test_parts_from_json(items: list[dict[str, Any]], expected: Parts) -> None:
    assert parts_from_json(items) == expected


ENDINGS = [
    pytest.param(
        {"status": "completed", "stop_reason": "length"},
        ("completed", None, "length", None),
        id="cut-at-length",
    ),
    pytest.param(
        {"status": "completed", "stop_reason": "stop"},
        ("completed", None, "stop", None),
        id="complete",
    ),
    pytest.param(
        {"status": "failed", "reason": "provider_error", "error_message": "model not loaded"},
        ("failed", "error", None, ErrorInfo("provider_error", "model not loaded")),
        id="failed-with-the-servers-words",
    ),
    pytest.param(
        {"status": "cancelled", "reason": "user_cancelled", "stop_reason": "cancelled"},
        ("cancelled", None, None, None),
        id="cancelled",
    ),
]


@pytest.mark.parametrize(("stored", "expected"), ENDINGS)
def test_a_stored_ending_reads_back_as_the_live_one_was(
    stored: dict[str, Any], expected: tuple[Any, ...]
) -> None:
    run = run_from_message("c1", MessageOut(id="a", role="assistant", run_id="r", **stored))
    assert (run.status, run.reason, run.stop_reason, run.error) == expected
