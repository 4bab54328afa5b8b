"""The wire contract shared by client and server: the stream events (SPEC §2, §3).

Field names are snake_case in Python and camelCase on the wire (``run_id`` ↔ ``runId``); both
spellings validate, :func:`encode_event` writes camelCase. The endpoint payloads of §4 live
in :mod:`app.wire.api` with the same conventions.

Decisions (``# NOTE:`` marks them in the code):

- Events are *strict*: ``seq`` must be a JSON integer ≥ 1 (not ``7.0``, ``"7"`` or ``true``),
  ``done`` a JSON boolean (not ``0``/``1``), strings are strings. A lax coercion would hide a
  broken server. Unknown extra fields are ignored (SPEC §2).
- ``assistant_text_delta`` validates into :class:`TextEvent` and is normalised to
  ``type="text"``, so consumers match one type only.
- Whether an event ends the stream comes from its ``type`` (:data:`TERMINAL_TYPES`); ``done``
  is carried as sent and not cross-checked.
- ``image_generation_completed.url`` must be ``http(s)://…`` or a ``data:image/png|jpeg|gif|
  webp`` URL (the image schemes of SPEC §7; SVG is refused).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    TypeAdapter,
    ValidationError,
    field_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import from_json

from app.wire.codes import EndErrorCode

NonEmptyStr = Annotated[str, Field(min_length=1)]

CAMEL_CONFIG = ConfigDict(
    frozen=True,
    alias_generator=to_camel,
    validate_by_name=True,
    validate_by_alias=True,
    extra="ignore",
    # NOTE: validators are built on first use, not at import: the page's first screen needs
    # none of them, and building them all is most of the app's import time in Pyodide.
    defer_build=True,
)

# --- Stream events (SPEC §3) -------------------------------------------------------------------


class EventBase(BaseModel):
    """Fields every stream event carries."""

    # NOTE: strict wire types; see the module docstring.
    model_config = ConfigDict(**CAMEL_CONFIG, strict=True)

    # NOTE: declared here so ``type`` comes first on the wire; each event narrows it.
    type: str
    run_id: NonEmptyStr
    seq: int = Field(ge=1)
    done: bool
    # NOTE: ms since the run started, sent where a duration is shown (a thinking block's start
    # and the event after its end), so page and server derive the same "Thought for 3 s".
    elapsed_ms: int | None = Field(default=None, ge=0, exclude_if=lambda value: value is None)


class UserMessageIdEvent(EventBase):
    """The id of the user message persisted for this turn."""

    type: Literal["user_message_id"] = "user_message_id"
    message_id: str


class ThinkingStartEvent(EventBase):
    """Reasoning begins: open a thinking block."""

    type: Literal["thinking_start"] = "thinking_start"


class ThinkingEvent(EventBase):
    """A reasoning text delta."""

    type: Literal["thinking"] = "thinking"
    text: str


class TextEvent(EventBase):
    """An answer text delta; the legacy ``assistant_text_delta`` type validates into it."""

    type: Literal["text", "assistant_text_delta"] = "text"
    text: str

    @field_validator("type")
    @classmethod
    def _normalise_alias(cls, _value: str) -> Literal["text"]:
        # NOTE: one spelling after validation, so consumers match ``"text"`` only.
        return "text"


class ToolCallStartedEvent(EventBase):
    """A tool call begins."""

    type: Literal["tool_call_started"] = "tool_call_started"
    tool_call_id: str
    tool_name: str


class ToolCallArgumentsDeltaEvent(EventBase):
    """A piece of a tool call's arguments JSON text (see :func:`parse_partial_arguments`)."""

    type: Literal["tool_call_arguments_delta"] = "tool_call_arguments_delta"
    tool_call_id: str
    delta: str


class ToolCallCompletedEvent(EventBase):
    """A tool call's arguments are complete; ``arguments`` is authoritative."""

    type: Literal["tool_call_completed"] = "tool_call_completed"
    tool_call_id: str
    tool_name: str
    arguments: dict[str, Any]


ToolEffect = Literal["none", "awaiting_approval", "denied", "running", "done", "failed", "unknown"]
"""What a call did to the world (SPEC §12): ``none`` for a read-only tool; ``unknown`` when it
ran and did not answer (it may have happened)."""
DecidedBy = Literal["user", "timeout", "stop"]


class ToolApprovalRequestedEvent(EventBase):
    """A tool that acts waits for the user's Approve / Deny (SPEC §12)."""

    type: Literal["tool_approval_requested"] = "tool_approval_requested"
    tool_call_id: str
    tool_name: str
    arguments: dict[str, Any]


class ToolDecidedEvent(EventBase):
    """The first decision on a waiting call: the user's, the deadline's or Stop's."""

    type: Literal["tool_decided"] = "tool_decided"
    tool_call_id: str
    approved: bool
    by: DecidedBy


class ToolClientRequestedEvent(EventBase):
    """A call the page runs (SPEC §13, the ``python`` tool): the run waits for its result."""

    type: Literal["tool_client_requested"] = "tool_client_requested"
    tool_call_id: str
    tool_name: str
    arguments: dict[str, Any]


class ToolResultEvent(EventBase):
    """The result of one tool call (any JSON value) and, for tools of MCP servers, its effect."""

    type: Literal["tool_result"] = "tool_result"
    tool_call_id: str
    result: JsonValue
    is_error: bool = False
    # NOTE: left off the wire when absent (a built-in tool's result reads as it always did).
    effect: ToolEffect | None = Field(default=None, exclude_if=lambda value: value is None)


class ImageGenerationStartedEvent(EventBase):
    """Image generation begins (usually inside a tool call)."""

    type: Literal["image_generation_started"] = "image_generation_started"
    image_id: str
    tool_call_id: str | None = None
    prompt: str


IMAGE_URL_PATTERN = (
    r"^(?:(?i:https?)://\S+"
    r"|(?i:data):image/(?:png|jpeg|gif|webp)(?:;[\w.+=-]+)*,\S*)$"
)


class ImageGenerationCompletedEvent(EventBase):
    """An image is ready at an http(s) or ``data:image/…`` URL."""

    type: Literal["image_generation_completed"] = "image_generation_completed"
    image_id: str
    url: str = Field(pattern=IMAGE_URL_PATTERN)
    alt: str | None = None


class ImageGenerationFailedEvent(EventBase):
    """Image generation failed."""

    type: Literal["image_generation_failed"] = "image_generation_failed"
    image_id: str
    error: str


StopReason = Literal["stop", "length", "cancelled"]
"""Why a ``done`` answer ended (a cut at the length limit is ``length``)."""
Severity = Literal["ok", "warning", "critical"]
"""How full a chat's context window is (the ring's colour)."""


class ContextInfoEvent(EventBase):
    """Context window usage; ``ratio`` is used/max as a finite number ≥ 0."""

    type: Literal["context_info"] = "context_info"
    used_tokens: int = Field(ge=0)
    max_tokens: int = Field(ge=0)
    ratio: float = Field(ge=0, allow_inf_nan=False)
    severity: Severity
    compaction_recommended: bool


class FallbackNoticeEvent(EventBase):
    """Continuation degraded (``provider_changed``, ``model_changed``, … or other): a toast."""

    type: Literal["fallback_notice"] = "fallback_notice"
    reason: str
    message: str


class ContinuationTransitionEvent(EventBase):
    """A continuation mode change; ``recovered`` turns true once it succeeded."""

    type: Literal["continuation_transition"] = "continuation_transition"
    mode: Literal["cursor", "replay"]
    recovered: bool
    reason: str | None = None


class SystemEventEvent(EventBase):
    """A timeline marker such as ``tool_loop_exhausted``."""

    type: Literal["system_event"] = "system_event"
    kind: str
    message: str


class DoneEvent(EventBase):
    """Terminal: the answer ended (``stop``, ``length`` or ``cancelled``)."""

    type: Literal["done"] = "done"
    message_id: str
    stop_reason: StopReason
    # NOTE: the answer's stored time and model (the reference server adds them to its terminal
    # events, so the live answer shows what its reload will: app/ui/answer_meta.py)
    created_at: str | None = Field(default=None, exclude_if=lambda value: value is None)
    model_id: str | None = Field(default=None, exclude_if=lambda value: value is None)


class ErrorEvent(EventBase):
    """Terminal and fatal: the run failed on the server."""

    type: Literal["error"] = "error"
    error: str
    code: str | None = None
    created_at: str | None = Field(default=None, exclude_if=lambda value: value is None)
    model_id: str | None = Field(default=None, exclude_if=lambda value: value is None)


def end_error(error: str, code: EndErrorCode, run_id: str = "-", seq: int = 1) -> ErrorEvent:
    """A terminal ``error`` whose code is one of the contract's (a draft unless run fields are
    given): what the reference server sends, typed so it never sends a code the page lacks."""
    return ErrorEvent(run_id=run_id, seq=seq, done=True, error=error, code=code)


StreamEvent = Annotated[
    UserMessageIdEvent
    | ThinkingStartEvent
    | ThinkingEvent
    | TextEvent
    | ToolCallStartedEvent
    | ToolCallArgumentsDeltaEvent
    | ToolCallCompletedEvent
    | ToolResultEvent
    | ToolApprovalRequestedEvent
    | ToolDecidedEvent
    | ToolClientRequestedEvent
    | ImageGenerationStartedEvent
    | ImageGenerationCompletedEvent
    | ImageGenerationFailedEvent
    | ContextInfoEvent
    | FallbackNoticeEvent
    | ContinuationTransitionEvent
    | SystemEventEvent
    | DoneEvent
    | ErrorEvent,
    Field(discriminator="type"),
]
EVENT_ADAPTER: TypeAdapter[StreamEvent] = TypeAdapter(
    StreamEvent, config=ConfigDict(defer_build=True)
)

EVENT_TYPES: frozenset[str] = frozenset(
    tag
    for model in get_args(get_args(StreamEvent)[0])
    for tag in get_args(model.model_fields["type"].annotation)
)
"""Every ``type`` the client knows, aliases included."""

TERMINAL_TYPES: frozenset[str] = frozenset({"done", "error"})


# --- Decoding and encoding ---------------------------------------------------------------------

SkipReason = Literal["invalid_json", "unknown_type", "invalid_event"]


@dataclass(frozen=True, slots=True)
class ParsedEvent:
    """A frame whose data validated into a stream event."""

    event: StreamEvent


@dataclass(frozen=True, slots=True)
class SkippedFrame:
    """A frame skipped as a protocol issue; ids are read best-effort from the raw JSON."""

    reason: SkipReason
    event_type: str | None
    run_id: str | None
    seq: int | None
    detail: str

    @property
    def seen_seq(self) -> int | None:
        """The seq that still counts as seen (SPEC §5): an unknown type's only."""
        # NOTE: an invalid event's seq stays missing so the gap rule catches the lost content.
        return self.seq if self.reason == "unknown_type" else None


def build_validators() -> None:
    """Build the event validators now (they are deferred at import; the page calls this once
    it is ready, so the first event of the first answer does not pay for it)."""
    EVENT_ADAPTER.rebuild()


def parse_event(data: str) -> ParsedEvent | SkippedFrame:
    """Validate one SSE frame's data into an event; bad input becomes a SkippedFrame."""
    try:
        return ParsedEvent(EVENT_ADAPTER.validate_json(data))
    except ValidationError as exc:
        return _diagnose(data, exc)


def _diagnose(data: str, exc: ValidationError) -> SkippedFrame:
    """Explain why ``data`` is not an event (the slow path: parses the JSON again)."""
    try:
        raw = from_json(data)
    except (ValueError, TypeError) as err:  # NOTE: TypeError for lone surrogates
        return SkippedFrame("invalid_json", None, None, None, str(err))
    if not isinstance(raw, dict):
        return SkippedFrame("invalid_event", None, None, None, "event data is not a JSON object")
    event_type = _str_or_none(raw.get("type"))
    run_id = _str_or_none(raw.get("runId"))
    seq = raw.get("seq")
    seq = seq if type(seq) is int and seq >= 1 else None
    if event_type is not None and event_type not in EVENT_TYPES:
        detail = f"unknown event type {event_type!r}"
        return SkippedFrame("unknown_type", event_type, run_id, seq, detail)
    return SkippedFrame("invalid_event", event_type, run_id, seq, _describe(exc, event_type))


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _describe(exc: ValidationError, event_type: str | None) -> str:
    """``"seq: Input should be a valid integer; …"`` without the union's tag in the path."""
    parts = []
    for error in exc.errors(include_url=False, include_input=False):
        loc = error["loc"]
        if loc and loc[0] == event_type:
            loc = loc[1:]
        path = ".".join(str(item) for item in loc)
        parts.append(f"{path}: {error['msg']}" if path else error["msg"])
    return "; ".join(parts)


def encode_event(event: StreamEvent) -> str:
    """Compact JSON for one event, camelCase names (the SSE ``data`` line)."""
    return event.model_dump_json(by_alias=True)


def parse_partial_arguments(text: str) -> dict[str, Any]:
    """Tool arguments from JSON text that may be cut anywhere: the object, its prefix, or {}."""
    try:
        # NOTE: "trailing-strings" keeps a string value cut mid-way ({"q": "hel" -> "hel").
        value = from_json(text, allow_partial="trailing-strings")
    except (ValueError, TypeError):  # NOTE: TypeError for lone surrogates
        return {}
    return value if isinstance(value, dict) else {}
