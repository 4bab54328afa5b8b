"""What a real model is sent from a chat's persisted answers (``server.conversation``)."""

from __future__ import annotations

from typing import Any

import pytest

from app.state.parts import parts_from_json
from server.conversation import assistant_messages, merge_user_runs
from server.providers.base import AssistantMessage, ToolCall, ToolOutput, UserMessage


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
