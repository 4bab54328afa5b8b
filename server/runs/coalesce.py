"""Delta coalescing: a generator's token deltas merged into one event per short window.

A model writes a token at a time; sent as they come, 2,000 one-character deltas would be 2,000
SSE frames, 2,000 rows written to the run's log and 2,000 events in every replay.
``coalesce(events, window_s)`` sits between a generator (the demo, a real model's turn) and
``emit_all``, so the page, the log and every replay carry one event per window instead:

- Deltas are ``text``, ``thinking`` and ``tool_call_arguments_delta``; one merges only into a
  held delta of the same kind (:func:`delta_key`: the same type, and for tool arguments the
  same ``tool_call_id``). The merged text is the deltas' text joined, byte for byte.
- A delta that opens a window is sent at once: the first token of an answer, of a thinking
  block or of a tool call's arguments is never held, and neither is one after a silence of a
  window. Deltas of the same kind arriving while the window is open are held, merged, until it
  ends; a window that ended with deltas in it opens the next one.
- Any other event sends the held delta first, then itself and closes the window: the order of
  events is kept and a terminal event is always last.
- A window ends on the clock even while the generator is silent (a slow model): its pending
  ``anext`` runs as a task raced against the window's end, and the same task is awaited again
  after a flush, never cancelled for one.
- A generator that raises has its held delta sent before the exception goes on.

# NOTE: a Stop cancels the consumer; the cancel goes on to the generator's pending step, as if
# the consumer awaited it itself (a generator may even choose to go on), and the generator is
# closed at once: a Stop never waits for a window. A held delta is dropped, as are the tokens
# the model had not written yet: the answer ends where its readers saw it end.

# NOTE: the registry stamps a thinking event's ``elapsedMs`` when it logs it, so a merged
# thinking delta carries the time its window was sent. A thinking block's span is unchanged: it
# starts at ``thinking_start`` (or its first delta, sent at once) and ends at the next other
# event, and the first text delta after thinking opens a window of its own, so is not held.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass, field

from app.wire.protocol import (
    StreamEvent,
    TextEvent,
    ThinkingEvent,
    ToolCallArgumentsDeltaEvent,
)

WINDOW_S = 0.05
DeltaEvent = TextEvent | ThinkingEvent | ToolCallArgumentsDeltaEvent
DeltaKey = tuple[str, str]


def delta_key(event: StreamEvent) -> DeltaKey | None:
    """What a delta may be merged with (``None``: not a delta, never merged)."""
    match event:
        case TextEvent() | ThinkingEvent():
            return (event.type, "")
        case ToolCallArgumentsDeltaEvent(tool_call_id=call_id):
            return (event.type, call_id)
        case _:
            return None


def merged(deltas: list[DeltaEvent]) -> StreamEvent:
    """One event carrying the text of ``deltas`` (all of one key), joined in order."""
    first = deltas[0]
    if isinstance(first, ToolCallArgumentsDeltaEvent):
        pieces = [d.delta for d in deltas if isinstance(d, ToolCallArgumentsDeltaEvent)]
        return first.model_copy(update={"delta": "".join(pieces)})
    texts = [d.text for d in deltas if isinstance(d, TextEvent | ThinkingEvent)]
    return first.model_copy(update={"text": "".join(texts)})


@dataclass(slots=True)
class Window:
    """The open window: whose deltas it takes, when it ends, what it holds (mutable: one per
    :func:`coalesce` call, so a long burst appends instead of copying)."""

    key: DeltaKey
    ends_at: float
    held: list[DeltaEvent] = field(default_factory=list)


class Merger:
    """The coalescing rules, clock given: what to send for each event and at a window's end."""

    def __init__(self, window_s: float) -> None:
        self.window_s = window_s
        self.window: Window | None = None

    def due_in(self, now: float) -> float | None:
        """Seconds until held deltas must go (``None``: nothing is held)."""
        if self.window is None or not self.window.held:
            return None
        return max(self.window.ends_at - now, 0.0)

    def push(self, event: StreamEvent, now: float) -> list[StreamEvent]:
        """The events to send now that ``event`` arrived."""
        key = delta_key(event)
        window = self.window
        if key is None or not isinstance(event, DeltaEvent):
            sent = self.drain()
            self.window = None
            return [*sent, event]
        if window is not None and window.key == key and (window.held or now < window.ends_at):
            window.held.append(event)
            return []
        sent = self.drain()
        self.window = Window(key, now + self.window_s)
        return [*sent, event]

    def tick(self, now: float) -> list[StreamEvent]:
        """The window ended: send what it holds; if it held any, the next window opens now."""
        window = self.window
        if window is None or not window.held:
            return []
        self.window = Window(window.key, now + self.window_s)
        return [merged(window.held)]

    def drain(self) -> list[StreamEvent]:
        """Send what is held, now (before another event, or at the end)."""
        if self.window is None or not self.window.held:
            return []
        held, self.window.held = self.window.held, []
        return [merged(held)]


def coalesce(
    events: AsyncIterator[StreamEvent], window_s: float = WINDOW_S
) -> AsyncIterator[StreamEvent]:
    """``events`` with the deltas of each ``window_s`` merged; ``window_s <= 0``: as they are."""
    return _coalesced(events, window_s) if window_s > 0 else events


async def _coalesced(
    events: AsyncIterator[StreamEvent], window_s: float
) -> AsyncIterator[StreamEvent]:
    clock = asyncio.get_running_loop().time
    merger = Merger(window_s)
    upcoming: asyncio.Task[StreamEvent | None] | None = None
    try:
        while True:
            if upcoming is None:
                upcoming = asyncio.create_task(_next(events))
            await _wait(upcoming, merger.due_in(clock()))
            if not upcoming.done():
                for flushed in merger.tick(clock()):
                    yield flushed
                continue
            step, upcoming = upcoming, None
            try:
                arrived = step.result()
            except Exception:
                for held in merger.drain():
                    yield held
                raise
            if arrived is None:
                break
            for out in merger.push(arrived, clock()):
                yield out
        for held in merger.drain():
            yield held
    finally:
        await _close(events, upcoming)


async def _wait(step: asyncio.Task[StreamEvent | None], timeout: float | None) -> None:
    """Until the generator's step is done or ``timeout`` seconds passed. A cancel is passed on
    to the step, as ``await step`` would, and ends the wait cancelled if the step ends
    cancelled (or was done already); a generator that takes the cancel and goes on is followed."""
    try:
        await asyncio.wait({step}, timeout=timeout)
    except asyncio.CancelledError:
        if not step.cancel():
            raise  # NOTE: the step was done already: the cancel is the consumer's alone
        await asyncio.wait({step})
        if step.cancelled():
            raise
        current = asyncio.current_task()
        if current is not None:
            current.uncancel()


async def _next(events: AsyncIterator[StreamEvent]) -> StreamEvent | None:
    return await anext(events, None)


async def _close(events: AsyncIterator[StreamEvent], upcoming: asyncio.Task[object] | None) -> None:
    """Stop the generator: cancel its pending step, then close it."""
    if upcoming is not None:
        upcoming.cancel()
        await asyncio.wait({upcoming})
        if not upcoming.cancelled():
            upcoming.exception()  # NOTE: read, so asyncio does not log it as never retrieved
    if isinstance(events, AsyncGenerator):
        await events.aclose()
