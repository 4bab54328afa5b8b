"""Tests for app.wire.protocol: the event catalogue, frame decoding, partial JSON."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from app.wire.protocol import (
    EVENT_ADAPTER,
    EVENT_TYPES,
    TERMINAL_TYPES,
    ContextInfoEvent,
    ContinuationTransitionEvent,
    DoneEvent,
    ErrorEvent,
    EventBase,
    FallbackNoticeEvent,
    ImageGenerationCompletedEvent,
    ImageGenerationFailedEvent,
    ImageGenerationStartedEvent,
    ParsedEvent,
    SkippedFrame,
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
    ToolResultEvent,
    UserMessageIdEvent,
    encode_event,
    parse_event,
    parse_partial_arguments,
)

Wire = dict[str, Any]
RUN = {"runId": "run_1", "seq": 7, "done": False}


def wire(type_: str, **fields: Any) -> Wire:
    """A wire event: ``type`` first, the common fields, then ``fields`` (camelCase)."""
    return {"type": type_, **RUN, **fields}


def parsed(data: Wire | str) -> StreamEvent:
    """The event a frame decodes to; fails the test if it was skipped."""
    result = parse_event(data if isinstance(data, str) else json.dumps(data))
    assert isinstance(result, ParsedEvent), result
    return result.event


def skipped(data: Wire | str) -> SkippedFrame:
    """The SkippedFrame a frame decodes to; fails the test if it parsed."""
    result = parse_event(data if isinstance(data, str) else json.dumps(data))
    assert isinstance(result, SkippedFrame), result
    return result


# --- The catalogue: every event type, full wire form --------------------------------------------

FULL_EVENTS: list[tuple[Wire, type[EventBase]]] = [
    (wire("user_message_id", messageId="msg_1"), UserMessageIdEvent),
    (wire("thinking_start"), ThinkingStartEvent),
    (wire("thinking", text="hmm"), ThinkingEvent),
    (wire("text", text="Olá 🌊"), TextEvent),
    (wire("tool_call_started", toolCallId="tc_1", toolName="search"), ToolCallStartedEvent),
    (
        wire("tool_call_arguments_delta", toolCallId="tc_1", delta='{"q": "ri'),
        ToolCallArgumentsDeltaEvent,
    ),
    (
        wire(
            "tool_call_completed",
            toolCallId="tc_1",
            toolName="search",
            arguments={"q": "rio", "n": [1, 2.5, None, True], "o": {"deep": {}}},
        ),
        ToolCallCompletedEvent,
    ),
    (
        wire("tool_result", toolCallId="tc_1", result={"hits": [1, "a", None]}, isError=True),
        ToolResultEvent,
    ),
    (
        wire("image_generation_started", imageId="img_1", toolCallId="tc_2", prompt="a river"),
        ImageGenerationStartedEvent,
    ),
    (
        wire(
            "image_generation_completed",
            imageId="img_1",
            url="https://cdn.example/img_1.png",
            alt="a river",
        ),
        ImageGenerationCompletedEvent,
    ),
    (wire("image_generation_failed", imageId="img_1", error="quota"), ImageGenerationFailedEvent),
    (
        wire(
            "context_info",
            usedTokens=900,
            maxTokens=1000,
            ratio=0.9,
            severity="warning",
            compactionRecommended=True,
        ),
        ContextInfoEvent,
    ),
    (
        wire("fallback_notice", reason="model_changed", message="Model changed"),
        FallbackNoticeEvent,
    ),
    (
        wire("continuation_transition", mode="replay", recovered=False, reason="cursor_expired"),
        ContinuationTransitionEvent,
    ),
    (
        wire("system_event", kind="tool_loop_exhausted", message="Too many tool calls"),
        SystemEventEvent,
    ),
    (
        wire(
            "tool_approval_requested",
            toolCallId="c1",
            toolName="notes__save_note",
            arguments={"text": "river high"},
        ),
        ToolApprovalRequestedEvent,
    ),
    (wire("tool_decided", toolCallId="c1", approved=False, by="timeout"), ToolDecidedEvent),
    (
        wire(
            "tool_client_requested",
            toolCallId="c2",
            toolName="python",
            arguments={"code": "print(1)"},
        ),
        ToolClientRequestedEvent,
    ),
    (wire("done", messageId="msg_2", stopReason="length") | {"done": True}, DoneEvent),
    (wire("error", error="provider exploded", code="provider_error") | {"done": True}, ErrorEvent),
]


@pytest.mark.parametrize(
    ("frame", "model"), [pytest.param(f, m, id=f["type"]) for f, m in FULL_EVENTS]
)
def test_event_round_trips_wire_model_wire(frame: Wire, model: type[EventBase]) -> None:
    event = parsed(frame)
    assert type(event) is model
    assert (event.run_id, event.seq, event.done) == (frame["runId"], frame["seq"], frame["done"])
    assert json.loads(encode_event(event)) == frame


def test_catalogue_table_covers_every_event_type() -> None:
    tested = {frame["type"] for frame, _ in FULL_EVENTS}
    assert tested == EVENT_TYPES - {"assistant_text_delta"}
    assert {"done", "error"} == TERMINAL_TYPES
    assert TERMINAL_TYPES <= EVENT_TYPES


def test_encode_event_is_compact_camel_case_with_type_first() -> None:
    event = ToolCallStartedEvent(run_id="run_1", seq=3, done=False, tool_call_id="t", tool_name="n")
    assert encode_event(event) == (
        '{"type":"tool_call_started","runId":"run_1","seq":3,"done":false,'
        '"toolCallId":"t","toolName":"n"}'
    )


@pytest.mark.parametrize(
    ("frame", "defaults"),
    [
        pytest.param(
            wire("tool_result", toolCallId="t", result=None), {"is_error": False}, id="is-error"
        ),
        pytest.param(
            wire("image_generation_started", imageId="i", prompt="p"),
            {"tool_call_id": None},
            id="image-tool-call-id",
        ),
        pytest.param(
            wire("image_generation_completed", imageId="i", url="http://x/i.png"),
            {"alt": None},
            id="image-alt",
        ),
        pytest.param(
            wire("continuation_transition", mode="cursor", recovered=True),
            {"reason": None},
            id="continuation-reason",
        ),
        pytest.param(wire("error", error="boom"), {"code": None}, id="error-code"),
    ],
)
def test_optional_event_fields_default_when_absent(frame: Wire, defaults: dict[str, Any]) -> None:
    event = parsed(frame)
    assert {name: getattr(event, name) for name in defaults} == defaults


def test_tool_result_keeps_null_result_through_encoding() -> None:
    event = parsed(wire("tool_result", toolCallId="t", result=None))
    assert isinstance(event, ToolResultEvent)
    assert event.result is None
    assert json.loads(encode_event(event))["result"] is None


# --- Aliases, extra fields, decisions ----------------------------------------------------------


def test_assistant_text_delta_validates_into_text_event_normalised_to_text() -> None:
    event = parsed(wire("assistant_text_delta", text="Hello"))
    assert isinstance(event, TextEvent)
    assert (event.type, event.text) == ("text", "Hello")
    assert json.loads(encode_event(event))["type"] == "text"


def test_assistant_text_delta_is_normalised_when_built_by_name() -> None:
    event = TextEvent(type="assistant_text_delta", run_id="r", seq=1, done=False, text="x")
    assert event.type == "text"


def test_unknown_extra_fields_are_ignored_and_not_re_encoded() -> None:
    frame = wire("text", text="hi", future={"nested": [1]}, traceId="abc")
    event = parsed(frame)
    assert event == parsed(wire("text", text="hi"))
    assert "future" not in encode_event(event)
    assert "traceId" not in encode_event(event)


def test_snake_case_names_also_validate() -> None:
    frame = {"type": "text", "run_id": "run_1", "seq": 1, "done": False, "text": "x"}
    assert parsed(frame).run_id == "run_1"


def test_done_flag_is_carried_not_cross_checked_against_type() -> None:
    # NOTE: terminal-ness comes from ``type``; a non-terminal event with done:true still parses.
    event = parsed(wire("text", text="x") | {"done": True})
    assert event.done is True
    assert event.type not in TERMINAL_TYPES


def test_int_is_accepted_for_a_float_field() -> None:
    event = parsed(
        wire(
            "context_info",
            usedTokens=10,
            maxTokens=10,
            ratio=1,
            severity="critical",
            compactionRecommended=True,
        )
    )
    assert isinstance(event, ContextInfoEvent)
    assert event.ratio == 1.0
    assert isinstance(event.ratio, float)


@pytest.mark.parametrize(
    "url",
    [
        pytest.param("https://cdn.example/a.png?x=1", id="https"),
        pytest.param("http://127.0.0.1:8000/img/1", id="http"),
        pytest.param("HTTPS://CDN.EXAMPLE/A.PNG", id="upper-case-scheme"),
        pytest.param("data:image/png;base64,iVBORw0KGgo=", id="data-png"),
        pytest.param("data:image/jpeg;base64,/9j/4AAQ", id="data-jpeg"),
        pytest.param("data:image/gif;base64,R0lGOD", id="data-gif"),
        pytest.param("data:image/webp;base64,UklGR", id="data-webp"),
        pytest.param("data:image/png,raw", id="data-no-params"),
    ],
)
def test_image_url_accepts_http_and_data_image(url: str) -> None:
    event = parsed(wire("image_generation_completed", imageId="i", url=url))
    assert isinstance(event, ImageGenerationCompletedEvent)
    assert event.url == url


@pytest.mark.parametrize(
    "url",
    [
        pytest.param("javascript:alert(1)", id="javascript"),
        pytest.param("data:image/svg+xml;base64,PHN2Zz4=", id="data-svg"),
        pytest.param("data:text/html;base64,PGI+", id="data-html"),
        pytest.param("ftp://example/a.png", id="ftp"),
        pytest.param("/relative/a.png", id="relative"),
        pytest.param("https://", id="https-no-host"),
        pytest.param("https://a b", id="whitespace"),
        pytest.param("", id="empty"),
    ],
)
def test_image_url_rejects_other_schemes(url: str) -> None:
    skip = skipped(wire("image_generation_completed", imageId="i", url=url))
    assert skip.reason == "invalid_event"
    assert skip.detail.startswith("url: ")


# --- Skipped frames ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("frame", "seq", "run_id"),
    [
        pytest.param(wire("mystery", extra=1), 7, "run_1", id="with-seq-and-run-id"),
        pytest.param({"type": "mystery"}, None, None, id="bare"),
        pytest.param({"type": "mystery", "seq": True, "runId": 5}, None, None, id="bool-seq"),
        pytest.param({"type": "mystery", "seq": "7"}, None, None, id="string-seq"),
        pytest.param({"type": "mystery", "seq": 0}, None, None, id="zero-seq"),
        pytest.param({"type": "mystery", "seq": 7.0}, None, None, id="float-seq"),
    ],
)
def test_unknown_type_is_skipped_with_ids_read_best_effort(
    frame: Wire, seq: int | None, run_id: str | None
) -> None:
    skip = skipped(frame)
    assert skip == SkippedFrame(
        "unknown_type", "mystery", run_id, seq, "unknown event type 'mystery'"
    )
    assert skip.seen_seq == seq


@pytest.mark.parametrize(
    "data",
    [
        pytest.param("", id="empty"),
        pytest.param("{", id="truncated"),
        pytest.param("not json", id="prose"),
        pytest.param("{'type': 'text'}", id="single-quotes"),
        pytest.param('{"type":"text","text":"x","runId":"r","seq":1,"done":false}x', id="trailing"),
        pytest.param('{"type":"text","text":"\ud83d","runId":"r","seq":1,"done":false}', id="surr"),
    ],
)
def test_invalid_json_is_skipped_without_ids(data: str) -> None:
    skip = skipped(data)
    assert (skip.reason, skip.event_type, skip.run_id, skip.seq) == (
        "invalid_json",
        None,
        None,
        None,
    )
    assert skip.detail
    assert skip.seen_seq is None


@pytest.mark.parametrize(
    "data",
    [
        pytest.param("[1, 2]", id="array"),
        pytest.param('"text"', id="string"),
        pytest.param("42", id="number"),
        pytest.param("null", id="null"),
    ],
)
def test_non_object_json_is_an_invalid_event(data: str) -> None:
    assert skipped(data) == SkippedFrame(
        "invalid_event", None, None, None, "event data is not a JSON object"
    )


@pytest.mark.parametrize(
    ("frame", "event_type", "detail"),
    [
        pytest.param(
            wire("text", text=5), "text", "text: Input should be a valid string", id="text"
        ),
        pytest.param(
            wire("assistant_text_delta", text=None),
            "assistant_text_delta",
            "text: Input should be a valid string",
            id="alias-bad-text",
        ),
        pytest.param(wire("text"), "text", "text: Field required", id="missing-text"),
        pytest.param(
            {"type": "text", "text": "x", "runId": "r", "done": False},
            "text",
            "seq: Field required",
            id="missing-seq",
        ),
        pytest.param(
            {"type": "text", "text": "x", "seq": 1, "done": False},
            "text",
            "runId: Field required",
            id="missing-run-id",
        ),
        pytest.param(
            wire("text", text="x") | {"runId": ""},
            "text",
            "runId: String should have at least 1 character",
            id="empty-run-id",
        ),
        pytest.param(
            wire("text", text="x") | {"seq": 0},
            "text",
            "seq: Input should be greater than or equal to 1",
            id="zero-seq",
        ),
        pytest.param(
            wire("done", messageId="m", stopReason="aborted"),
            "done",
            "stopReason: Input should be 'stop', 'length' or 'cancelled'",
            id="bad-stop-reason",
        ),
        pytest.param(
            wire("tool_call_completed", toolCallId="t", toolName="n", arguments=[1]),
            "tool_call_completed",
            "arguments: Input should be an object",
            id="arguments-not-object",
        ),
        pytest.param(
            wire(
                "context_info",
                usedTokens=1,
                maxTokens=2,
                ratio=-0.5,
                severity="ok",
                compactionRecommended=False,
            ),
            "context_info",
            "ratio: Input should be greater than or equal to 0",
            id="negative-ratio",
        ),
        pytest.param(
            wire("context_info", usedTokens=1, maxTokens=2, ratio=0.5, severity="meh"),
            "context_info",
            "severity: Input should be 'ok', 'warning' or 'critical'; "
            "compactionRecommended: Field required",
            id="two-errors-joined",
        ),
        pytest.param(
            {"seq": 3, "runId": "r"},
            None,
            "Unable to extract tag using discriminator 'type'",
            id="missing-type",
        ),
    ],
)
def test_wrong_fields_are_an_invalid_event_with_type_and_detail(
    frame: Wire, event_type: str | None, detail: str
) -> None:
    skip = skipped(frame)
    assert (skip.reason, skip.event_type, skip.detail) == ("invalid_event", event_type, detail)


def test_non_string_type_is_an_invalid_event_without_type() -> None:
    skip = skipped({"type": 5, "seq": 3, "runId": "r", "done": False})
    assert (skip.reason, skip.event_type) == ("invalid_event", None)
    assert (skip.run_id, skip.seq) == ("r", 3)


def test_non_finite_ratio_is_an_invalid_event() -> None:
    data = json.dumps(
        wire(
            "context_info",
            usedTokens=1,
            maxTokens=2,
            ratio=float("nan"),
            severity="ok",
            compactionRecommended=False,
        )
    )
    assert "NaN" in data
    assert skipped(data).detail == "ratio: Input should be a finite number"


def test_invalid_event_reads_ids_but_its_seq_is_not_seen() -> None:
    skip = skipped(wire("text", text=5))
    assert (skip.run_id, skip.seq) == ("run_1", 7)
    assert skip.seen_seq is None


@pytest.mark.parametrize(
    ("field", "value"),
    [
        pytest.param("seq", 7.0, id="seq-float"),
        pytest.param("seq", "7", id="seq-string"),
        pytest.param("seq", True, id="seq-bool"),
        pytest.param("done", 0, id="done-int"),
        pytest.param("done", "false", id="done-string"),
        pytest.param("done", None, id="done-null"),
        pytest.param("runId", 12, id="run-id-int"),
    ],
)
def test_common_fields_are_strict(field: str, value: object) -> None:
    skip = skipped(wire("text", text="x") | {field: value})
    assert skip.reason == "invalid_event"
    assert skip.detail.startswith(f"{field}: ")


@pytest.mark.parametrize(
    "frame",
    [
        pytest.param(wire("tool_result", toolCallId="t", result=1, isError=0), id="is-error-int"),
        pytest.param(
            wire(
                "context_info",
                usedTokens=1.5,
                maxTokens=2,
                ratio=0.5,
                severity="ok",
                compactionRecommended=False,
            ),
            id="tokens-float",
        ),
        pytest.param(
            wire(
                "context_info",
                usedTokens=1,
                maxTokens=2,
                ratio=0.5,
                severity="ok",
                compactionRecommended="true",
            ),
            id="flag-string",
        ),
        pytest.param(
            wire("continuation_transition", mode="cursor", recovered=1), id="recovered-int"
        ),
        pytest.param(wire("thinking", text=1), id="text-int"),
    ],
)
def test_event_fields_are_not_coerced(frame: Wire) -> None:
    assert skipped(frame).reason == "invalid_event"


def test_events_are_frozen() -> None:
    event = parsed(wire("text", text="x"))
    with pytest.raises(ValidationError):
        event.seq = 8


def test_event_adapter_validates_python_dicts_too() -> None:
    event = EVENT_ADAPTER.validate_python(wire("done", messageId="m", stopReason="stop"))
    assert isinstance(event, DoneEvent)


# --- Partial JSON for tool arguments -----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("", {}, id="empty"),
        pytest.param("   ", {}, id="whitespace"),
        pytest.param("{", {}, id="open-brace"),
        pytest.param('{"a"', {}, id="key-only"),
        pytest.param('{"a":', {}, id="key-and-colon"),
        pytest.param('{"ab', {}, id="key-cut"),
        pytest.param('{"a": 1', {"a": 1}, id="number-unclosed"),
        pytest.param('{"a": 1,', {"a": 1}, id="trailing-comma"),
        pytest.param('{"q": "hel', {"q": "hel"}, id="string-cut"),
        pytest.param('{"q": "a\\', {"q": "a"}, id="string-cut-in-escape"),
        pytest.param('{"q": "a\\u00e', {"q": "a"}, id="string-cut-in-unicode-escape"),
        pytest.param('{"a": {"b": "c', {"a": {"b": "c"}}, id="nested-object"),
        pytest.param('{"a": {', {"a": {}}, id="nested-open"),
        pytest.param('{"a": [1, 2', {"a": [1, 2]}, id="array-cut"),
        pytest.param('{"a": ["x', {"a": ["x"]}, id="array-string-cut"),
        pytest.param('{"a": [1, {"b": tr', {"a": [1, {}]}, id="literal-cut-in-array"),
        pytest.param('{"x": 12', {"x": 12}, id="integer-cut-mid-way"),
        pytest.param('{"x": 5, "a": 1.', {"x": 5}, id="float-cut-at-dot"),
        pytest.param('{"x": 5, "a": -', {"x": 5}, id="minus-only"),
        pytest.param('{"x": 1e', {}, id="exponent-cut"),
        pytest.param('{"x": 5, "a": tr', {"x": 5}, id="true-cut"),
        pytest.param('{"x": true', {"x": True}, id="true-unclosed"),
        pytest.param('{"x": 5, "a": nul', {"x": 5}, id="null-cut"),
        pytest.param('{"a": 1, "b": [true, null]}', {"a": 1, "b": [True, None]}, id="complete"),
        pytest.param('{"a": 1}}', {"a": 1}, id="complete-then-garbage"),
        pytest.param("garbage", {}, id="garbage"),
        pytest.param("[1, 2", {}, id="array-top-level"),
        pytest.param('"str', {}, id="string-top-level"),
        pytest.param("42", {}, id="number-top-level"),
        pytest.param("null", {}, id="null-top-level"),
        pytest.param('{"a": "\ud83d"}', {}, id="lone-surrogate-in-str"),
    ],
)
def test_parse_partial_arguments(text: str, expected: dict[str, Any]) -> None:
    assert parse_partial_arguments(text) == expected


_json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
_json_values = st.recursive(
    _json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)
_json_objects = st.dictionaries(st.text(), _json_values, max_size=5)


@given(obj=_json_objects, ascii_only=st.booleans(), compact=st.booleans())
def test_every_prefix_of_a_json_object_parses(
    obj: dict[str, Any], ascii_only: bool, compact: bool
) -> None:
    separators = (",", ":") if compact else (", ", ": ")
    text = json.dumps(obj, ensure_ascii=ascii_only, separators=separators)
    for end in range(len(text)):
        prefix = parse_partial_arguments(text[:end])
        assert isinstance(prefix, dict)
        assert set(prefix) <= set(obj), "a prefix never invents a top-level key"
    assert parse_partial_arguments(text) == obj
