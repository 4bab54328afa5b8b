"""The SSE encoder's exact bytes (SPEC §2)."""

from __future__ import annotations

import pytest

from app.wire.protocol import (
    ContextInfoEvent,
    DoneEvent,
    ErrorEvent,
    StreamEvent,
    TextEvent,
    ToolCallCompletedEvent,
    UserMessageIdEvent,
    encode_event,
)
from server.runs.stream import KEEPALIVE, SSE_HEADERS, encode_frame
from server.store.runlog import Frame

R = "run_1"


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        pytest.param(
            TextEvent(run_id=R, seq=7, done=False, text="Olá"),
            'id: 7\ndata: {"type":"text","runId":"run_1","seq":7,"done":false,"text":"Olá"}\n\n',
            id="text-utf8",
        ),
        pytest.param(
            TextEvent(run_id=R, seq=1, done=False, text="a\nb\r\nc"),
            'id: 1\ndata: {"type":"text","runId":"run_1","seq":1,"done":false,'
            '"text":"a\\nb\\r\\nc"}\n\n',
            id="newlines-escaped-stay-one-data-line",
        ),
        pytest.param(
            UserMessageIdEvent(run_id=R, seq=1, done=False, message_id="msg_1"),
            'id: 1\ndata: {"type":"user_message_id","runId":"run_1","seq":1,"done":false,'
            '"messageId":"msg_1"}\n\n',
            id="user-message-id",
        ),
        pytest.param(
            ToolCallCompletedEvent(
                run_id=R,
                seq=3,
                done=False,
                tool_call_id="c1",
                tool_name="web_search",
                arguments={"q": "x", "n": 2},
            ),
            'id: 3\ndata: {"type":"tool_call_completed","runId":"run_1","seq":3,"done":false,'
            '"toolCallId":"c1","toolName":"web_search","arguments":{"q":"x","n":2}}\n\n',
            id="tool-call-completed-object-arguments",
        ),
        pytest.param(
            ContextInfoEvent(
                run_id=R,
                seq=4,
                done=False,
                used_tokens=10,
                max_tokens=100,
                ratio=0.1,
                severity="ok",
                compaction_recommended=False,
            ),
            'id: 4\ndata: {"type":"context_info","runId":"run_1","seq":4,"done":false,'
            '"usedTokens":10,"maxTokens":100,"ratio":0.1,"severity":"ok",'
            '"compactionRecommended":false}\n\n',
            id="context-info",
        ),
        pytest.param(
            DoneEvent(run_id=R, seq=9, done=True, message_id="m", stop_reason="cancelled"),
            'id: 9\ndata: {"type":"done","runId":"run_1","seq":9,"done":true,"messageId":"m",'
            '"stopReason":"cancelled"}\n\n',
            id="done-cancelled",
        ),
        pytest.param(
            ErrorEvent(run_id=R, seq=2, done=True, error="boom", code="x"),
            'id: 2\ndata: {"type":"error","runId":"run_1","seq":2,"done":true,"error":"boom",'
            '"code":"x"}\n\n',
            id="error",
        ),
    ],
)
def test_encode_frame_writes_id_data_and_blank_line(event: StreamEvent, expected: str) -> None:
    assert encode_frame(Frame(event.seq, encode_event(event))) == expected.encode("utf-8")


def test_frame_without_integer_seq_has_no_id_line() -> None:
    assert encode_frame(Frame(None, '{"type":"x"}')) == b'data: {"type":"x"}\n\n'


def test_keepalive_is_a_comment_frame() -> None:
    assert KEEPALIVE == b": keepalive\n\n"


def test_sse_headers_are_the_contract() -> None:
    assert SSE_HEADERS["Content-Type"] == "text/event-stream"
    assert SSE_HEADERS["Cache-Control"] == "no-cache"
    assert SSE_HEADERS["Connection"] == "keep-alive"
