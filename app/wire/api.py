"""The API payloads of SPEC §4, shared by client and server (camelCase on the wire).

Decisions (``# NOTE:`` marks them in the code):

- The request body is strict (a wrong type is ``400 invalid_body``, never coerced); unknown
  body fields are ignored, like unknown event fields, so an older server accepts a newer client.
- Response payloads are lax (the server may build them from SQLite rows: ``0``/``1`` booleans).
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from app.wire.codes import ClientTimeoutCode
from app.wire.errors import HttpStatusError
from app.wire.protocol import CAMEL_CONFIG, NonEmptyStr, Severity, StopReason, ToolEffect

ServerRunStatus = Literal["running", "completed", "cancelled", "failed", "interrupted"]
ReasoningEffort = Literal["low", "medium", "high"]
Role = Literal["user", "assistant"]
AuthMode = Literal["anonymous", "password", "proxy"]
"""How users are known: ``anonymous`` (one per browser), ``password`` (accounts), ``proxy``
(a trusted header)."""
"""A run's status as the server persists it (the page's own run states are
:data:`app.state.state.RunStatus`)."""
SERVER_SETTLED: Final[frozenset[ServerRunStatus]] = frozenset(
    {"completed", "cancelled", "failed", "interrupted"}
)
"""The statuses a run never leaves."""


class RespondStreamBody(BaseModel):
    """The body of ``POST /api/respond/stream``."""

    # NOTE: strict, unknown fields ignored; see the module docstring.
    model_config = ConfigDict(**CAMEL_CONFIG, strict=True)

    chat_id: NonEmptyStr
    prompt: str
    thinking_enabled: bool = False
    reasoning_effort: ReasoningEffort | None = None
    tool_intent: bool = False
    model_id: str | None = None
    attachment_ids: list[str] = Field(default_factory=list)
    run_id: NonEmptyStr | None = None
    retry_of_run_id: NonEmptyStr | None = None
    # NOTE: where the prompt goes in the chat's message tree: after the answer of run
    # ``after_run_id``, or at the top with ``at_top`` (an edit of the first prompt); with
    # neither, after the chat's newest answer.
    after_run_id: NonEmptyStr | None = None
    at_top: bool = False
    # NOTE: the tools the page runs itself (SPEC §13: ``["python"]``); names the server does
    # not know are ignored. Left out of the body when empty.
    client_tools: list[str] = Field(default_factory=list, exclude_if=lambda tools: not tools)


class _Payload(BaseModel):
    """Base of the response payloads: camelCase, frozen, lax, unknown fields ignored."""

    model_config = CAMEL_CONFIG


class ApiErrorDetail(_Payload):
    """The ``error`` member of an API error answer."""

    code: str
    message: str


class ApiErrorBody(_Payload):
    """An error answered before the stream starts: ``{"error": {"code", "message"}}``."""

    error: ApiErrorDetail


class CancelBody(_Payload):
    """``POST /api/runs/{runId}/cancel``: why the page cancels (none: the user's Stop; a
    timeout: the page gave up waiting). The server keeps it as the run's reason, so a reload
    shows the same ending the page showed."""

    reason: ClientTimeoutCode | None = None


class RunInfo(_Payload):
    """A run's persisted state (``GET /api/runs/{runId}``).

    status ``running``: generation is going on (or a cancel is accepted, not yet confirmed);
    ``completed``: ended with ``done`` (stop or length); ``cancelled``: stopped by a cancel;
    ``failed``: ended with an error; ``interrupted``: ended without a terminal event.
    ``expired`` is true when its event log was dropped (resume then answers 410). ``reason`` says
    why it ended: one of ``app.wire.codes.RunEndCause`` (``user_cancelled``, ``orphaned``,
    ``server_shutdown``…), or a failure's error code.
    """

    run_id: str
    chat_id: str
    message_id: str | None = None
    status: ServerRunStatus
    last_seq: int = Field(ge=0)
    attempt: int = Field(ge=1)
    expired: bool = False
    reason: str | None = None
    waiting_for: WaitingFor | None = None


class WaitingFor(_Payload):
    """What a running run waits for (SPEC §12): the user's decision on a tool call (or, for
    code that runs in the page, the client)."""

    kind: Literal["approval", "client"]
    tool_call_id: str


class ToolDecisionBody(_Payload):
    """``POST /api/runs/{runId}/tool-calls/{toolCallId}/decision``."""

    approved: bool
    reason: str | None = Field(default=None, max_length=500)


ToolDecision = Literal["approved", "denied"]


class ToolDecisionResult(_Payload):
    """The decision that stands on the call (the first one taken), and the call's effect."""

    tool_call_id: str
    decision: ToolDecision
    effect: ToolEffect


class ToolClientResultBody(_Payload):
    """``POST /api/runs/{runId}/tool-calls/{toolCallId}/result`` (SPEC §13)."""

    model_config = ConfigDict(**CAMEL_CONFIG, strict=True)

    result: JsonValue
    is_error: bool = False


class ToolClientResultAnswer(_Payload):
    """The result that stands on a call the page ran (the first one posted)."""

    tool_call_id: str
    result: JsonValue
    is_error: bool


class CancelResult(_Payload):
    """The answer of ``POST /api/runs/{runId}/cancel``: the run's state after the request."""

    run_id: str
    status: ServerRunStatus


class ChatSummary(_Payload):
    """A chat in the list (``GET/POST /api/chats``)."""

    id: str
    title: str
    created_at: datetime
    updated_at: datetime
    # NOTE: left off the wire when unset, so a chat's answer is as it was for other clients
    pinned_at: datetime | None = Field(default=None, exclude_if=lambda value: value is None)
    snippet: str | None = Field(default=None, exclude_if=lambda value: value is None)
    """A search's result: the words around the first match in its messages."""


class AttachmentInfo(_Payload):
    """An uploaded attachment (``POST /api/attachments``; also listed on its user message)."""

    attachment_id: str
    name: str
    size: int = Field(ge=0)
    mime_type: str


class MessageOut(_Payload):
    """A persisted message. Messages form a tree: each assistant attempt (run) answers the
    user message ``parent_id``; a user message follows the assistant message ``parent_id``
    (``None`` at the top: a chat may have several first prompts, an edit of the first one is
    another), so an edited prompt is a sibling of the one it replaces.

    An assistant message carries everything its answer showed about its ending when it was
    live: ``status``, ``reason`` (why it ended; a failure's error code), ``error_message`` (the
    failure's words), ``stop_reason`` (from its ``done``: ``length`` is the cut warning) and
    ``partial``.
    """

    id: str
    role: Role
    text: str = ""
    parts: list[dict[str, Any]] = Field(default_factory=list)
    status: ServerRunStatus | None = None
    run_id: str | None = None
    parent_id: str | None = None
    attempt: int = Field(default=1, ge=1)
    partial: bool = False
    reason: str | None = None  # why its run ended (see RunInfo)
    error_message: str | None = None  # what its ``error`` event (or the server) said
    stop_reason: StopReason | None = None  # from its ``done`` event
    created_at: datetime | None = None
    attachments: list[AttachmentInfo] = Field(default_factory=list)
    # NOTE: the model that wrote an answer (left off the wire for a prompt)
    model_id: str | None = Field(default=None, exclude_if=lambda value: value is None)


class ContextUsage(_Payload):
    """How much of the model's context window a chat uses (the fields of ``context_info``)."""

    used_tokens: int = Field(ge=0)
    max_tokens: int = Field(ge=0)
    ratio: float = Field(ge=0, allow_inf_nan=False)
    severity: Severity
    compaction_recommended: bool


class ChatDetail(ChatSummary):
    """A chat with its messages and its context usage (``GET /api/chats/{id}``)."""

    messages: list[MessageOut] = Field(default_factory=list)
    context_info: ContextUsage | None = None
    model_id: str | None = None  # the model of its last answer (the picker shows it)


class CompactionResult(ContextUsage):
    """The answer of ``POST /api/chats/{id}/compact``: the context before and after."""

    chat_id: str
    used_tokens_before: int = Field(ge=0)


class ModelInfo(_Payload):
    """A model the user can pick (``GET /api/models``)."""

    id: str
    label: str
    available: bool
    supports_thinking: bool
    supports_tools: bool
    unavailable_reason: str | None = None  # why ``available`` is false, in words
    # NOTE: an MCP server whose tools it would be offered is down (left off the wire if none)
    tools_note: str | None = Field(default=None, exclude_if=lambda value: value is None)
    first_event_wait_ms: int | None = Field(default=None, ge=0)
    idle_wait_ms: int | None = Field(default=None, ge=0)
    """How long the server itself waits for this model's first output, and between outputs,
    before it ends the run with an error of its own (``None``: it does not say). The page
    waits longer than that, so the server's word comes first."""


class UploadLimits(_Payload):
    """What the server accepts as attachments (so the page can say it before uploading)."""

    attachment_max_bytes: int = Field(ge=0)
    attachments_per_message: int = Field(ge=0)
    attachment_types: list[str] = Field(default_factory=list)


class SessionInfo(_Payload):
    """The current user (``GET /api/session``) and how users are known on this server
    (``anonymous``: one per browser; ``password``: accounts, sign-out offered; ``proxy``)."""

    user_id: str
    name: str
    auth: AuthMode = "anonymous"
    limits: UploadLimits | None = None


def human_size(size: int) -> str:
    """A byte count as people read it: ``512 bytes``, ``12 KB``, ``5 MB``, ``1.5 GB``."""
    if size < 1024:
        return f"{size} byte" + ("" if size == 1 else "s")
    value = float(size)
    for unit in ("KB", "MB", "GB", "TB"):
        value /= 1024
        if value < 1024 or unit == "TB":
            break
    return f"{value:.1f} {unit}".replace(".0 ", " ") if value < 10 else f"{value:.0f} {unit}"


def parse_http_error(
    status: int, body: str | bytes, retry_after: str | None = None
) -> HttpStatusError:
    """The error for a non-2xx answer from its JSON body and ``Retry-After``; never raises."""
    try:
        detail = ApiErrorBody.model_validate_json(body).error
        code, message = detail.code, detail.message
    except ValidationError:
        # NOTE: not the contract's body (a proxy's HTML page, another backend's JSON): the
        # contract's code for that, and what the body says, in words
        words = _body_words(body)
        code, message = "http_error", f"HTTP {status}" + (f": {words}" if words else "")
    return HttpStatusError(status, code, message, _retry_after_seconds(retry_after))


_TAG = re.compile(r"<[^>]*>")
MAX_BODY_WORDS = 200


def _body_words(body: str | bytes) -> str:
    """The readable words of an error body that is not the contract's: its ``error`` or
    ``message`` (JSON), or its text without tags, cut to ``MAX_BODY_WORDS`` characters."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        found = data.get("error", data.get("message"))
        if isinstance(found, dict):
            found = found.get("message")
        text = found if isinstance(found, str) else ""
    words = " ".join(_TAG.sub(" ", text).replace("\ufffd", " ").split())
    return words[:MAX_BODY_WORDS] if words.isprintable() else ""


def _retry_after_seconds(value: str | None) -> float | None:
    # NOTE: only the delta-seconds form; an HTTP-date is ignored (servers here send seconds).
    if value is None:
        return None
    value = value.strip()
    return float(value) if value.isascii() and value.isdigit() else None


def encode_payload(payload: BaseModel) -> str:
    """Compact JSON for a request or response payload, camelCase names."""
    return payload.model_dump_json(by_alias=True)
