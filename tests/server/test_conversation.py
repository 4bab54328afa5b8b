"""What a real model is sent from a chat's persisted answers (``server.model.conversation``)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.wire.parts import parts_from_json
from server.model.conversation import CLOSING_LINE, assistant_messages, merge_user_runs
from server.model.providers.base import (
    AssistantMessage,
    StepRecord,
    ToolCall,
    ToolOutput,
    UserMessage,
)


def _call(call_id: str, status: str = "done", result: Any = 4) -> dict[str, Any]:
    return {
        "type": "tool_call",
        "toolCallId": call_id,
        "toolName": "calculator",
        "argumentsText": '{"expression": "2+2"}',
        "arguments": {"expression": "2+2"},
        "status": status,
        "result": result,
        "isError": status == "error",
    }


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def test_text_then_call_then_text_is_two_steps_with_the_result_between() -> None:
    parts = [
        {"type": "thinking", "text": "hmm"},
        _text("Let me add. "),
        _call("c1"),
        _text("It is 4."),
    ]
    call = ToolCall("c1", "calculator", {"expression": "2+2"}, '{"expression": "2+2"}')
    assert assistant_messages(parts_from_json(parts), structured_tools=True) == [
        AssistantMessage("Let me add. ", (call,)),
        ToolOutput(call, "4", is_error=False),
        AssistantMessage("It is 4."),
    ]


@pytest.mark.parametrize(
    "status",
    [pytest.param("streaming", id="still-streaming"), pytest.param("completed", id="never-ran")],
)
def test_a_call_without_a_result_is_not_sent(status: str) -> None:
    parts = [_text("Trying. "), _call("c1", status=status)]
    assert assistant_messages(parts_from_json(parts), structured_tools=True) == [
        AssistantMessage("Trying. ")
    ]


def test_without_structured_tools_the_answer_is_one_message_with_calls_as_text() -> None:
    parts = [
        _text("Let me add."),
        _call("c1"),
        _call("c2", status="error", result="bad"),
        _text("4"),
    ]
    (message,) = assistant_messages(parts_from_json(parts), structured_tools=False)
    assert message == AssistantMessage(
        'Let me add.\n[tool calculator({"expression": "2+2"}) returned 4]\n'
        '\n[tool calculator({"expression": "2+2"}) returned "bad"]\n4'
    )


def test_an_answer_with_nothing_to_send_sends_nothing() -> None:
    assert (
        assistant_messages(
            parts_from_json([{"type": "image", "imageId": "i"}]), structured_tools=True
        )
        == []
    )


def test_consecutive_user_messages_merge_their_text_and_images() -> None:
    a = UserMessage("first")
    b = UserMessage("second")
    reply = AssistantMessage("ok")
    assert merge_user_runs([a, b, reply, a]) == [UserMessage("first\n\nsecond"), reply, a]


# --- stored model calls (messages.steps) ------------------------------------------------------

SIGNED = [{"type": "thinking", "thinking": "add", "signature": "sig"}, {"type": "tool_use"}]


def _records() -> list[StepRecord]:
    return [
        StepRecord("claude", "Let me add. ", (("c1", "toolu_1"),), SIGNED),
        StepRecord("claude", "It is 4.", (), [{"type": "text", "text": "It is 4."}]),
    ]


def test_a_stored_step_goes_back_whole_to_the_model_that_made_it() -> None:
    parts = parts_from_json([_text("Let me add. "), _call("c1"), _text("It is 4.")])
    notes: list[str] = []
    messages = assistant_messages(parts, True, _records(), "claude", notes)
    call = ToolCall("c1", "calculator", {"expression": "2+2"}, '{"expression": "2+2"}', "toolu_1")
    assert messages == [
        AssistantMessage("Let me add. ", (call,), SIGNED),
        ToolOutput(call, "4"),
        AssistantMessage("It is 4.", (), [{"type": "text", "text": "It is 4."}]),
    ]
    assert notes == []


@pytest.mark.parametrize(
    ("parts", "source", "why"),
    [
        pytest.param(
            [_text("Let me add. "), _call("c1"), _text("It is 4.")],
            "gpt",
            "another model",
            id="another-model",
        ),
        pytest.param(
            [_text("Let me add. "), _call("c1", status="running"), _text("It is 4.")],
            "claude",
            "a call without its result",
            id="a-call-lost-its-result",
        ),
    ],
)
def test_a_stored_step_goes_plain_where_its_native_content_would_be_refused(
    parts: list[dict[str, Any]], source: str, why: str
) -> None:
    notes: list[str] = []
    messages = assistant_messages(parts_from_json(parts), True, _records(), source, notes)
    first = messages[0]
    assert isinstance(first, AssistantMessage) and first.native is None
    assert first.tool_calls == () or source != "claude"
    assert notes and all(why in note for note in notes)


def test_a_step_cut_before_its_record_is_sent_from_its_parts_and_the_answer_closed() -> None:
    parts = parts_from_json([_text("Let me add. "), _call("c1"), _text("Now I"), _call("c2")])
    records = _records()[:1]
    messages = assistant_messages(parts, True, records, "claude", [])
    assert [type(m).__name__ for m in messages] == [
        "AssistantMessage",
        "ToolOutput",
        "AssistantMessage",
        "ToolOutput",
        "AssistantMessage",
    ]
    assert messages[2] == AssistantMessage("Now I", (messages[3].call,))  # type: ignore[union-attr]
    assert messages[-1] == AssistantMessage(CLOSING_LINE)


def test_a_step_record_survives_json() -> None:
    record = _records()[0]
    assert StepRecord.from_json(json.loads(json.dumps(record.to_json()))) == record
    assert StepRecord.from_json({"nonsense": True}) is None
