"""Content events building an answer's parts."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.wire.parts import (
    PARTS_ADAPTER,
    ContentEvent,
    ContinuationPart,
    ImagePart,
    Parts,
    SystemEventPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    answer_text,
    apply_content,
)
from app.wire.protocol import ParsedEvent, parse_event
from app.wire.text import Text


def ev(event_type: str, **fields: Any) -> ContentEvent:
    """A validated content event (wire camelCase ``fields``)."""
    payload = {"type": event_type, "runId": "r1", "seq": 1, "done": False, **fields}
    parsed = parse_event(json.dumps(payload))
    assert isinstance(parsed, ParsedEvent), parsed
    return parsed.event  # type: ignore[return-value]


def build(*events: ContentEvent) -> Parts:
    parts: Parts = ()
    for event in events:
        parts = apply_content(parts, event)
    return parts


def tool(**fields: Any) -> ToolCallPart:
    return ToolCallPart(**{"tool_call_id": "t1", **fields})


CASES = [
    pytest.param(
        [ev("text", text="a"), ev("text", text="b")],
        (TextPart(Text("ab")),),
        id="text-deltas-extend-one-part",
    ),
    pytest.param(
        [ev("assistant_text_delta", text="a")], (TextPart(Text("a")),), id="legacy-text-alias"
    ),
    pytest.param(
        [
            ev("thinking_start"),
            ev("thinking", text="hm"),
            ev("text", text="a"),
            ev("thinking", text="again"),
        ],
        (ThinkingPart(Text("hm")), TextPart(Text("a")), ThinkingPart(Text("again"))),
        id="thinking-then-text-then-thinking",
    ),
    pytest.param(
        [ev("thinking_start"), ev("thinking_start")],
        (ThinkingPart(), ThinkingPart()),
        id="thinking-start-opens-a-new-block",
    ),
    pytest.param(
        [ev("tool_call_started", toolCallId="t1", toolName="search")],
        (tool(tool_name="search"),),
        id="tool-started",
    ),
    pytest.param(
        [
            ev("tool_call_started", toolCallId="t1", toolName="search"),
            ev("tool_call_started", toolCallId="t1", toolName="search"),
        ],
        (tool(tool_name="search"),),
        id="tool-started-twice-is-one-part",
    ),
    pytest.param(
        [ev("tool_call_arguments_delta", toolCallId="t1", delta='{"q": "x')],
        (tool(arguments_text='{"q": "x', arguments={"q": "x"}),),
        id="tool-delta-without-start-creates-the-part",
    ),
    pytest.param(
        [
            ev("tool_call_started", toolCallId="t1", toolName="s"),
            ev("tool_call_arguments_delta", toolCallId="t1", delta="not json"),
        ],
        (tool(tool_name="s", arguments_text="not json", arguments={}),),
        id="tool-unparsable-arguments-are-empty",
    ),
    pytest.param(
        [
            ev("tool_call_started", toolCallId="t1", toolName="s"),
            ev("tool_call_completed", toolCallId="t1", toolName="s", arguments={"a": 1}),
        ],
        (tool(tool_name="s", arguments={"a": 1}, status="completed"),),
        id="tool-completed-is-authoritative",
    ),
    pytest.param(
        [
            ev("tool_call_started", toolCallId="t1", toolName="s"),
            ev("tool_result", toolCallId="t1", result={"ok": False}, isError=True),
        ],
        (tool(tool_name="s", status="error", result={"ok": False}, is_error=True),),
        id="tool-error-result",
    ),
    pytest.param(
        [
            ev("tool_result", toolCallId="t1", result=3),
            ev("tool_call_completed", toolCallId="t1", toolName="s", arguments={}),
        ],
        (tool(tool_name="s", status="done", result=3),),
        id="late-completion-keeps-the-result-status",
    ),
    pytest.param(
        [
            ev("image_generation_started", imageId="i1", prompt="cat", toolCallId="t1"),
            ev("image_generation_completed", imageId="i1", url="https://x/cat.png", alt="a cat"),
        ],
        (ImagePart("i1", "cat", "t1", "completed", "https://x/cat.png", "a cat"),),
        id="image-completed",
    ),
    pytest.param(
        [
            ev("image_generation_started", imageId="i1", prompt="cat"),
            ev("image_generation_started", imageId="i1", prompt="cat"),
            ev("image_generation_failed", imageId="i1", error="nsfw"),
        ],
        (ImagePart("i1", "cat", status="failed", error="nsfw"),),
        id="image-failed",
    ),
    pytest.param(
        [ev("image_generation_completed", imageId="i9", url="https://x/y.png")],
        (ImagePart("i9", status="completed", url="https://x/y.png"),),
        id="image-completed-without-start",
    ),
    pytest.param(
        [
            ev("continuation_transition", mode="cursor", recovered=False),
            ev("continuation_transition", mode="cursor", recovered=True, reason="ok"),
        ],
        (ContinuationPart("cursor", True, "ok"),),
        id="continuation-flips-to-recovered",
    ),
    pytest.param(
        [
            ev("continuation_transition", mode="replay", recovered=False),
            ev("continuation_transition", mode="cursor", recovered=False),
            ev("continuation_transition", mode="replay", recovered=True),
        ],
        (ContinuationPart("replay", True), ContinuationPart("cursor", False)),
        id="continuation-flips-the-same-mode-first",
    ),
    pytest.param(
        [
            ev("continuation_transition", mode="cursor", recovered=False),
            ev("continuation_transition", mode="replay", recovered=True),
        ],
        (ContinuationPart("replay", True),),
        id="continuation-flips-any-mode",
    ),
    pytest.param(
        [ev("continuation_transition", mode="cursor", recovered=True)],
        (ContinuationPart("cursor", True),),
        id="continuation-recovered-alone",
    ),
    pytest.param(
        [ev("system_event", kind="tool_loop_exhausted", message="stop")],
        (SystemEventPart("tool_loop_exhausted", "stop"),),
        id="system-event-marker",
    ),
]


@pytest.mark.parametrize(("events", "expected"), CASES)
def test_apply_content(events: list[ContentEvent], expected: Parts) -> None:
    assert build(*events) == expected


def test_answer_text_joins_text_parts_only() -> None:
    parts = build(
        ev("thinking", text="hidden"),
        ev("text", text="a"),
        ev("system_event", kind="k", message="m"),
        ev("text", text="b"),
    )
    assert answer_text(parts) == "ab"
    thinking = parts[0]
    assert isinstance(thinking, ThinkingPart) and thinking.text == "hidden"


def test_applying_to_an_old_version_leaves_newer_ones_alone() -> None:
    base = build(ev("text", text="a"))
    one, two = apply_content(base, ev("text", text="1")), apply_content(base, ev("text", text="2"))
    assert (answer_text(base), answer_text(one), answer_text(two)) == ("a", "a1", "a2")


@pytest.mark.parametrize(
    ("events", "effect", "decided_by"),
    [
        pytest.param(
            [ev("tool_approval_requested", toolCallId="c", toolName="n__s", arguments={"a": 1})],
            "awaiting_approval",
            None,
            id="waiting",
        ),
        pytest.param(
            [
                ev("tool_approval_requested", toolCallId="c", toolName="n__s", arguments={}),
                ev("tool_decided", toolCallId="c", approved=False, by="stop"),
            ],
            "denied",
            "stop",
            id="denied-by-stop",
        ),
        pytest.param(
            [
                ev("tool_approval_requested", toolCallId="c", toolName="n__s", arguments={}),
                ev("tool_decided", toolCallId="c", approved=True, by="user"),
                ev("tool_result", toolCallId="c", result={}, isError=True, effect="unknown"),
            ],
            "unknown",
            "user",
            id="approved-then-unknown",
        ),
        pytest.param(
            [
                ev("tool_result", toolCallId="c", result={}, effect="done"),
                ev("tool_decided", toolCallId="c", approved=False, by="timeout"),
            ],
            "done",
            None,
            id="a-result-is-not-undone-by-a-late-decision",
        ),
    ],
)
def test_tool_effect_folds_from_approval_decision_and_result(
    events: list[ContentEvent], effect: str, decided_by: str | None
) -> None:
    (part,) = build(*events)
    assert isinstance(part, ToolCallPart)
    assert (part.effect, part.decided_by) == (effect, decided_by)
    assert PARTS_ADAPTER.validate_python(PARTS_ADAPTER.dump_python([part])) == [part]
