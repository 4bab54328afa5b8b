"""Delta coalescing (server.runs.coalesce): one event per window, nothing lost, Stop at once."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from dataclasses import dataclass

import pytest
from aiohttp.test_utils import TestServer
from hypothesis import given, settings
from hypothesis import strategies as st

from app.wire.protocol import (
    ContextInfoEvent,
    DoneEvent,
    ErrorEvent,
    StreamEvent,
    TextEvent,
    ThinkingEvent,
    ThinkingStartEvent,
    ToolCallArgumentsDeltaEvent,
    ToolCallStartedEvent,
    UserMessageIdEvent,
)
from server.__main__ import parse_args
from server.runs.coalesce import Merger, coalesce, delta_key
from server.runs.drafts import draft
from tests.server.conftest import MakeApi, StartServer, logged_events, wait_stopped
from tests.server.helpers import JsonObject, read_events

LONG = 10.0  # NOTE: a window no test waits out: every delta after the first is in it


# --- a scripted generator ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Pause:
    """The generator is silent this long (a slow model)."""

    seconds: float


@dataclass(frozen=True, slots=True)
class Fail:
    """The generator raises here."""

    message: str


Step = StreamEvent | Pause | Fail


def text(value: str) -> StreamEvent:
    return draft(TextEvent, text=value)


def thinking(value: str) -> StreamEvent:
    return draft(ThinkingEvent, text=value)


def args(call_id: str, delta: str) -> StreamEvent:
    return draft(ToolCallArgumentsDeltaEvent, tool_call_id=call_id, delta=delta)


def started(call_id: str) -> StreamEvent:
    return draft(ToolCallStartedEvent, tool_call_id=call_id, tool_name="web_search")


def info() -> StreamEvent:
    return draft(
        ContextInfoEvent,
        used_tokens=1,
        max_tokens=10,
        ratio=0.1,
        severity="ok",
        compaction_recommended=False,
    )


DONE = draft(DoneEvent, message_id="m1", stop_reason="stop")
ERROR = draft(ErrorEvent, error="boom", code="provider_error")


async def scripted(steps: Sequence[Step]) -> AsyncIterator[StreamEvent]:
    for step in steps:
        if isinstance(step, Pause):
            await asyncio.sleep(step.seconds)
        elif isinstance(step, Fail):
            raise RuntimeError(step.message)
        else:
            yield step


def short(event: StreamEvent) -> str:
    """An event in a line: ``text:abc``, ``args c1:{"q``, ``done``."""
    match event:
        case TextEvent() | ThinkingEvent():
            return f"{event.type}:{event.text}"
        case ToolCallArgumentsDeltaEvent():
            return f"args {event.tool_call_id}:{event.delta}"
        case ToolCallStartedEvent():
            return f"started {event.tool_call_id}"
        case _:
            return event.type


async def timed(steps: Sequence[Step], window_s: float) -> list[tuple[float, str]]:
    """Each coalesced event with the seconds since the start at which the consumer got it."""
    loop = asyncio.get_running_loop()
    start, seen = loop.time(), []
    async for event in coalesce(scripted(steps), window_s):
        seen.append((loop.time() - start, short(event)))
    return seen


async def shorts(steps: Sequence[Step], window_s: float = LONG) -> list[str]:
    return [line for _at, line in await timed(steps, window_s)]


# --- the rules ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        pytest.param(
            [text("a"), text("b"), text("c"), DONE],
            ["text:a", "text:bc", "done"],
            id="same-type-merges-after-the-first-sent-at-once",
        ),
        pytest.param(
            [thinking("x"), thinking("y"), thinking("z"), text("a"), text("b"), text("c"), DONE],
            ["thinking:x", "thinking:yz", "text:a", "text:bc", "done"],
            id="another-type-sends-the-held-one-and-starts-at-once",
        ),
        pytest.param(
            [
                args("c1", '{"q'),
                args("c1", '":'),
                args("c1", "1}"),
                args("c2", "{"),
                args("c2", "}"),
            ],
            ['args c1:{"q', 'args c1:":1}', "args c2:{", "args c2:}"],
            id="tool-arguments-merge-by-call-id",
        ),
        pytest.param(
            [args("c1", "a"), args("c2", "b"), args("c1", "c"), args("c2", "d")],
            ["args c1:a", "args c2:b", "args c1:c", "args c2:d"],
            id="interleaved-calls-never-merge",
        ),
        pytest.param(
            [text("a"), text("b"), text("c"), started("c1"), text("d"), text("e")],
            ["text:a", "text:bc", "started c1", "text:d", "text:e"],
            id="another-event-sends-the-held-delta-first-and-closes-the-window",
        ),
        pytest.param(
            [text("a"), text("b"), text("c"), ERROR],
            ["text:a", "text:bc", "error"],
            id="a-terminal-event-comes-after-the-held-delta",
        ),
        pytest.param(
            [text("a"), text("b"), text("c")],
            ["text:a", "text:bc"],
            id="the-end-of-the-generator-sends-the-held-delta",
        ),
        pytest.param(
            [
                draft(UserMessageIdEvent, message_id="u1"),
                draft(ThinkingStartEvent),
                info(),
                DONE,
            ],
            ["user_message_id", "thinking_start", "context_info", "done"],
            id="other-events-pass-as-they-are",
        ),
        pytest.param(
            [text("é"), text("🌊"), text(""), text("\r\n")],
            ["text:é", "text:🌊\r\n"],
            id="any-text-joined-byte-for-byte",
        ),
    ],
)
async def test_deltas_of_one_window_are_merged(steps: list[Step], expected: list[str]) -> None:
    assert await shorts(steps) == expected


async def test_a_window_of_zero_sends_every_event_as_it_is() -> None:
    steps = [text("a"), text("b"), args("c1", "{"), args("c1", "}"), DONE]
    source = scripted(steps)
    assert coalesce(source, 0.0) is source
    assert await shorts(steps, 0.0) == ["text:a", "text:b", "args c1:{", "args c1:}", "done"]


async def test_a_failing_generator_has_its_held_delta_sent_before_its_exception() -> None:
    seen: list[str] = []
    with pytest.raises(RuntimeError, match="provider exploded"):
        async for event in coalesce(scripted([text("a"), text("b"), Fail("provider exploded")])):
            seen.append(short(event))
    assert seen == ["text:a", "text:b"]


# --- the clock ---------------------------------------------------------------------------------


async def test_the_first_delta_is_not_held() -> None:
    seen = await timed([text("a"), Pause(0.3), DONE], window_s=0.2)
    assert [line for _at, line in seen] == ["text:a", "done"]
    assert seen[0][0] < 0.1, "sent at once, not at the end of its window"


async def test_a_silent_generator_still_has_its_held_delta_sent_when_the_window_ends() -> None:
    seen = await timed([text("a"), text("b"), text("c"), Pause(1.0), text("d"), DONE], 0.1)
    assert [line for _at, line in seen] == ["text:a", "text:bc", "text:d", "done"]
    held_until = seen[1][0]
    assert 0.09 <= held_until < 0.5, "sent when the window ended, while the generator was silent"
    assert seen[2][0] >= 1.0 and seen[2][0] - seen[1][0] > 0.5


async def test_a_delta_after_a_silence_of_a_window_is_sent_at_once() -> None:
    seen = await timed([text("a"), Pause(0.3), text("b"), Pause(0.3), text("c")], 0.1)
    assert [line for _at, line in seen] == ["text:a", "text:b", "text:c"]
    assert seen[1][0] < 0.3 + 0.1 and seen[2][0] < 0.6 + 0.1


# --- Stop --------------------------------------------------------------------------------------


class Watched:
    """A generator that sends two deltas and then waits for ever; it notes how it ended."""

    def __init__(self) -> None:
        self.ended: list[str] = []

    async def events(self) -> AsyncIterator[StreamEvent]:
        try:
            yield text("a")
            yield text("b")
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.ended.append("cancelled")
            raise
        finally:
            self.ended.append("closed")
        yield DONE  # pragma: no cover - never reached


async def test_a_stop_cancels_the_generator_at_once_not_after_the_window() -> None:
    watched, seen = Watched(), asyncio.Event()

    async def consume() -> None:
        async for _event in coalesce(watched.events(), LONG):
            seen.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(seen.wait(), 5)
    await asyncio.sleep(0.01)  # NOTE: "b" is held now, the generator waits
    started_at = asyncio.get_running_loop().time()
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=2.0)
    assert done and task.cancelled()
    assert asyncio.get_running_loop().time() - started_at < 0.5
    assert watched.ended == ["cancelled", "closed"]


async def test_a_stop_as_the_next_event_arrives_is_not_lost() -> None:
    consumer: list[asyncio.Task[None]] = []

    async def stopped_as_it_yields() -> AsyncIterator[StreamEvent]:
        yield text("a")
        await asyncio.sleep(0.01)
        consumer[0].cancel()  # NOTE: the Stop lands while this step ends with an event
        yield text("b")
        yield DONE

    async def consume() -> None:
        async for _event in coalesce(stopped_as_it_yields(), LONG):
            pass

    consumer.append(asyncio.create_task(consume()))
    done, _ = await asyncio.wait(consumer, timeout=2.0)
    assert done and consumer[0].cancelled()


async def test_closing_the_coalesced_events_cancels_the_generator_s_pending_step() -> None:
    watched = Watched()
    merged = coalesce(watched.events(), 0.05)
    assert short(await anext(merged)) == "text:a"
    assert short(await anext(merged)) == "text:b", "sent when its window ended"
    assert isinstance(merged, AsyncGenerator)
    await merged.aclose()  # NOTE: the generator is waiting meanwhile: its step is pending
    assert watched.ended == ["cancelled", "closed"]


async def test_a_generator_that_goes_on_after_a_cancel_is_followed() -> None:
    """As if awaited directly: the cancel is the generator's to take (see test_cancel.py)."""

    async def stubborn() -> AsyncIterator[StreamEvent]:
        yield text("a")
        yield text("b")
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(10)
        yield DONE

    seen: list[str] = []

    async def consume() -> None:
        async for event in coalesce(stubborn(), LONG):
            seen.append(short(event))

    task = asyncio.create_task(consume())
    await asyncio.sleep(0.05)
    task.cancel()
    await asyncio.wait_for(task, 5)
    assert seen == ["text:a", "text:b", "done"] and not task.cancelled()


# --- properties ---------------------------------------------------------------------------------


def normalised(events: Sequence[StreamEvent]) -> list[str]:
    """The events with every run of deltas of one key merged: what coalescing must keep."""
    lines: list[str] = []
    keys: list[object] = []
    for event in events:
        key = delta_key(event)
        if key is not None and keys and keys[-1] == key:
            lines[-1] += short(event).split(":", 1)[1]
        else:
            lines.append(short(event))
        keys.append(key)
    return lines


DELTAS = st.one_of(
    st.builds(text, st.text(max_size=3)),
    st.builds(thinking, st.text(max_size=3)),
    st.builds(args, st.sampled_from(["c1", "c2"]), st.text(max_size=3)),
)
STEPS = st.lists(
    st.one_of(
        DELTAS,
        DELTAS,
        DELTAS,
        st.just(info()),
        st.builds(Pause, st.sampled_from([0.0, 0.0005, 0.002])),
    ),
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(steps=STEPS, window_ms=st.sampled_from([0.5, 1.0, 3.0, 10_000.0]))
def test_any_deltas_and_pauses_give_the_same_text_in_no_more_events(
    steps: list[Step], window_ms: float
) -> None:
    events = [step for step in steps if not isinstance(step, Pause | Fail)]

    async def run() -> list[StreamEvent]:
        return [event async for event in coalesce(scripted([*steps, DONE]), window_ms / 1000)]

    out = asyncio.run(run())
    assert normalised(out) == normalised([*events, DONE])
    assert len(out) <= len(events) + 1


Timeline = list[tuple[float, StreamEvent]]


def simulate(timeline: Timeline, window_s: float) -> Timeline:
    """The merger on a fake clock: each event arrives at its time, windows end on theirs."""
    merger, now, out = Merger(window_s), 0.0, []
    for at, event in timeline:
        while (due := merger.due_in(now)) is not None and now + due <= at:
            now += due
            out += [(now, sent) for sent in merger.tick(now)]
        now = at
        out += [(now, sent) for sent in merger.push(event, now)]
    return out + [(now, sent) for sent in merger.drain()]


def tagged(kind: str, tag: str) -> StreamEvent:
    if kind in ("text", "thinking"):
        return text(tag) if kind == "text" else thinking(tag)
    return info() if kind == "other" else args(kind, tag)


@settings(max_examples=200, deadline=None)
@given(
    gaps=st.lists(st.floats(0.0, 0.2), max_size=60),
    kinds=st.lists(st.sampled_from(["text", "thinking", "c1", "c2", "other"]), max_size=60),
)
def test_no_delta_is_held_longer_than_its_window(gaps: list[float], kinds: list[str]) -> None:
    """Each delta's text is its number; each sent delta is checked against its arrivals."""
    window_s, at, timeline, arrived = 0.05, 0.0, [], {}
    for number, (gap, kind) in enumerate(zip(gaps, kinds, strict=False)):
        at += gap
        timeline.append((at, tagged(kind, f"<{number}>")))
        arrived[number] = at
    out = simulate(timeline, window_s)
    for sent_at, event in out:
        for number in map(int, re.findall(r"<(\d+)>", short(event))):
            assert sent_at - arrived[number] <= window_s + 1e-9, (number, short(event))
    assert normalised([event for _at, event in out]) == normalised([e for _at, e in timeline])


# --- the server: the demo model, the log and resumes -------------------------------------------


async def demo_answer(
    start_server: StartServer, make_api: MakeApi, coalesce_ms: float, run_id: str
) -> tuple[TestServer, list[JsonObject]]:
    server = await start_server(demo_token_ms=1.0, coalesce_ms=coalesce_ms)
    api = await make_api("alice", on=server)
    events = await api.run_turn(await api.new_chat(), "tell me a story", runId=run_id)
    await wait_stopped(server, run_id)
    return server, events


def text_of(events: Sequence[JsonObject]) -> str:
    return "".join(event["text"] for event in events if event["type"] == "text")


async def test_a_demo_answer_is_far_fewer_events_than_tokens_with_the_same_text(
    start_server: StartServer, make_api: MakeApi
) -> None:
    _server, each = await demo_answer(start_server, make_api, 0.0, "run_tokens")
    server, merged = await demo_answer(start_server, make_api, 50.0, "run_merged")
    tokens = sum(event["type"] == "text" for event in each)
    windows = sum(event["type"] == "text" for event in merged)
    assert text_of(merged) == text_of(each) and tokens > 100
    assert windows * 5 <= tokens, (windows, tokens)
    assert await logged_events(server, "run_merged") == merged, "the log holds what was sent"


async def test_a_resume_from_any_seq_joins_to_the_same_text(
    start_server: StartServer, make_api: MakeApi
) -> None:
    server, events = await demo_answer(start_server, make_api, 50.0, "run_resumed")
    api = await make_api("alice", on=server)
    whole = text_of(events)
    for after in range(len(events) + 1):
        rest = await api.replay("run_resumed", after=after)
        assert rest == events[after:]
        assert text_of(events[:after]) + text_of(rest) == whole, after


async def test_a_resume_of_a_live_answer_joins_to_the_same_text(
    start_server: StartServer, make_api: MakeApi
) -> None:
    server = await start_server(demo_token_ms=5.0, coalesce_ms=50.0)
    api = await make_api("alice", on=server)
    response = await api.stream(await api.new_chat(), "tell me a story", runId="run_live")
    seen = await read_events(response, 3)
    response.close()
    rest = await api.replay("run_live", after=seen[-1]["seq"])
    assert rest[-1]["type"] == "done"
    assert text_of(seen) + text_of(rest) == text_of(await api.replay("run_live"))
    assert [e["seq"] for e in seen + rest] == list(range(1, len(seen) + len(rest) + 1))


async def test_a_thinking_block_ends_when_the_text_starts_not_a_window_later(
    start_server: StartServer, make_api: MakeApi
) -> None:
    server = await start_server(demo_token_ms=2.0, coalesce_ms=300.0)
    api = await make_api("alice", on=server)
    chat_id = await api.new_chat()
    events = await api.run_turn(chat_id, "why", thinkingEnabled=True, reasoningEffort="high")
    last_thinking = [e for e in events if e["type"] == "thinking"][-1]
    first_text = next(e for e in events if e["type"] == "text")
    assert first_text["seq"] == last_thinking["seq"] + 1
    assert first_text["elapsedMs"] - last_thinking["elapsedMs"] < 150
    part = (await api.json("GET", f"/api/chats/{chat_id}"))["messages"][-1]["parts"][0]
    assert part["type"] == "thinking"
    assert (part["startedMs"], part["endedMs"]) == (events[1]["elapsedMs"], first_text["elapsedMs"])
    await wait_stopped(server, events[0]["runId"])


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        pytest.param([], 50.0, id="fifty-ms-by-default"),
        pytest.param(["--coalesce-ms", "20"], 20.0, id="a-window-given"),
        pytest.param(["--coalesce-ms", "0"], 0.0, id="zero-turns-it-off"),
    ],
)
def test_the_window_comes_from_the_command_line(argv: list[str], expected: float) -> None:
    assert parse_args(argv).coalesce_ms == expected


def test_a_negative_window_is_refused() -> None:
    with pytest.raises(SystemExit):
        parse_args(["--coalesce-ms", "-1"])
