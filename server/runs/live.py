"""A live run: identity, in-memory frames and parts, readers' wake-up, and its trace."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from app.wire.api import ServerRunStatus
from app.wire.codes import ClientTimeoutCode
from app.wire.protocol import ErrorEvent, StreamEvent
from server.store.db import now
from server.store.runlog import AnswerFold, Frame, run_key

JsonObject = dict[str, Any]


@dataclass(frozen=True, slots=True)
class RunMeta:
    """The identity of a run and what it answers."""

    run_id: str
    user_id: str
    chat_id: str
    message_id: str
    user_message_id: str
    attempt: int
    kind: str  # "demo", "model" (a real provider) or "scenario"

    @property
    def key(self) -> str:
        """Where the run is stored (see :func:`server.store.runlog.run_key`)."""
        return run_key(self.user_id, self.run_id)


@dataclass(slots=True)
class ServerTrace:
    """What the server saw of a run (exposed by the test hooks; the page keeps its own
    ``app.state.trace.RunTrace``)."""

    run_id: str
    started_at: float = field(default_factory=now)
    events_logged: int = 0
    sent_seqs: list[int | None] = field(default_factory=list)
    client_disconnected_at: float | None = None
    cancel_requested_at: float | None = None
    orphaned: bool = False
    generation_stopped_at: float | None = None
    appends_refused: int = 0
    status: ServerRunStatus = "running"
    history_notes: list[str] = field(default_factory=list)  # history not sent as stored

    def to_json(self) -> JsonObject:
        return {
            "runId": self.run_id,
            "status": self.status,
            "eventsLogged": self.events_logged,
            "eventsSent": len(self.sent_seqs),
            "sentSeqs": self.sent_seqs,
            "clientDisconnected": self.client_disconnected_at is not None,
            "clientDisconnectedAt": self.client_disconnected_at,
            "cancelRequested": self.cancel_requested_at is not None,
            "cancelRequestedAt": self.cancel_requested_at,
            "orphaned": self.orphaned,
            "generationStopped": self.generation_stopped_at is not None,
            "generationStoppedAt": self.generation_stopped_at,
            "appendsRefused": self.appends_refused,
            "historyNotes": self.history_notes,
        }


# NOTE: "lost": another process found this one's lease expired and ended the run.
StopCause = Literal["user", "orphaned", "shutdown", "lost"]


class LiveRun:
    """A run whose generation task is still going: its frames (kept for readers), its folded
    answer, its readers and timers. The registry drives it through these methods only."""

    def __init__(self, meta: RunMeta, trace: ServerTrace) -> None:
        self.meta = meta
        self.trace = trace
        self.frames: list[Frame] = []
        self.status: ServerRunStatus = "running"
        self.last_seq = 0
        self.last_row = 0  # the row id of its latest frame in the log
        self.answer = AnswerFold(meta.run_id)
        self.stopped = asyncio.Event()
        self.stop_cause: StopCause | None = None
        self.cancel_reason: ClientTimeoutCode | None = None  # the page gave up waiting
        self.failure_code: str | None = None  # the code of the ``error`` event that ended it
        self.failure_message: str | None = None  # and its words
        self._task: asyncio.Task[ServerRunStatus | None] | None = None
        self._appending = False
        self._cancel_after_append = False
        self._readers = 0
        self._orphan_timer: asyncio.TimerHandle | None = None
        self._started = self._last_flush = time.monotonic()
        self._dirty = False
        self._changed = asyncio.Event()

    @property
    def run_id(self) -> str:
        return self.meta.run_id

    def elapsed_ms(self) -> int:
        """Milliseconds since the run was registered (an event's ``elapsedMs``)."""
        return int((time.monotonic() - self._started) * 1000)

    @property
    def key(self) -> str:
        return self.meta.key

    @property
    def running(self) -> bool:
        return self.status == "running"

    # --- the generation task ----------------------------------------------------------------

    def attach_task(self, task: asyncio.Task[ServerRunStatus | None]) -> None:
        self._task = task

    def stop_generation(self, cause: StopCause, reason: ClientTimeoutCode | None = None) -> None:
        """Cancel the generation task (the first cause given is the one recorded, with the
        page's timeout when the page gave up)."""
        if self.stop_cause is None:
            self.stop_cause, self.cancel_reason = cause, reason
        if cause == "user" and self.trace.cancel_requested_at is None:
            self.trace.cancel_requested_at = now()
        self.trace.orphaned = self.trace.orphaned or cause == "orphaned"
        if self._appending:
            self._cancel_after_append = True
        elif self._task is not None:
            self._task.cancel()

    @contextlib.contextmanager
    def appending(self) -> Iterator[None]:
        """One append by the generation task, which a Stop does not cut in two: cancelled
        while the database writes a row, the task would not record it, and the run's ending
        would be logged under the same seq. A Stop meanwhile cancels the task after it."""
        if asyncio.current_task() is not self._task:
            yield  # NOTE: an ending logged after the generation: nothing to cancel
            return
        self._appending = True
        try:
            yield
        finally:
            self._appending = False
        if self._cancel_after_append:
            raise asyncio.CancelledError

    @property
    def generating(self) -> bool:
        return self._task is not None and not self._task.done()

    async def task_done(self) -> None:
        """Wait until the generation task is over and its end persisted."""
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)
            await self.stopped.wait()

    # --- frames and the answer ---------------------------------------------------------------

    def record(self, seq: int | None, data: str, event: StreamEvent | None) -> StreamEvent | None:
        """Keep one logged frame and fold it into the answer; the event it carries, if valid."""
        self.frames.append(Frame(seq, data))
        self.trace.events_logged += 1
        if seq is not None:
            self.last_seq = max(self.last_seq, seq)
        if event is None:
            event = self.answer.apply_data(data)
        else:
            self.answer.apply(event)
        if isinstance(event, ErrorEvent):
            self.failure_code = event.code or "stream_error"
            self.failure_message = event.error
        self._dirty = True
        self.notify()
        return event

    def refuse(self) -> None:
        """An append after the run ended (counted for the test hooks)."""
        self.trace.appends_refused += 1

    def flush_due(self, interval_s: float) -> bool:
        return time.monotonic() - self._last_flush >= interval_s

    def take_dirty(self) -> bool:
        """Whether there is progress to persist (and mark it persisted)."""
        dirty, self._dirty = self._dirty, False
        self._last_flush = time.monotonic()
        return dirty

    def end(self, status: ServerRunStatus) -> None:
        self.status = status
        self.trace.status = status
        self.notify()

    def generation_ended(self) -> None:
        """The generation task is over (its end is persisted next)."""
        self.trace.generation_stopped_at = self.trace.generation_stopped_at or now()

    def close(self) -> None:
        """The generation task is over and its end persisted: readers are told, timers
        disarmed."""
        self.generation_ended()
        self.disarm_orphan_timer()
        self.stopped.set()
        self.notify()

    # --- readers and the orphan timer ---------------------------------------------------------

    def add_reader(self) -> None:
        self._readers += 1
        self.disarm_orphan_timer()

    def remove_reader(self) -> bool:
        """One reader fewer; ``True`` when nobody reads a run still going."""
        self._readers -= 1
        return self._readers <= 0 and self.running

    def arm_orphan_timer(self, delay_s: float, expire: Callable[[], None]) -> None:
        self.disarm_orphan_timer()
        self._orphan_timer = asyncio.get_running_loop().call_later(delay_s, expire)

    def disarm_orphan_timer(self) -> None:
        if self._orphan_timer is not None:
            self._orphan_timer.cancel()
            self._orphan_timer = None

    @property
    def unread(self) -> bool:
        return self._readers <= 0

    # --- waking readers -----------------------------------------------------------------------

    def notify(self) -> None:
        """Wake every reader waiting for a new frame or the end."""
        self._changed.set()
        self._changed = asyncio.Event()

    async def wait_change(self, timeout: float) -> None:
        """Wait for a new frame or the end of the run, at most ``timeout`` seconds."""
        changed = self._changed
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(max(timeout, 0.0)):
                await changed.wait()


def terminal_status(payload: JsonObject) -> ServerRunStatus | None:
    """The run status an event ends a run with, or ``None`` if it is not terminal."""
    kind = payload.get("type")
    if kind == "error":
        return "failed"
    if kind == "done":
        return "cancelled" if payload.get("stopReason") == "cancelled" else "completed"
    return "completed" if payload.get("done") is True else None
