"""Tests for app.wire.api: the request and response payloads of SPEC §4 and pre-stream errors."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from app.wire.api import (
    ApiErrorBody,
    AttachmentInfo,
    CancelResult,
    ChatDetail,
    ChatSummary,
    MessageOut,
    ModelInfo,
    RespondStreamBody,
    RunInfo,
    SessionInfo,
    ToolDecisionResult,
    encode_payload,
    human_size,
    parse_http_error,
)
from app.wire.errors import HttpStatusError

Wire = dict[str, Any]


# --- Endpoint payloads -------------------------------------------------------------------------


def test_respond_stream_body_from_minimal_wire_uses_defaults() -> None:
    body = RespondStreamBody.model_validate_json('{"chatId": "c1", "prompt": "oi"}')
    assert body == RespondStreamBody(
        chat_id="c1",
        prompt="oi",
        thinking_enabled=False,
        reasoning_effort=None,
        tool_intent=False,
        model_id=None,
        attachment_ids=[],
        run_id=None,
        retry_of_run_id=None,
    )


def test_respond_stream_body_round_trips_camel_case() -> None:
    body = RespondStreamBody(
        chat_id="c1",
        prompt="draw a river",
        thinking_enabled=True,
        reasoning_effort="high",
        tool_intent=True,
        model_id="demo",
        attachment_ids=["a1", "a2"],
        run_id="run_9",
        retry_of_run_id="run_8",
        after_run_id="run_7",
    )
    data = json.loads(encode_payload(body))
    assert data == {
        "chatId": "c1",
        "prompt": "draw a river",
        "thinkingEnabled": True,
        "reasoningEffort": "high",
        "toolIntent": True,
        "modelId": "demo",
        "attachmentIds": ["a1", "a2"],
        "runId": "run_9",
        "retryOfRunId": "run_8",
        "afterRunId": "run_7",
        "atTop": False,
    }
    assert RespondStreamBody.model_validate(data) == body


def test_respond_stream_body_ignores_unknown_fields() -> None:
    body = RespondStreamBody.model_validate_json('{"chatId": "c", "prompt": "", "newKnob": 1}')
    assert "newKnob" not in encode_payload(body)


def test_respond_stream_body_default_attachment_list_is_not_shared() -> None:
    first = RespondStreamBody(chat_id="a", prompt="")
    first.attachment_ids.append("x")
    assert RespondStreamBody(chat_id="b", prompt="").attachment_ids == []


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        pytest.param({"chatId": ""}, "chatId", id="empty-chat-id"),
        pytest.param({"chatId": 5}, "chatId", id="chat-id-int"),
        pytest.param({"prompt": None}, "prompt", id="prompt-null"),
        pytest.param({"thinkingEnabled": "yes"}, "thinkingEnabled", id="thinking-string"),
        pytest.param({"thinkingEnabled": 1}, "thinkingEnabled", id="thinking-int"),
        pytest.param({"toolIntent": "auto"}, "toolIntent", id="tool-intent-string"),
        pytest.param({"reasoningEffort": "max"}, "reasoningEffort", id="effort-unknown"),
        pytest.param({"attachmentIds": "a1"}, "attachmentIds", id="attachments-string"),
        pytest.param({"attachmentIds": [1]}, "attachmentIds", id="attachment-id-int"),
        pytest.param({"runId": ""}, "runId", id="empty-run-id"),
        pytest.param({"retryOfRunId": 3}, "retryOfRunId", id="retry-of-int"),
    ],
)
def test_respond_stream_body_rejects_wrong_types(patch: Wire, field: str) -> None:
    data = json.dumps({"chatId": "c", "prompt": "p"} | patch)
    with pytest.raises(ValidationError) as info:
        RespondStreamBody.model_validate_json(data)
    assert {error["loc"][0] for error in info.value.errors()} == {field}


def test_respond_stream_body_requires_chat_id_and_prompt() -> None:
    with pytest.raises(ValidationError) as info:
        RespondStreamBody.model_validate_json("{}")
    assert {error["loc"][0] for error in info.value.errors()} == {"chatId", "prompt"}


T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)

PAYLOADS: list[tuple[type[BaseModel], Wire]] = [
    (ApiErrorBody, {"error": {"code": "chat_not_found", "message": "No such chat"}}),
    (
        RunInfo,
        {
            "runId": "run_1",
            "chatId": "c1",
            "messageId": "m1",
            "status": "interrupted",
            "lastSeq": 12,
            "attempt": 2,
            "expired": True,
            "reason": "server_restarted",
            "waitingFor": None,
        },
    ),
    (CancelResult, {"runId": "run_1", "status": "cancelled"}),
    (
        ChatSummary,
        {
            "id": "c1",
            "title": "Rio",
            "createdAt": "2026-01-02T03:04:05Z",
            "updatedAt": "2026-01-02T03:04:05Z",
        },
    ),
    (
        ChatDetail,
        {
            "id": "c1",
            "title": "Rio",
            "createdAt": "2026-01-02T03:04:05Z",
            "updatedAt": "2026-01-02T03:04:05Z",
            "messages": [
                {
                    "id": "m0",
                    "role": "user",
                    "text": "oi",
                    "parts": [],
                    "status": None,
                    "runId": None,
                    "parentId": None,
                    "attempt": 1,
                    "partial": False,
                    "reason": None,
                    "errorMessage": None,
                    "stopReason": None,
                    "createdAt": None,
                    "attachments": [
                        {"attachmentId": "a1", "name": "r.png", "size": 10, "mimeType": "image/png"}
                    ],
                },
                {
                    "id": "m1",
                    "role": "assistant",
                    "text": "Olá",
                    "parts": [{"type": "text", "text": "Olá"}],
                    "status": "failed",
                    "runId": "run_1",
                    "parentId": "m0",
                    "attempt": 2,
                    "partial": True,
                    "reason": "provider_error",
                    "errorMessage": "model not loaded",
                    "stopReason": None,
                    "createdAt": "2026-01-02T03:04:05Z",
                    "attachments": [],
                },
                {
                    "id": "m2",
                    "role": "assistant",
                    "text": "Um rio",
                    "parts": [],
                    "status": "completed",
                    "runId": "run_2",
                    "parentId": "m0",
                    "attempt": 3,
                    "partial": False,
                    "reason": None,
                    "errorMessage": None,
                    "stopReason": "length",
                    "createdAt": None,
                    "attachments": [],
                },
            ],
            "contextInfo": {
                "usedTokens": 900,
                "maxTokens": 1000,
                "ratio": 0.9,
                "severity": "critical",
                "compactionRecommended": True,
            },
            "modelId": "riacho-mini",
        },
    ),
    (
        ModelInfo,
        {
            "id": "demo",
            "label": "Demo",
            "available": False,
            "unavailableReason": "no key",
            "supportsThinking": True,
            "supportsTools": False,
            "firstEventWaitMs": 70_000,
            "idleWaitMs": None,
        },
    ),
    (AttachmentInfo, {"attachmentId": "a1", "name": "r.png", "size": 10, "mimeType": "image/png"}),
    (
        SessionInfo,
        {
            "userId": "u1",
            "name": "ana",
            "auth": "password",
            "limits": {
                "attachmentMaxBytes": 5,
                "attachmentsPerMessage": 2,
                "attachmentTypes": ["text/plain"],
            },
        },
    ),
]


# NOTE: tools that act (SPEC §12); after the others, whose places the tests below name
PAYLOADS += [
    (
        RunInfo,
        {
            "runId": "run_2",
            "chatId": "c1",
            "messageId": "m2",
            "status": "running",
            "lastSeq": 7,
            "attempt": 1,
            "expired": False,
            "reason": None,
            "waitingFor": {"kind": "approval", "toolCallId": "call_note_1"},
        },
    ),
    (ToolDecisionResult, {"toolCallId": "c", "decision": "denied", "effect": "denied"}),
]


@pytest.mark.parametrize(
    ("model", "data"), [pytest.param(m, d, id=m.__name__) for m, d in PAYLOADS]
)
def test_payload_round_trips_wire_model_wire(model: type[BaseModel], data: Wire) -> None:
    payload = model.model_validate_json(json.dumps(data))
    assert json.loads(encode_payload(payload)) == data


def test_payload_timestamps_are_aware_datetimes() -> None:
    chat = ChatSummary.model_validate_json(json.dumps(PAYLOADS[3][1]))
    assert chat.created_at == T0


def test_response_payloads_are_lax_for_sqlite_rows() -> None:
    message = MessageOut(id="m", role="assistant", partial=1, attempt=1)
    assert message.partial is True


def test_response_payloads_ignore_unknown_fields_and_are_frozen() -> None:
    run = RunInfo.model_validate(
        {"runId": "r", "chatId": "c", "status": "running", "lastSeq": 0, "attempt": 1, "x": 1}
    )
    assert (run.message_id, run.expired) == (None, False)
    with pytest.raises(ValidationError):
        run.status = "failed"


@pytest.mark.parametrize(
    ("model", "data", "field"),
    [
        pytest.param(CancelResult, {"runId": "r", "status": "gone"}, "status", id="run-status"),
        pytest.param(
            RunInfo,
            {"runId": "r", "chatId": "c", "status": "running", "lastSeq": -1, "attempt": 1},
            "lastSeq",
            id="negative-last-seq",
        ),
        pytest.param(
            RunInfo,
            {"runId": "r", "chatId": "c", "status": "running", "lastSeq": 0, "attempt": 0},
            "attempt",
            id="zero-attempt",
        ),
        pytest.param(MessageOut, {"id": "m", "role": "system"}, "role", id="message-role"),
        pytest.param(
            AttachmentInfo,
            {"attachmentId": "a", "name": "n", "size": -1, "mimeType": "x"},
            "size",
            id="negative-size",
        ),
        pytest.param(ApiErrorBody, {"error": {"code": "x"}}, "error", id="error-no-message"),
    ],
)
def test_payload_rejects_invalid_values(model: type[BaseModel], data: Wire, field: str) -> None:
    with pytest.raises(ValidationError) as info:
        model.model_validate(data)
    assert {error["loc"][0] for error in info.value.errors()} == {field}


# --- HTTP errors before the stream -------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "body", "retry_after", "expected"),
    [
        pytest.param(
            404,
            '{"error": {"code": "chat_not_found", "message": "No such chat"}}',
            None,
            (404, "chat_not_found", "No such chat", None),
            id="json-body",
        ),
        pytest.param(
            503,
            b'{"error": {"code": "model_unavailable", "message": "Down"}}',
            "12",
            (503, "model_unavailable", "Down", 12.0),
            id="bytes-body-retry-after",
        ),
        pytest.param(
            502,
            "<html><body><h1>502 Bad Gateway</h1><hr>nginx</body></html>",
            None,
            (502, "http_error", "HTTP 502: 502 Bad Gateway nginx", None),
            id="html-words",
        ),
        pytest.param(
            500,
            '{"error": "boom"}',
            None,
            (500, "http_error", "HTTP 500: boom", None),
            id="wrong-shape-error-string",
        ),
        pytest.param(
            500,
            '{"message": "Internal Server Error"}',
            None,
            (500, "http_error", "HTTP 500: Internal Server Error", None),
            id="wrong-shape-message",
        ),
        pytest.param(
            503, b"\xff\xfe", " 7 ", (503, "http_error", "HTTP 503", 7.0), id="bad-bytes-padded"
        ),
        pytest.param(
            500, "x" * 500, None, (500, "http_error", "HTTP 500: " + "x" * 200, None), id="long"
        ),
        pytest.param(
            503,
            "",
            "Wed, 21 Oct 2026 07:28:00 GMT",
            (503, "http_error", "HTTP 503", None),
            id="retry-after-date",
        ),
        pytest.param(503, "", "1.5", (503, "http_error", "HTTP 503", None), id="retry-after-float"),
        pytest.param(503, "", "²", (503, "http_error", "HTTP 503", None), id="retry-after-unicode"),
        pytest.param(503, "", "-3", (503, "http_error", "HTTP 503", None), id="retry-after-neg"),
    ],
)
def test_parse_http_error(
    status: int,
    body: str | bytes,
    retry_after: str | None,
    expected: tuple[int, str, str, float | None],
) -> None:
    error = parse_http_error(status, body, retry_after)
    assert isinstance(error, HttpStatusError)
    assert (error.status, error.code, error.message, error.retry_after) == expected


@pytest.mark.parametrize(
    ("size", "words"),
    [
        (0, "0 bytes"),
        (1, "1 byte"),
        (1023, "1023 bytes"),
        (1024, "1 KB"),
        (1536, "1.5 KB"),
        (10 * 1024, "10 KB"),
        (5 * 1024 * 1024, "5 MB"),
        (int(12.34 * 1024 * 1024), "12 MB"),
        (3 * 1024**3 // 2, "1.5 GB"),
        (2000 * 1024**4, "2000 TB"),
    ],
)
def test_human_size(size: int, words: str) -> None:
    assert human_size(size) == words
