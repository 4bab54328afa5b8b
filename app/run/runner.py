"""Run orchestration: open → decode → parse → dispatch, with timeouts, resume and cancel.

Small coroutines over a :class:`RunEnv`; every outcome is a dispatched action, so the reducer
stays the one place that decides state. Flows (Stop is in :mod:`app.run.cancel`)::

    drive(run)          open_run → read_stream → fill_gap → (dropped?) one automatic resume
    read_resumed(run)   open_events(after last seq, or 0 for a gap replay) → read_stream
                        → fill_gap                                    (410 → expired)
    fill_gap(run)       the terminal event came after a gap → ReplayStarted → read_resumed

# NOTE: a live gap is filled after the stream's terminal event (or, after EOF, by the automatic
# resume), not when it is seen: the live copy keeps growing meanwhile, one connection is read
# at a time, and by then the server's log holds the whole answer, so the replay is one read.

Timeouts (SPEC §5): first event (from the request, so a request that never answers counts),
idle (from the last event; keepalive comments don't count) and total (from the run's start,
or a manual resume's). The request is bounded with ``wait_for``; the body is watched by
:meth:`_Connection.watch`, which sleeps until the nearest deadline instead of wrapping every
read. A timeout fails the run (partial answer kept), stops reading (which aborts the request)
and asks the server to cancel, best effort.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Final, Literal

from app.run.config import ClientConfig
from app.run.transport import ByteStream, ChatApi, StreamTransport
from app.state.actions import (
    Action,
    BytesReceived,
    EventReceived,
    EventsReceived,
    FrameSkipped,
    IssuesRecorded,
    PreStreamFailed,
    ReplayStarted,
    ResumeFailed,
    ResumeFailure,
    ResumeStarted,
    RunFoundEnded,
    StreamEnded,
    StreamFailed,
)
from app.state.decisions import waits_on_a_tool
from app.state.state import ErrorInfo, GapHeld, Replaying, Resuming, RunState, State
from app.state.store import Store
from app.state.trace import Clock
from app.wire.api import RespondStreamBody
from app.wire.codes import ClientTimeoutCode
from app.wire.errors import (
    TIMEOUT_CODES,
    ChatError,
    HttpStatusError,
    TimeoutFired,
    TimeoutKind,
    TransportError,
)
from app.wire.protocol import ParsedEvent, StreamEvent, parse_event
from app.wire.sse import SSEDecoder, SSEMessage

_End = Literal["eof", "stopped"]  # how a connection's reading ended


@dataclass(frozen=True, slots=True)
class RunEnv:
    """What the orchestration needs: the store, the network, settings, a clock."""

    store: Store[State, Action]
    streams: StreamTransport
    api: ChatApi
    config: ClientConfig
    clock: Clock
    is_online: Callable[[], bool] = lambda: True

    def dispatch(self, action: Action) -> None:
        """Dispatch to the store."""
        self.store.dispatch(action)

    def run(self, run_id: str) -> RunState | None:
        """The run's current state."""
        found = self.store.get_state().find_run(run_id)
        return None if found is None else found[1]


@dataclass(slots=True)
class Window:
    """The span the total timeout covers (a run's start, or a manual resume's)."""

    started: float = field(default_factory=lambda: asyncio.get_running_loop().time())


def error_info(error: ChatError) -> ErrorInfo:
    """The state's view of an error: code, message, and HTTP status if any."""
    if isinstance(error, HttpStatusError):
        return ErrorInfo(error.code, error.message, error.status, error.retry_after)
    return ErrorInfo(error.code, error.message)


DROPS: Final = ("eof", "network")
"""Interruptions a resume may continue at once (``offline`` waits for the connection)."""


async def drive(
    env: RunEnv,
    run_id: str,
    body: RespondStreamBody,
    unreachable: Callable[[], None] | None = None,
) -> None:
    """Open a new run's stream and read it; resume once, automatically, if it drops.

    With ``unreachable``, a request that got no answer at all (the server out of reach) is
    withdrawn quietly and ``unreachable()`` called, to queue the prompt with this run id."""
    window = Window()
    try:
        chunks, opened = await _open(env, window, env.streams.open_run(body))
    except TimeoutFired as fired:
        await _fail_timeout(env, run_id, fired.kind)
        return
    except ChatError as error:
        queue = unreachable is not None and isinstance(error, TransportError)
        env.dispatch(PreStreamFailed(run_id, env.clock(), error_info(error), queued=queue))
        if queue and unreachable is not None:
            unreachable()
        return
    await _read_to_end(env, run_id, chunks, window, opened)


async def _read_to_end(
    env: RunEnv, run_id: str, chunks: ByteStream, window: Window, opened: float
) -> None:
    """Read an opened run's stream; fill a gap; resume once, automatically, if it dropped."""
    await read_stream(env, run_id, chunks, window, opened)
    await fill_gap(env, run_id, window)
    run = env.run(run_id)
    dropped = run is not None and run.status == "interrupted" and run.reason in DROPS
    if dropped and env.config.auto_resume and env.is_online():
        env.dispatch(ResumeStarted(run_id, env.clock(), automatic=True))
        await read_resumed(env, run_id, window)


async def drive_queued(
    env: RunEnv, run_id: str, body: RespondStreamBody, started: Callable[[], None]
) -> ChatError | None:
    """Send a prompt queued offline, its run id made when it was queued; ``started()`` once
    the server answers with the stream (nothing of the run is in the store before), then read
    it as :func:`drive` does. When the server already has the run (``409 run_exists``: an
    earlier request got through though its answer was lost), its events are read from the
    first instead, so a prompt is never answered twice. The error, if the server did not
    take it: a :class:`TransportError` (a timeout counts as one) means it should wait again."""
    window = Window()
    try:
        try:
            chunks, opened = await _open(env, window, env.streams.open_run(body))
        except HttpStatusError as error:
            if error.code != "run_exists":
                raise
            chunks, opened = await _open(env, window, env.streams.open_events(run_id, 0))
    except TimeoutFired as fired:
        return TransportError(f"no answer in {_limit_ms(env.config, fired.kind) / 1000:g} s")
    except ChatError as error:
        return error
    started()
    await _read_to_end(env, run_id, chunks, window, opened)
    return None


async def read_resumed(env: RunEnv, run_id: str, window: Window) -> None:
    """Read a resumed run (``ResumeStarted`` already dispatched) from its last seq.

    A gap replay (phase ``Replaying``) reads the whole log, from seq 1.
    """
    run = env.run(run_id)
    if run is None or run.status != "connecting":
        return
    if isinstance(run.phase, Replaying):
        after = 0
    elif isinstance(run.phase, Resuming):
        after = run.phase.after_seq
    else:
        return
    try:
        chunks, opened = await _open(env, window, env.streams.open_events(run_id, after))
    except TimeoutFired as fired:
        await _fail_timeout(env, run_id, fired.kind)
        return
    except ChatError as error:
        expired = isinstance(error, HttpStatusError) and error.status == 410
        reason: ResumeFailure = "expired" if expired else "resume_failed"
        env.dispatch(ResumeFailed(run_id, env.clock(), reason, error_info(error)))
        return
    await read_stream(env, run_id, chunks, window, opened)
    await fill_gap(env, run_id, window)
    await _check_over(env, run_id)


async def _check_over(env: RunEnv, run_id: str) -> None:
    """A resume the user asked for ended without a terminal event: ask the server whether
    more can come (the run still going, or events the page has not seen); when not, say so."""
    run = env.run(run_id)
    if run is None or run.status != "interrupted" or run.reason not in DROPS:
        return
    last = run.trace.resumes[-1] if run.trace.resumes else None
    if last is None or last.automatic or last.recovering:
        return
    try:
        info = await env.api.get_run(run_id)
    except ChatError:
        return  # NOTE: not known: Resume stays offered
    if info.status != "running" and info.last_seq <= run.last_seq:
        env.dispatch(RunFoundEnded(run_id, env.clock()))


async def fill_gap(env: RunEnv, run_id: str, window: Window) -> None:
    """The stream reached its terminal event after a gap: re-read the whole log to fill it."""
    run = env.run(run_id)
    if run is None or not isinstance(run.phase, GapHeld):
        return
    env.dispatch(ReplayStarted(run_id, env.clock()))
    # NOTE: recursion ends here: a replay's seqs must be contiguous, so it never holds a
    # terminal event for another replay (a gap on it interrupts the run instead).
    await read_resumed(env, run_id, window)


async def _open(
    env: RunEnv, window: Window, request: Awaitable[ByteStream]
) -> tuple[ByteStream, float]:
    """Await a stream request within the first-event and total timeouts (else TimeoutFired)."""
    opened = asyncio.get_running_loop().time()
    remaining, kind = _deadline(env.config, window, opened, None, opened)
    try:
        return await asyncio.wait_for(request, timeout=max(remaining, 0.0)), opened
    except TimeoutError:
        raise TimeoutFired(kind, _limit_ms(env.config, kind) / 1000) from None


def _deadline(
    config: ClientConfig, window: Window, opened: float, last_event: float | None, now: float
) -> tuple[float, TimeoutKind]:
    """Seconds left before the nearest timeout, and which one it is."""
    total = window.started + config.total_timeout_ms / 1000 - now
    phase: float
    kind: TimeoutKind
    if last_event is None:
        phase, kind = opened + config.first_event_timeout_ms / 1000 - now, "first_event"
    else:
        phase, kind = last_event + config.idle_timeout_ms / 1000 - now, "idle"
    return (total, "total") if total <= phase else (phase, kind)


def _limit_ms(config: ClientConfig, kind: TimeoutKind) -> int:
    limits = {
        "first_event": config.first_event_timeout_ms,
        "idle": config.idle_timeout_ms,
        "total": config.total_timeout_ms,
    }
    return limits[kind]


async def _fail_timeout(env: RunEnv, run_id: str, kind: TimeoutKind) -> None:
    """The run failed by a timeout: record which, then stop the reader and the server."""
    error = error_info(TimeoutFired(kind, _limit_ms(env.config, kind) / 1000))
    env.dispatch(StreamFailed(run_id, env.clock(), "timeout", error, timeout=kind))
    await _give_up(env, run_id, TIMEOUT_CODES[kind])


async def read_stream(
    env: RunEnv, run_id: str, chunks: ByteStream, window: Window, opened: float
) -> None:
    """Read one connection to its end, a terminal event, a timeout or a protocol error."""
    connection = _Connection(env, run_id, window, opened)
    task = asyncio.ensure_future(connection.consume(chunks))
    try:
        fired = await connection.watch(task)
    finally:
        if not task.done():
            task.cancel()
    await connection.finish(task, fired)


class _Connection:
    """One connection's decoder, timing and dispatching."""

    def __init__(self, env: RunEnv, run_id: str, window: Window, opened: float) -> None:
        self.env, self.run_id, self.window, self.opened = env, run_id, window, opened
        self.decoder = SSEDecoder(max_event_bytes=env.config.max_event_bytes)
        self.loop = asyncio.get_running_loop()
        self.last_event: float | None = None
        self.got_bytes = False
        self.reported_keepalives = 0
        self.reported_issues = 0

    async def consume(self, chunks: ByteStream) -> _End:
        """Feed chunks to the decoder and dispatch what they carry, while the run is live.

        NOTE: leaving the stream early closes it, which aborts its request (and a cancelled
        task aborts the read it was waiting for).
        """
        async with contextlib.aclosing(chunks):
            async for chunk in chunks:
                messages = self.decoder.feed(chunk)
                self._note_bytes()
                self._deliver(messages)
                if not self._live():
                    return "stopped"
        self._deliver(self.decoder.close())
        return "eof" if self._live() else "stopped"

    async def watch(self, task: asyncio.Future[_End]) -> TimeoutKind | None:
        """Wait for ``task``; the timeout that fired first, if one did."""
        # NOTE: never sleep longer than the idle timeout: a first event arriving meanwhile
        # replaces the first-event deadline with an idle one that may come sooner.
        idle = self.env.config.idle_timeout_ms / 1000
        while not task.done():
            now = self.loop.time()
            remaining, kind = _deadline(
                self.env.config, self.window, self.opened, self.last_event, now
            )
            if remaining <= 0 and not self._waits_on_a_tool():
                return kind
            if remaining <= 0:  # NOTE: the user's decision or a tool is awaited, not the server
                self.last_event = now
            await asyncio.wait({task}, timeout=min(max(remaining, 0.0) or idle, idle))
        return None

    def _waits_on_a_tool(self) -> bool:
        run = self.env.run(self.run_id)
        return run is not None and waits_on_a_tool(run.parts)

    async def finish(self, task: asyncio.Future[_End], fired: TimeoutKind | None) -> None:
        """Turn how the connection ended into an action; release what is still open."""
        env, run_id = self.env, self.run_id
        if fired is not None:
            await _fail_timeout(env, run_id, fired)
            return
        try:
            end = task.result()  # NOTE: anything but a TransportError is a bug: it propagates
        except TransportError as error:
            if env.is_online():
                env.dispatch(StreamEnded(run_id, env.clock(), "network", error.detail))
            else:
                env.dispatch(StreamEnded(run_id, env.clock(), "offline", error.detail))
            return
        if end == "eof":
            env.dispatch(StreamEnded(run_id, env.clock(), "eof" if env.is_online() else "offline"))

    def _live(self) -> bool:
        """Still worth reading: the run is live and its terminal event is not held for a replay."""
        run = self.env.run(self.run_id)
        return run is not None and run.is_live and not isinstance(run.phase, GapHeld)

    def _note_bytes(self) -> None:
        """Report the first bytes and new keepalive comments (liveness, for the trace)."""
        new_keepalives = self.decoder.comment_count - self.reported_keepalives
        if self.got_bytes and not new_keepalives:
            return
        self.got_bytes = True
        self.reported_keepalives = self.decoder.comment_count
        self.env.dispatch(BytesReceived(self.run_id, self.env.clock(), new_keepalives))

    def _deliver(self, messages: list[SSEMessage]) -> None:
        """Dispatch what one read carried: the valid events of a stretch in one action (the
        reducer stops where the runner would: once the run no longer reads), each skipped
        frame on its own, in order."""
        env = self.env
        if messages and self._live():
            self.last_event = self.loop.time()
            events: list[StreamEvent] = []
            for message in messages:
                parsed = parse_event(message.data)
                if isinstance(parsed, ParsedEvent):
                    events.append(parsed.event)
                    continue
                self._dispatch_events(events)
                if not self._live():
                    break
                env.dispatch(FrameSkipped(self.run_id, env.clock(), parsed))
            else:
                self._dispatch_events(events)
        self._report_issues()

    def _dispatch_events(self, events: list[StreamEvent]) -> None:
        if len(events) == 1:
            self.env.dispatch(EventReceived(self.run_id, self.env.clock(), events[0]))
        elif events:
            self.env.dispatch(EventsReceived(self.run_id, self.env.clock(), tuple(events)))
        events.clear()

    def _report_issues(self) -> None:
        decoder, env = self.decoder, self.env
        fresh = decoder.issues[self.reported_issues :]
        self.reported_issues = len(decoder.issues)
        ordinary = tuple(f"{i.kind}: {i.detail}" for i in fresh if i.kind != "event-too-large")
        if ordinary:
            env.dispatch(IssuesRecorded(self.run_id, env.clock(), ordinary))
        if decoder.stopped and self._live():
            detail = next((i.detail for i in fresh if i.kind == "event-too-large"), "too large")
            error = ErrorInfo("event_too_large", f"protocol error: {detail}")
            env.dispatch(StreamFailed(self.run_id, env.clock(), "protocol", error))


async def _give_up(env: RunEnv, run_id: str, reason: ClientTimeoutCode) -> None:
    """After the page gave up waiting (the reader is already gone): ask the server to stop,
    saying why, so the run's record (and a reload) shows the same failure."""
    cancel = env.api.cancel_run(run_id, reason)
    with contextlib.suppress(ChatError, TimeoutError):
        await asyncio.wait_for(cancel, env.config.cancel_deadline_ms / 1000)
