"""The run registry: live runs, their generation tasks, readers, cancel and orphan timers.

A run's task is decoupled from any HTTP response. Each produced event is appended to the run's
log in SQLite and to its in-memory frames, then readers (the original stream, resumes) are woken.
The first terminal status persisted wins; after it, appends are refused.

A generator says how its run ends when it does not end it itself (:class:`Endings`): the demo
and a real model log ``done(cancelled)`` when stopped and ``error(generation_failed)`` when they
break; a test scenario logs nothing it was not told to. How a generation was stopped is kept
(:data:`~server.runs.live.StopCause`): the user's Stop and the orphan timer cancel the run, a
server shutdown interrupts it (a restart finds it ``interrupted``, never "cancelled by you").

With several server processes the registry also talks to the others through a
:class:`~server.runs.bus.RunBus`: it claims the runs it generates, publishes their frames and
ends, obeys cancels sent from anywhere, and counts readers elsewhere before orphaning a run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from app.wire.api import ServerRunStatus
from app.wire.codes import ClientTimeoutCode, RunEndCause, RunReason
from app.wire.parts import ThinkingPart
from app.wire.protocol import (
    DoneEvent,
    ErrorEvent,
    StreamEvent,
    ThinkingEvent,
    ThinkingStartEvent,
    encode_event,
    end_error,
)
from server.config import Config
from server.contract.errors import ApiError
from server.runs.bus import LocalBus, Logged, RunBus
from server.runs.live import LiveRun, RunMeta, ServerTrace
from server.runs.unstored import end_unstored
from server.store import messages, runlog
from server.store.db import Database, now
from server.store.faults import is_storage_failure
from server.store.runlog import Frame

log = logging.getLogger("riacho.runs")
FLUSH_INTERVAL_S = 0.25
EARLY_CANCELS_KEPT = 1000
_MAX_TRACES = 2000
CANCEL_POLL_S = 0.05
Body = Coroutine[Any, Any, ServerRunStatus | None]


@dataclass(frozen=True, slots=True)
class Endings:
    """The terminal events a generator logs when its run ends without one of its own."""

    cancelled: StreamEvent | None = None
    failed: Callable[[str], StreamEvent] | None = None


def _timed(run: LiveRun, event: StreamEvent) -> bool:
    """Whether the event carries ``elapsedMs``: thinking events and the one after thinking
    (only where a duration is shown, so text deltas stay small on the wire)."""
    parts = run.answer.parts
    return isinstance(event, ThinkingStartEvent | ThinkingEvent) or bool(
        parts and isinstance(parts[-1], ThinkingPart) and parts[-1].ended_ms is None
    )


class RunRegistry:
    """Every live run of the process, by id."""

    def __init__(self, db: Database, config: Config, bus: RunBus | None = None) -> None:
        self.db = db
        self.config = config
        self.bus: RunBus = bus or LocalBus()
        self.live: dict[str, LiveRun] = {}
        self.traces: dict[str, ServerTrace] = {}
        self.accepting = True
        # NOTE: (user, run) -> when the cancel came, and the page's timeout if it gave up
        self._early_cancels: OrderedDict[tuple[str, str], EarlyCancel] = OrderedDict()
        self._orphan_checks: set[asyncio.Task[None]] = set()
        self._wrap_ups: set[asyncio.Task[None]] = set()

    def register(self, meta: RunMeta) -> LiveRun:
        """Track a run whose rows were just created; it is orphaned unless a reader attaches."""
        trace = ServerTrace(meta.run_id)
        self._keep_trace(trace)
        run = LiveRun(meta, trace)
        self.live[meta.key] = run
        self.bus.claim(meta.key)
        self._arm_orphan_timer(run)
        log.info(
            "run start run=%s user=%s chat=%s attempt=%d kind=%s",
            meta.run_id,
            meta.user_id,
            meta.chat_id,
            meta.attempt,
            meta.kind,
        )
        return run

    def start(self, run: LiveRun, body: Body, endings: Endings = Endings()) -> None:
        """Run ``body`` as the run's generation task; its end is persisted by another task
        (``_wrap_up``), so a Stop arriving then cannot cut the writing of the end short."""
        task = asyncio.get_running_loop().create_task(body)
        task.add_done_callback(lambda done: self._on_task_done(run, endings, done))
        run.attach_task(task)
        early = self._early_cancels.pop((run.meta.user_id, run.run_id), None)
        if early is not None:
            run.stop_generation("user", early[1])

    async def emit(self, run: LiveRun, event: StreamEvent) -> Frame | None:
        """Append a produced event with the next seq; ``None`` if the run already ended."""
        seq = run.last_seq + 1
        update: dict[str, Any] = {
            "run_id": run.run_id,
            "seq": seq,
            "done": event.type in ("done", "error"),
        }
        if _timed(run, event):
            update["elapsed_ms"] = run.elapsed_ms()
        if update["done"]:
            update |= await self._answer_stamp(run)
        event = event.model_copy(update=update)
        return await self._log(run, seq, encode_event(event), event)

    async def _answer_stamp(self, run: LiveRun) -> dict[str, str]:
        """The answer's stored time and model, for its terminal event (none if unreadable:
        the ending matters more than its stamp)."""
        try:
            return await messages.answer_stamp(self.db, run.meta.message_id)
        except Exception as error:
            if not is_storage_failure(error):
                raise
            return {}

    async def append(self, run: LiveRun, seq: int | None, data: str) -> Frame | None:
        """Log one frame's data as given (a test scenario's, any JSON) and wake readers."""
        return await self._log(run, seq, data, None)

    async def _log(
        self, run: LiveRun, seq: int | None, data: str, event: StreamEvent | None
    ) -> Frame | None:
        """Log one event, fold it into the answer, wake readers; refused once the run ended."""
        with run.appending():
            return await self._log_now(run, seq, data, event)

    async def _log_now(
        self, run: LiveRun, seq: int | None, data: str, event: StreamEvent | None
    ) -> Frame | None:
        if not run.running:
            run.refuse()
            return None
        row = await runlog.insert_event(self.db, run.key, seq, data)
        if row is None:  # NOTE: ended by another process that took this one for gone
            run.refuse()
            run.stop_generation("lost")
            return None
        self.bus.publish(run.key, Logged(row, run.last_row, Frame(seq, data)))
        run.last_row = row
        event = run.record(seq, data, event)
        if isinstance(event, DoneEvent):
            await runlog.set_stop_reason(self.db, run.meta.message_id, event.stop_reason)
        if run.flush_due(FLUSH_INTERVAL_S):
            await self._flush(run)
        return run.frames[-1]

    async def finish(
        self,
        run: LiveRun,
        status: ServerRunStatus,
        reason: RunReason | None = None,
        error: str | None = None,
    ) -> bool:
        """Persist the run's terminal status and why; ``False`` if another one came first."""
        if not run.running:
            return False
        await self._flush(run)
        kept = reason or _default_reason(run, status)
        error = error or run.failure_message  # NOTE: kept for the chat read (shown after reload)
        won = await runlog.finish(self.db, run.key, run.meta.message_id, status, kept, error)
        run.end(status)
        return won

    def attach(self, run: LiveRun) -> None:
        """A reader (stream or resume) starts reading the run."""
        run.add_reader()

    def detach(self, run: LiveRun) -> None:
        """A reader went away; with no reader left the orphan timer starts."""
        if run.remove_reader():
            self._arm_orphan_timer(run)

    async def cancel(
        self, user_id: str, run_id: str, reason: ClientTimeoutCode | None = None
    ) -> ServerRunStatus | None:
        """Stop a run's generation (``reason``: the page gave up waiting, else the user's
        Stop); the persisted status after it (``None``: unknown run)."""
        run = self.find(user_id, run_id)
        if run is not None and run.meta.user_id == user_id:
            run.stop_generation("user", reason)
            try:
                async with asyncio.timeout(self.config.cancel_wait_s):
                    await run.stopped.wait()
            except TimeoutError:
                pass
        elif self.bus.spans_processes and await self.persisted_status(user_id, run_id) == "running":
            self.bus.request_cancel(user_id, run_id, reason)
            await self._wait_persisted_end(user_id, run_id)
        return await self.persisted_status(user_id, run_id)

    async def _wait_persisted_end(self, user_id: str, run_id: str) -> None:
        """Wait (at most ``cancel_wait_s``) until another process persisted the run's end."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.config.cancel_wait_s):
                while await self.persisted_status(user_id, run_id) == "running":
                    await asyncio.sleep(CANCEL_POLL_S)

    def on_cancel_sent(
        self, user_id: str, run_id: str, reason: ClientTimeoutCode | None = None
    ) -> None:
        """A cancel sent by some process: stop the run if it is generated here, else keep it
        for a stream request still on its way here."""
        run = self.find(user_id, run_id)
        if run is None:
            self.note_early_cancel(user_id, run_id, reason, send=False)
        elif run.generating:
            run.stop_generation("user", reason)

    async def persisted_status(self, user_id: str, run_id: str) -> ServerRunStatus | None:
        row = await runlog.run_row(self.db, user_id, run_id)
        if row is None or row["user_id"] != user_id:
            return None
        status: ServerRunStatus = row["status"]
        return status

    def find(self, user_id: str, run_id: str) -> LiveRun | None:
        """The user's live run ``run_id``, if it is going."""
        return self.live.get(runlog.run_key(user_id, run_id))

    async def check_room(self, user_id: str, limit: int) -> None:
        """429 ``too_many_runs`` when the user already has ``limit`` runs going."""
        if self.bus.spans_processes:  # NOTE: the user's runs on every process
            going = await runlog.running_count(self.db, user_id)
        else:
            going = sum(1 for run in self.live.values() if run.meta.user_id == user_id)
        if going >= limit:
            raise ApiError(
                429,
                "too_many_runs",
                f"{going} answers are already being written; wait for one to finish",
                {"Retry-After": "5"},
            )

    def note_early_cancel(
        self,
        user_id: str,
        run_id: str,
        reason: ClientTimeoutCode | None = None,
        send: bool = True,
    ) -> None:
        """Remember a cancel for a run not created yet (its stream request is in flight); with
        ``send``, other processes are told too (the request may land on one of them).

        # NOTE: bounded in size and age, O(1) per call: the oldest notes go first.
        """
        if send:
            self.bus.request_cancel(user_id, run_id, reason)
        notes, stamp = self._early_cancels, time.monotonic()
        notes.pop((user_id, run_id), None)
        notes[(user_id, run_id)] = (stamp, reason)
        while notes and (len(notes) > EARLY_CANCELS_KEPT or _oldest(notes) < stamp - 60.0):
            notes.popitem(last=False)

    async def drain(self, grace_s: float) -> None:
        """Stop taking runs, give the live ones ``grace_s`` seconds, then stop the rest."""
        self.accepting = False
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(grace_s):
                while self.live:
                    await next(iter(self.live.values())).stopped.wait()
        await self.shutdown()

    async def shutdown(self) -> None:
        """Stop every live run: the process is going away (they end ``interrupted``)."""
        runs = list(self.live.values())
        for run in runs:
            run.stop_generation("shutdown")
        await asyncio.gather(*(run.task_done() for run in runs))

    def _on_task_done(
        self, run: LiveRun, endings: Endings, task: asyncio.Task[ServerRunStatus | None]
    ) -> None:
        run.generation_ended()
        wrap_up = asyncio.get_running_loop().create_task(self._wrap_up(run, endings, task))
        self._wrap_ups.add(wrap_up)
        wrap_up.add_done_callback(self._wrap_ups.discard)

    async def _wrap_up(
        self, run: LiveRun, endings: Endings, task: asyncio.Task[ServerRunStatus | None]
    ) -> None:
        """Persist how the generation task ended, then tell readers and other processes (a
        storage failure on the way: server.runs.unstored)."""
        try:
            try:
                await self._persist_end(run, endings, task)
            except Exception as error:
                if not is_storage_failure(error):
                    raise
                await end_unstored(self, run, error)
        finally:
            run.close()
            self.live.pop(run.key, None)
            self.bus.release(run.key, run.status)
        log.info(
            "run end run=%s user=%s status=%s events=%d duration=%.3fs",
            run.run_id,
            run.meta.user_id,
            run.status,
            run.trace.events_logged,
            now() - run.trace.started_at,
        )

    async def _persist_end(
        self, run: LiveRun, endings: Endings, task: asyncio.Task[ServerRunStatus | None]
    ) -> None:
        if task.cancelled():
            await self._end_stopped(run, endings)
        elif (error := task.exception()) is not None:
            if is_storage_failure(error):
                raise error
            await self._end_failed(run, endings, error)
        else:
            await self.finish(run, task.result() or "interrupted")

    async def _end_failed(self, run: LiveRun, endings: Endings, error: BaseException) -> None:
        """A broken generator fails its run, not the server."""
        log.warning("run failed run=%s", run.run_id, exc_info=error)
        if endings.failed is not None:
            await self.emit(run, endings.failed(str(error) or type(error).__name__))
        await self.finish(run, "failed", "generation_failed", str(error))

    async def _end_stopped(self, run: LiveRun, endings: Endings) -> None:
        """The generation was stopped (possibly before its first step): log and persist why."""
        if not run.running:
            return
        if run.stop_cause == "lost":
            await self._take_ending(run)
        elif run.stop_cause == "shutdown":
            await self.emit(run, _shutdown_event())
            await self.finish(run, "interrupted", "server_shutdown")
        else:
            if endings.cancelled is not None:
                await self.emit(run, endings.cancelled)
            cause: RunEndCause = "orphaned" if run.stop_cause == "orphaned" else "user_cancelled"
            await self.finish(run, "cancelled", run.cancel_reason or cause)

    async def _take_ending(self, run: LiveRun) -> None:
        """Read the end another process logged for this run, for this process's readers."""
        for _row, frame in await runlog.load_rows(self.db, run.key, run.last_row):
            run.record(frame.seq, frame.data, None)
        row = await runlog.run_row(self.db, run.meta.user_id, run.run_id)
        run.end(row["status"] if row is not None else "interrupted")

    async def _flush(self, run: LiveRun) -> None:
        if run.take_dirty():
            await runlog.save_progress(
                self.db, run.key, run.meta.message_id, run.last_seq, run.answer.parts
            )

    def _arm_orphan_timer(self, run: LiveRun, delay_s: float | None = None) -> None:
        def expire() -> None:
            if run.unread and run.generating:
                check = asyncio.get_running_loop().create_task(self._orphan_unless_read(run))
                self._orphan_checks.add(check)
                check.add_done_callback(self._orphan_checks.discard)

        run.arm_orphan_timer(self.config.orphan_s if delay_s is None else delay_s, expire)

    async def _orphan_unless_read(self, run: LiveRun) -> None:
        """Stop a run nobody read for ``orphan_s`` seconds, here or in another process."""
        read_at = await self.bus.last_read_at(run.key)
        if not (run.unread and run.generating):
            return
        if read_at is not None and now() - read_at < self.config.orphan_s:
            self._arm_orphan_timer(run, self.config.orphan_s - (now() - read_at))
            return
        log.info("run orphaned run=%s after %.1fs", run.run_id, self.config.orphan_s)
        run.stop_generation("orphaned")

    def _keep_trace(self, trace: ServerTrace) -> None:
        self.traces[trace.run_id] = trace
        while len(self.traces) > _MAX_TRACES:
            del self.traces[next(iter(self.traces))]


EarlyCancel = tuple[float, ClientTimeoutCode | None]


def _oldest(notes: OrderedDict[tuple[str, str], EarlyCancel]) -> float:
    return next(iter(notes.values()))[0]


def _default_reason(run: LiveRun, status: ServerRunStatus) -> str | None:
    if status == "failed":
        return run.failure_code or "stream_error"
    if status == "interrupted":
        return "stream_ended"  # NOTE: the generator stopped without a terminal event
    if status == "cancelled":
        return "cancelled"  # NOTE: a ``done(cancelled)`` the generator sent itself
    return None


def _shutdown_event() -> StreamEvent:
    return end_error("The server stopped before this answer was complete.", "server_shutdown")


async def emit_all(
    registry: RunRegistry,
    run: LiveRun,
    events: AsyncIterator[StreamEvent],
    on_event: Callable[[StreamEvent], Awaitable[None]] | None = None,
) -> ServerRunStatus | None:
    """A generator's whole run: emit each event; the status is its terminal event's."""
    status: ServerRunStatus | None = None
    async for event in events:
        await registry.emit(run, event)
        if on_event is not None:
            await on_event(event)
        if isinstance(event, DoneEvent):
            status = "cancelled" if event.stop_reason == "cancelled" else "completed"
        elif isinstance(event, ErrorEvent):
            status = "failed"
    return status
