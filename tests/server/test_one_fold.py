"""One truth for an answer: what the page folds live is what it reads back after a reload.

Any sequence of events drawn from the whole catalogue (repeated starts, results before
completions, continuation markers, images, events that carry no content) is folded twice:
live, by the page's reducer; and through the server — the run registry's fold, its persistence
in SQLite, ``GET /api/chats/{id}``'s messages as JSON, and the page's history loader. The parts
must be equal.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.state.actions import EventReceived, RunStarted
from app.state.history import chat_from_detail
from app.state.reducer import reduce
from app.state.state import ChatState, State
from app.wire.api import ChatDetail, encode_payload
from app.wire.parts import Parts, ThinkingPart
from app.wire.protocol import EVENT_ADAPTER, StreamEvent
from server.config import Config
from server.routes.chats import chat_messages
from server.runs.live import RunMeta
from server.runs.registry import RunRegistry
from server.store.db import SqliteDatabase, iso, now

TOOL_IDS = st.sampled_from(["t1", "t2"])
IMAGE_IDS = st.sampled_from(["i1", "i2"])
WORDS = st.text(alphabet="ab \n#*`é😀", max_size=6)
JSON_VALUES = st.one_of(st.none(), st.integers(-3, 3), st.text(max_size=3), st.lists(st.booleans()))


def _event(event_type: str, **fields: Any) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({"type": st.just(event_type), **fields})


EVENTS = st.one_of(
    _event("thinking_start"),
    _event("thinking", text=WORDS),
    _event("text", text=WORDS),
    _event("assistant_text_delta", text=WORDS),
    _event("tool_call_started", toolCallId=TOOL_IDS, toolName=st.sampled_from(["calc", "find"])),
    _event(
        "tool_call_arguments_delta",
        toolCallId=TOOL_IDS,
        delta=st.sampled_from(['{"a', '": 1', "}", ""]),
    ),
    _event(
        "tool_call_completed",
        toolCallId=TOOL_IDS,
        toolName=st.sampled_from(["calc", "find"]),
        arguments=st.dictionaries(st.sampled_from(["a", "b"]), st.integers(0, 9), max_size=2),
    ),
    _event("tool_result", toolCallId=TOOL_IDS, result=JSON_VALUES, isError=st.booleans()),
    _event(
        "image_generation_started",
        imageId=IMAGE_IDS,
        prompt=WORDS,
        toolCallId=st.one_of(st.none(), TOOL_IDS),
    ),
    _event(
        "image_generation_completed",
        imageId=IMAGE_IDS,
        url=st.sampled_from(["https://x.test/a.png", "data:image/png;base64,iVBORw0KGgo="]),
        alt=st.one_of(st.none(), WORDS),
    ),
    _event("image_generation_failed", imageId=IMAGE_IDS, error=WORDS),
    _event(
        "continuation_transition",
        mode=st.sampled_from(["cursor", "replay"]),
        recovered=st.booleans(),
        reason=st.one_of(st.none(), st.just("model_changed")),
    ),
    _event("system_event", kind=st.sampled_from(["tool_loop_exhausted", "note"]), message=WORDS),
    _event("fallback_notice", reason=st.just("model_changed"), message=WORDS),
    _event(
        "context_info",
        usedTokens=st.integers(0, 9),
        maxTokens=st.just(10),
        ratio=st.just(0.5),
        severity=st.just("ok"),
        compactionRecommended=st.booleans(),
    ),
)


def drafts(payloads: list[dict[str, Any]]) -> list[StreamEvent]:
    return [
        EVENT_ADAPTER.validate_python({"runId": "-", "seq": 1, "done": False, **payload})
        for payload in payloads
    ]


def live_parts(sent: list[str]) -> Parts:
    """The page's reducer, fed the events as the server sent them (numbered, timed)."""
    chat = ChatState("c1", loaded=True)
    state = State(chats={"c1": chat}, chat_order=("c1",), active_chat_id="c1")
    state = reduce(state, RunStarted("r1", 0.0, "c1", "a1", "q", user_message_id="u1"))
    for at, data in enumerate(sent, start=1):
        state = reduce(state, EventReceived("r1", float(at), EVENT_ADAPTER.validate_json(data)))
    return state.chats["c1"].runs["r1"].parts


def streamed_and_reloaded(events: list[StreamEvent]) -> tuple[Parts, Parts]:
    """The parts the page folds from what the server sent, and the parts it reads back after a
    reload: through the registry and SQLite, the chat as JSON, the page's history loader."""

    async def persist() -> tuple[list[dict[str, Any]], list[str]]:
        db = SqliteDatabase(":memory:")
        stamp = now()
        await db.insert(
            "chats",
            {"id": "c1", "user_id": "u", "title": "t", "created_at": stamp, "updated_at": stamp},
        )
        for row in (
            {"id": "u1", "role": "user", "content": "q"},
            {
                "id": "a1",
                "role": "assistant",
                "reply_to": "u1",
                "run_id": "r1",
                "attempt": 1,
                "status": "running",
            },
        ):
            await db.insert(
                "messages", {"chat_id": "c1", "created_at": stamp, "updated_at": stamp, **row}
            )
        await db.insert(
            "runs",
            {
                "id": "r1",
                "user_id": "u",
                "chat_id": "c1",
                "message_id": "a1",
                "user_message_id": "u1",
                "attempt": 1,
                "kind": "demo",
                "status": "running",
                "created_at": stamp,
            },
        )
        registry = RunRegistry(db, Config())
        run = registry.register(RunMeta("r1", "u", "c1", "a1", "u1", 1, "demo"))
        sent = [frame.data for event in events if (frame := await registry.emit(run, event))]
        await registry.finish(run, "completed")
        return await chat_messages(db, "c1"), sent

    messages, sent = asyncio.run(persist())
    detail = ChatDetail(id="c1", title="t", created_at=iso(0), updated_at=iso(0), messages=messages)
    chat = chat_from_detail(ChatDetail.model_validate_json(encode_payload(detail)))
    return live_parts(sent), chat.runs["r1"].parts


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(EVENTS, max_size=14))
def test_the_answer_after_a_reload_is_the_answer_that_streamed(
    payloads: list[dict[str, Any]],
) -> None:
    streamed, reloaded = streamed_and_reloaded(drafts(payloads))
    assert reloaded == streamed


def test_the_known_disagreements_now_agree() -> None:
    """The four cases that differed when the server had its own fold."""
    cases = [
        [
            {"type": "tool_result", "toolCallId": "t1", "result": 1, "isError": False},
            {"type": "tool_call_completed", "toolCallId": "t1", "toolName": "c", "arguments": {}},
        ],
        [{"type": "continuation_transition", "mode": "replay", "recovered": False}] * 2,
        [
            {"type": "continuation_transition", "mode": "cursor", "recovered": False},
            {"type": "continuation_transition", "mode": "replay", "recovered": True},
        ],
        [{"type": "image_generation_started", "imageId": "i1", "prompt": "p"}] * 2,
    ]
    for payloads in cases:
        streamed, reloaded = streamed_and_reloaded(drafts(payloads))
        assert reloaded == streamed, payloads


def test_a_thinking_blocks_duration_is_the_same_after_a_reload() -> None:
    payloads = [
        {"type": "thinking_start"},
        {"type": "thinking", "text": "hm"},
        {"type": "text", "text": "ok"},
    ]
    streamed, reloaded = streamed_and_reloaded(drafts(payloads))
    (thinking, _), (reloaded_thinking, _) = streamed, reloaded
    assert isinstance(thinking, ThinkingPart) and thinking.duration_ms is not None
    assert reloaded_thinking == thinking
