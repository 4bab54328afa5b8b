"""The one fold of stream events into an answer's parts (SPEC §3), shared by page and server.

The page folds events into parts as they stream; the reference server folds the same events
with the same function and persists the parts (:func:`parts_to_json`); the page reads a chat's
history back into the same values (:func:`parts_from_json`). So a reloaded answer is the very
answer that streamed.

An answer is a tuple of parts in the order they first appeared::

    TextPart(text)                       answer text; consecutive deltas extend one part
    ThinkingPart(text, started_ms, ended_ms)
                                         a reasoning block; ``thinking_start`` opens a new one;
                                         its time span from the events' ``elapsedMs`` if sent
    ToolCallPart(tool_call_id, tool_name, arguments_text, arguments, status, result, is_error)
                                         status streaming -> completed -> done | error
    ImagePart(image_id, prompt, tool_call_id, status, url, alt, error)
                                         status pending -> completed | failed
    ContinuationPart(mode, recovered, reason)   a ``recovered:false`` marker flips to true
    SystemEventPart(kind, message)       a timeline marker

Each part is a frozen dataclass (cheap to copy on the hot path) with a ``type`` tag; one pydantic
``TypeAdapter`` over their tagged union validates and serialises them (camelCase JSON, the
shape ``GET /api/chats/{id}`` answers: ``{"type": "tool_call", "toolCallId": …}``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    TypeAdapter,
    ValidationError,
)
from pydantic.alias_generators import to_camel

from app.wire.protocol import (
    ContinuationTransitionEvent,
    DecidedBy,
    DoneEvent,
    ErrorEvent,
    ImageGenerationCompletedEvent,
    ImageGenerationFailedEvent,
    ImageGenerationStartedEvent,
    StreamEvent,
    SystemEventEvent,
    TextEvent,
    ThinkingEvent,
    ThinkingStartEvent,
    ToolApprovalRequestedEvent,
    ToolCallArgumentsDeltaEvent,
    ToolCallCompletedEvent,
    ToolCallStartedEvent,
    ToolClientRequestedEvent,
    ToolDecidedEvent,
    ToolEffect,
    ToolResultEvent,
    parse_partial_arguments,
)
from app.wire.text import Text

ToolStatus = Literal["streaming", "completed", "done", "error"]
_UNLESS_NONE = Field(exclude_if=lambda value: value is None)
ImageStatus = Literal["pending", "completed", "failed"]


def _as_text(value: object) -> Text:
    if isinstance(value, Text):
        return value
    if isinstance(value, str):
        return Text(value)
    raise ValueError("text must be a string")


# NOTE: ``Text`` grows without copying; on the wire it is a plain string named ``text``.
TextField = Annotated[
    Text,
    BeforeValidator(_as_text),
    PlainSerializer(str, return_type=str),
    Field(alias="text"),
]
_JSON = ConfigDict(
    alias_generator=to_camel,
    validate_by_name=True,
    validate_by_alias=True,
    extra="ignore",
    arbitrary_types_allowed=True,
    defer_build=True,  # NOTE: see app.wire.protocol.CAMEL_CONFIG
)


@dataclass(frozen=True, slots=True)
class TextPart:
    """Answer text (markdown)."""

    __pydantic_config__ = _JSON
    content: TextField = field(default_factory=Text)
    type: Literal["text"] = "text"

    @property
    def text(self) -> str:
        """The text so far."""
        return str(self.content)


@dataclass(frozen=True, slots=True)
class ThinkingPart:
    """One reasoning block; ``started_ms`` / ``ended_ms`` are run times (``elapsedMs``) of its
    first event and of the first event after it, when the server sent them."""

    __pydantic_config__ = _JSON
    content: TextField = field(default_factory=Text)
    started_ms: int | None = None
    ended_ms: int | None = None
    type: Literal["thinking"] = "thinking"

    @property
    def text(self) -> str:
        """The reasoning so far."""
        return str(self.content)

    @property
    def duration_ms(self) -> int | None:
        """How long the model thought, once the block has ended (``None`` if not known)."""
        if self.started_ms is None or self.ended_ms is None:
            return None
        return max(self.ended_ms - self.started_ms, 0)


@dataclass(frozen=True, slots=True)
class ToolCallPart:
    """A tool call: live arguments while they stream, then the authoritative ones, then a result."""

    __pydantic_config__ = _JSON
    tool_call_id: str
    tool_name: str = ""
    arguments_text: str = ""
    arguments: Mapping[str, Any] = field(default_factory=dict)
    status: ToolStatus = "streaming"
    result: Any = None
    is_error: bool = False
    # NOTE: tools of MCP servers (SPEC §12); left out of the JSON for built-ins
    effect: Annotated[ToolEffect | None, _UNLESS_NONE] = None
    decided_by: Annotated[DecidedBy | None, _UNLESS_NONE] = None
    # NOTE: a call the page runs (SPEC §13, ``tool_client_requested``); left out otherwise
    runs_in: Annotated[Literal["client"] | None, _UNLESS_NONE] = None
    type: Literal["tool_call"] = "tool_call"


@dataclass(frozen=True, slots=True)
class ImagePart:
    """A generated image: a placeholder, then the image or the failure."""

    __pydantic_config__ = _JSON
    image_id: str
    prompt: str = ""
    tool_call_id: str | None = None
    status: ImageStatus = "pending"
    url: str | None = None
    alt: str | None = None
    error: str | None = None
    type: Literal["image"] = "image"


@dataclass(frozen=True, slots=True)
class ContinuationPart:
    """A continuation transition marker (``recovered`` turns true on success)."""

    __pydantic_config__ = _JSON
    mode: str
    recovered: bool
    reason: str | None = None
    type: Literal["continuation"] = "continuation"


@dataclass(frozen=True, slots=True)
class SystemEventPart:
    """A timeline marker such as ``tool_loop_exhausted``."""

    __pydantic_config__ = _JSON
    kind: str
    message: str = ""
    type: Literal["system_event"] = "system_event"


Part = TextPart | ThinkingPart | ToolCallPart | ImagePart | ContinuationPart | SystemEventPart
Parts = tuple[Part, ...]
ContentEvent = (
    ThinkingStartEvent
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
    | ContinuationTransitionEvent
    | SystemEventEvent
)
_P = TypeVar("_P", bound=ToolCallPart | ImagePart)
CONTENT_EVENTS = (
    ThinkingStartEvent,
    ThinkingEvent,
    TextEvent,
    ToolCallStartedEvent,
    ToolCallArgumentsDeltaEvent,
    ToolCallCompletedEvent,
    ToolResultEvent,
    ToolApprovalRequestedEvent,
    ToolDecidedEvent,
    ToolClientRequestedEvent,
    ImageGenerationStartedEvent,
    ImageGenerationCompletedEvent,
    ImageGenerationFailedEvent,
    ContinuationTransitionEvent,
    SystemEventEvent,
)
_DEFERRED = ConfigDict(defer_build=True)
PART_ADAPTER: TypeAdapter[Part] = TypeAdapter(
    Annotated[Part, Field(discriminator="type")], config=_DEFERRED
)
PARTS_ADAPTER: TypeAdapter[list[Part]] = TypeAdapter(
    list[Annotated[Part, Field(discriminator="type")]], config=_DEFERRED
)


def build_validators() -> None:
    """Build the part validators now (deferred at import; see app.wire.protocol)."""
    PART_ADAPTER.rebuild()
    PARTS_ADAPTER.rebuild()


def fold(parts: Parts, event: StreamEvent) -> Parts:
    """The parts after any stream event (events that carry no content change nothing)."""
    if isinstance(event, CONTENT_EVENTS):
        return apply_content(_end_thinking(parts, event), event)
    if isinstance(event, DoneEvent | ErrorEvent):
        return _end_thinking(parts, event)
    return parts


def _end_thinking(parts: Parts, event: StreamEvent) -> Parts:
    """An open, timed thinking block ends at the first other content or terminal event."""
    if not parts or isinstance(event, ThinkingEvent) or event.elapsed_ms is None:
        return parts
    last = parts[-1]
    if not isinstance(last, ThinkingPart) or last.started_ms is None or last.ended_ms is not None:
        return parts
    return (*parts[:-1], replace(last, ended_ms=event.elapsed_ms))


def fold_all(events: Iterable[StreamEvent], parts: Parts = ()) -> Parts:
    """The parts of a whole sequence of events."""
    for event in events:
        parts = fold(parts, event)
    return parts


def parts_to_json(parts: Parts) -> list[dict[str, Any]]:
    """The parts as camelCase JSON objects (what the server persists and answers)."""
    dumped: list[dict[str, Any]] = PARTS_ADAPTER.dump_python(
        list(parts), mode="json", by_alias=True
    )
    return dumped


def parts_from_json(items: Iterable[object]) -> Parts:
    """Parts from JSON objects; an unknown or malformed item is skipped, never fatal."""
    parts: list[Part] = []
    for item in items:
        try:
            parts.append(PART_ADAPTER.validate_python(item))
        except ValidationError:
            continue
    return tuple(parts)


def answer_content(parts: Parts) -> Text | str:
    """The answer text as a growing :class:`Text` when one text part holds it all (so a reader
    can take just its new end), else joined."""
    texts = [part.content for part in parts if isinstance(part, TextPart)]
    return texts[0] if len(texts) == 1 else "".join(str(text) for text in texts)


def answer_text(parts: Parts) -> str:
    """All answer text of the parts, joined (thinking excluded)."""
    return "".join(part.text for part in parts if isinstance(part, TextPart))


def apply_content(parts: Parts, event: ContentEvent) -> Parts:
    """The parts after one content event."""
    match event:
        case ThinkingStartEvent():
            return (*parts, ThinkingPart(started_ms=event.elapsed_ms))
        case ThinkingEvent(text=text):
            if not (parts and isinstance(parts[-1], ThinkingPart)):
                return (*parts, ThinkingPart(Text(text), started_ms=event.elapsed_ms))
            return _extend(parts, ThinkingPart, text)
        case TextEvent(text=text):
            return _extend(parts, TextPart, text)
        case ToolCallStartedEvent() | ToolCallArgumentsDeltaEvent():
            return _tool_progress(parts, event)
        case ToolCallCompletedEvent() | ToolResultEvent():
            return _tool_end(parts, event)
        case ToolApprovalRequestedEvent() | ToolDecidedEvent():
            return _tool_decision(parts, event)
        case ToolClientRequestedEvent(tool_call_id=call_id, tool_name=name, arguments=arguments):
            return _update(
                parts, ToolCallPart, call_id, tool_name=name, arguments=arguments, runs_in="client"
            )
        case ImageGenerationStartedEvent() | ImageGenerationCompletedEvent():
            return _image(parts, event)
        case ImageGenerationFailedEvent(image_id=image_id, error=error):
            return _update(parts, ImagePart, image_id, status="failed", error=error)
        case ContinuationTransitionEvent():
            return _continuation(parts, event)
        case SystemEventEvent(kind=kind, message=message):
            return (*parts, SystemEventPart(kind, message))


def append_text(parts: Parts, delta: str) -> Parts:
    """The parts with ``delta`` appended to the answer text (as a ``text`` event would)."""
    return _extend(parts, TextPart, delta)


def _extend(parts: Parts, kind: type[TextPart] | type[ThinkingPart], delta: str) -> Parts:
    """Append a delta to the last part if it is of ``kind``, else open a new one."""
    if parts and type(parts[-1]) is kind:
        last = parts[-1]
        content = last.content.append(delta)
        if isinstance(last, TextPart):  # NOTE: the hot path: one text delta per event
            return (*parts[:-1], TextPart(content))
        assert isinstance(last, ThinkingPart)
        return (*parts[:-1], replace(last, content=content))
    return (*parts, kind(Text(delta)))


def _find(parts: Parts, kind: type[_P], key: str) -> int | None:
    """Index of the last part of ``kind`` whose id is ``key``."""
    for index in range(len(parts) - 1, -1, -1):
        part = parts[index]
        if isinstance(part, kind) and _key(part) == key:
            return index
    return None


def _key(part: ToolCallPart | ImagePart) -> str:
    return part.tool_call_id if isinstance(part, ToolCallPart) else part.image_id


def _update(parts: Parts, kind: type[_P], key: str, **changes: Any) -> Parts:
    """Replace the part ``key`` with ``changes`` applied; a missing one is created."""
    at = _find(parts, kind, key)
    if at is None:
        return (*parts, kind(key, **changes))
    current = parts[at]
    assert isinstance(current, kind)
    return (*parts[:at], replace(current, **changes), *parts[at + 1 :])


def _tool_progress(
    parts: Parts, event: ToolCallStartedEvent | ToolCallArgumentsDeltaEvent
) -> Parts:
    if isinstance(event, ToolCallStartedEvent):
        if _find(parts, ToolCallPart, event.tool_call_id) is not None:
            return parts
        return (*parts, ToolCallPart(event.tool_call_id, event.tool_name))
    index = _find(parts, ToolCallPart, event.tool_call_id)
    current = parts[index] if index is not None else None
    known = current.arguments_text if isinstance(current, ToolCallPart) else ""
    text = known + event.delta
    # NOTE: the whole text is re-parsed on each delta (SPEC §3): a prefix may only become
    # valid JSON once a later piece arrives.
    arguments = parse_partial_arguments(text)
    return _update(
        parts, ToolCallPart, event.tool_call_id, arguments_text=text, arguments=arguments
    )


def _tool_end(parts: Parts, event: ToolCallCompletedEvent | ToolResultEvent) -> Parts:
    if isinstance(event, ToolCallCompletedEvent):
        changes: dict[str, Any] = {"tool_name": event.tool_name, "arguments": event.arguments}
        index = _find(parts, ToolCallPart, event.tool_call_id)
        current = parts[index] if index is not None else None
        if not (isinstance(current, ToolCallPart) and current.status in ("done", "error")):
            changes["status"] = "completed"
        return _update(parts, ToolCallPart, event.tool_call_id, **changes)
    status: ToolStatus = "error" if event.is_error else "done"
    return _update(
        parts,
        ToolCallPart,
        event.tool_call_id,
        result=event.result,
        is_error=event.is_error,
        status=status,
        effect=event.effect,
    )


def _tool_decision(parts: Parts, event: ToolApprovalRequestedEvent | ToolDecidedEvent) -> Parts:
    if isinstance(event, ToolApprovalRequestedEvent):
        return _update(
            parts,
            ToolCallPart,
            event.tool_call_id,
            tool_name=event.tool_name,
            arguments=event.arguments,
            status="completed",
            effect="awaiting_approval",
        )
    index = _find(parts, ToolCallPart, event.tool_call_id)
    current = parts[index] if index is not None else None
    if isinstance(current, ToolCallPart) and current.status in ("done", "error"):
        return parts  # NOTE: the result already said what happened
    effect: ToolEffect = "running" if event.approved else "denied"
    return _update(parts, ToolCallPart, event.tool_call_id, effect=effect, decided_by=event.by)


def _image(
    parts: Parts, event: ImageGenerationStartedEvent | ImageGenerationCompletedEvent
) -> Parts:
    if isinstance(event, ImageGenerationStartedEvent):
        if _find(parts, ImagePart, event.image_id) is not None:
            return parts
        return (*parts, ImagePart(event.image_id, event.prompt, event.tool_call_id))
    return _update(
        parts, ImagePart, event.image_id, status="completed", url=event.url, alt=event.alt
    )


def _continuation(parts: Parts, event: ContinuationTransitionEvent) -> Parts:
    """``recovered:true`` flips the last unrecovered marker (same mode first); else append."""
    marker = ContinuationPart(event.mode, event.recovered, event.reason)
    if event.recovered:
        candidates = [
            i
            for i, part in enumerate(parts)
            if isinstance(part, ContinuationPart) and not part.recovered
        ]
        same_mode = [i for i in candidates if _mode(parts[i]) == event.mode]
        chosen = (same_mode or candidates)[-1:]
        if chosen:
            index = chosen[0]
            return (*parts[:index], marker, *parts[index + 1 :])
    return (*parts, marker)


def _mode(part: Part) -> str | None:
    return part.mode if isinstance(part, ContinuationPart) else None
