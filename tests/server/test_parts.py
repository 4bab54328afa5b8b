"""What the server persists of an answer: its events folded by the one fold, as JSON (the
shape ``GET /api/chats/{id}`` answers), and only the events the page itself would fold."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.wire.parts import parts_to_json
from server.store.runlog import AnswerFold

E = dict[str, Any]


def build(events: list[E], run_id: str = "run_1") -> list[E]:
    answer = AnswerFold(run_id)
    for seq, event in enumerate(events, start=1):
        answer.apply_data(json.dumps({"runId": run_id, "seq": seq, "done": False, **event}))
    return parts_to_json(answer.parts)


def text(value: str) -> E:
    return {"type": "text", "text": value}


@pytest.mark.parametrize(
    ("events", "parts"),
    [
        pytest.param([text("Ol"), text("á")], [{"type": "text", "text": "Olá"}], id="text-joined"),
        pytest.param(
            [{"type": "assistant_text_delta", "text": "a"}, text("b")],
            [{"type": "text", "text": "ab"}],
            id="legacy-alias",
        ),
        pytest.param(
            [{"type": "thinking_start"}, {"type": "thinking", "text": "hm"}, text("ok")],
            [
                {"type": "thinking", "text": "hm", "startedMs": None, "endedMs": None},
                {"type": "text", "text": "ok"},
            ],
            id="thinking-then-text",
        ),
        pytest.param(
            [
                {"type": "tool_call_started", "toolCallId": "c", "toolName": "s"},
                {"type": "tool_call_arguments_delta", "toolCallId": "c", "delta": '{"q":'},
                {"type": "tool_call_arguments_delta", "toolCallId": "c", "delta": '"x"}'},
                {
                    "type": "tool_call_completed",
                    "toolCallId": "c",
                    "toolName": "s",
                    "arguments": {"q": "x"},
                },
                {"type": "tool_result", "toolCallId": "c", "result": [1], "isError": False},
            ],
            [
                {
                    "type": "tool_call",
                    "toolCallId": "c",
                    "toolName": "s",
                    "argumentsText": '{"q":"x"}',
                    "arguments": {"q": "x"},
                    "status": "done",
                    "result": [1],
                    "isError": False,
                }
            ],
            id="tool-call-lifecycle",
        ),
        pytest.param(
            [
                text("a"),
                {"type": "tool_result", "toolCallId": "c", "result": "no", "isError": True},
                text("b"),
            ],
            [
                text("a"),
                {
                    "type": "tool_call",
                    "toolCallId": "c",
                    "toolName": "",
                    "argumentsText": "",
                    "arguments": {},
                    "status": "error",
                    "result": "no",
                    "isError": True,
                },
                text("b"),
            ],
            id="text-around-a-failed-tool",
        ),
        pytest.param(
            [
                {"type": "image_generation_started", "imageId": "i", "prompt": "p"},
                {
                    "type": "image_generation_completed",
                    "imageId": "i",
                    "url": "data:image/png;base64,iVBORw0KGgo=",
                    "alt": "a",
                },
            ],
            [
                {
                    "type": "image",
                    "imageId": "i",
                    "toolCallId": None,
                    "prompt": "p",
                    "status": "completed",
                    "url": "data:image/png;base64,iVBORw0KGgo=",
                    "alt": "a",
                    "error": None,
                }
            ],
            id="image-completed",
        ),
        pytest.param(
            [{"type": "image_generation_failed", "imageId": "i", "error": "x"}],
            [
                {
                    "type": "image",
                    "imageId": "i",
                    "toolCallId": None,
                    "prompt": "",
                    "status": "failed",
                    "url": None,
                    "alt": None,
                    "error": "x",
                }
            ],
            id="image-failed-without-start",
        ),
        pytest.param(
            [
                {"type": "continuation_transition", "mode": "replay", "recovered": False},
                text("x"),
                {"type": "continuation_transition", "mode": "replay", "recovered": True},
            ],
            [
                {"type": "continuation", "mode": "replay", "recovered": True, "reason": None},
                text("x"),
            ],
            id="continuation-recovers-in-place",
        ),
        pytest.param(
            [{"type": "system_event", "kind": "tool_loop_exhausted", "message": "m"}],
            [{"type": "system_event", "kind": "tool_loop_exhausted", "message": "m"}],
            id="system-event",
        ),
        pytest.param(
            [
                {"type": "context_info"},
                {"type": "done"},
                {"type": "mystery"},
                {"type": "text"},
                {"type": "thinking", "text": None},
            ],
            [],
            id="non-part-and-invalid-events-change-nothing",
        ),
    ],
)
def test_events_build_parts(events: list[E], parts: list[E]) -> None:
    assert build(events) == parts


def test_only_events_the_page_would_fold_are_persisted() -> None:
    answer = AnswerFold("run_1")
    for seq, run_id, value in [
        (1, "run_1", "a"),
        (1, "run_1", "a"),
        (2, "run_x", "?"),
        (3, "run_1", "b"),
    ]:
        answer.apply_data(
            json.dumps({"type": "text", "text": value, "runId": run_id, "seq": seq, "done": False})
        )
    answer.apply_data("{not json")
    assert parts_to_json(answer.parts) == [{"type": "text", "text": "ab"}]
    assert answer.last_seq == 3
