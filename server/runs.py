"""The run registry: live runs, their generation tasks, readers, cancel and orphan timers.

A run's task is decoupled from any HTTP response. Each produced event is appended to the run's
log in SQLite and to its in-memory frames, then readers (the original stream, resumes) are woken.
The first terminal status persisted wins; after it, appends are refused.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Coroutine
from typing import Any

from app.wire.api import RunStatus
from app.wire.protocol import DoneEvent, ErrorEvent, StreamEvent, encode_event
from server import runlog
from server.config import Config
from server.db import Database, now
from server.live_run import LiveRun, RunMeta, RunTrace
from server.runlog import Frame

log = logging.getLogger("riacho.runs")
FLUSH_INTERVAL_S = 0.25
_MAX_TRACES = 2000


class RunRegistry:
    """Every live run of the process, by id."""

    def __init__(self, db: Database, config: Config) -> None:
        self.db = db
        self.config = config
        self.live: dict[str, LiveRun] = {}
        self.traces: dict[str, RunTrace] = {}
        self._early_cancels: dict[tuple[str, str], float] = {}

    def register(self, meta: RunMeta) -> LiveRun:
        """Track a run whose rows were just created; it is orphaned unless a reader attaches."""
        trace = RunTrace(meta.run_id)
        self._keep_trace(trace)
        run = LiveRun(meta, trace)
        self.live[meta.run_id] = run
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

    def start(self, run: LiveRun, body: Coroutine[Any, Any, RunStatus | None]) -> None:
        """Run ``body`` as the run's generation task."""
        run.task = asyncio.get_running_loop().create_task(self._drive(run, body))
        run.task.add_done_callback(lambda _task: self._on_task_done(run, body))
        if self._early_cancels.pop((run.meta.user_id, run.run_id), None) is not None:
            run.trace.cancel_requested_at = now()
            run.task.cancel()

    def emit(self, run: LiveRun, event: StreamEvent) -> Frame | None:
        """Append a produced event with the next seq; ``None`` if the run already ended."""
        seq = run.last_seq + 1
        event = event.model_copy(
            update={"run_id": run.run_id, "seq": seq, "done": event.type in ("done", "error")}
        )
        return self._log(run, seq, encode_event(event), event)

    def append(self, run: LiveRun, seq: int | None, data: str) -> Frame | None:
        """Log one frame's data as given (a test scenario's, any JSON) and wake readers."""
        return self._log(run, seq, data, None)

    def _log(
        self, run: LiveRun, seq: int | None, data: str, event: StreamEvent | None
    ) -> Frame | None:
        """Log one event, fold it into the answer, wake readers; refused once the run ended."""
        if run.status != "running":
            run.trace.appends_refused += 1
            return None
        frame = Frame(seq, data)
        runlog.insert_event(self.db, run.run_id, seq, data)
        run.frames.append(frame)
        run.trace.events_logged += 1
        if seq is not None:
            run.last_seq = max(run.last_seq, seq)
        if event is None:
            event = run.answer.apply_data(data)
        else:
            run.answer.apply(event)
        if isinstance(event, DoneEvent):
            runlog.set_stop_reason(self.db, run.meta.message_id, event.stop_reason)
        run.dirty = True
        if time.monotonic() - run.last_flush >= FLUSH_INTERVAL_S:
            self._flush(run)
        run.notify()
        return frame

    def finish(self, run: LiveRun, status: RunStatus, error: str | None = None) -> bool:
        """Persist the run's terminal status; ``False`` if another one was persisted first."""
        if run.status != "running":
            return False
        self._flush(run)
        won = runlog.finish(self.db, run.run_id, run.meta.message_id, status, error)
        run.status = status
        run.trace.status = status
        run.notify()
        return won

    def attach(self, run: LiveRun) -> None:
        """A reader (stream or resume) starts reading the run."""
        run.readers += 1
        if run.orphan_timer is not None:
            run.orphan_timer.cancel()
            run.orphan_timer = None

    def detach(self, run: LiveRun) -> None:
        """A reader went away; with no reader left the orphan timer starts."""
        run.readers -= 1
        if run.readers <= 0 and run.status == "running":
            self._arm_orphan_timer(run)

    async def cancel(self, user_id: str, run_id: str) -> RunStatus | None:
        """Stop a run's generation; the persisted status after it (``None``: unknown run)."""
        run = self.live.get(run_id)
        if run is not None and run.meta.user_id == user_id:
            if run.trace.cancel_requested_at is None:
                run.trace.cancel_requested_at = now()
            if run.task is not None:
                run.task.cancel()
            try:
                async with asyncio.timeout(self.config.cancel_wait_s):
                    await run.stopped.wait()
            except TimeoutError:
                pass
        return self.persisted_status(user_id, run_id)

    def persisted_status(self, user_id: str, run_id: str) -> RunStatus | None:
        row = runlog.run_row(self.db, run_id)
        if row is None or row["user_id"] != user_id:
            return None
        status: RunStatus = row["status"]
        return status

    def note_early_cancel(self, user_id: str, run_id: str) -> None:
        """Remember a cancel for a run not created yet (the stream request is in flight)."""
        cutoff = time.monotonic() - 60.0
        self._early_cancels = {k: t for k, t in self._early_cancels.items() if t > cutoff}
        self._early_cancels[(user_id, run_id)] = time.monotonic()

    async def shutdown(self) -> None:
        """Cancel every live run (the process is stopping)."""
        tasks = [run.task for run in self.live.values() if run.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _drive(self, run: LiveRun, body: Coroutine[Any, Any, RunStatus | None]) -> None:
        try:
            status = await body
        except Exception as exc:  # NOTE: a broken generator fails its run, not the server.
            log.warning("run failed run=%s", run.run_id, exc_info=True)
            if run.meta.kind != "scenario":
                self.emit(run, _error_event(str(exc) or type(exc).__name__))
            self.finish(run, "failed", str(exc))
            return
        self.finish(run, status or "interrupted")

    def _on_task_done(self, run: LiveRun, body: Coroutine[Any, Any, object]) -> None:
        body.close()  # NOTE: a task cancelled before its first step never awaited its body.
        if run.status == "running":  # cancelled (possibly before its first step)
            if run.meta.kind != "scenario":
                self.emit(run, _done_event(run.meta.message_id, "cancelled"))
            self.finish(run, "cancelled", "cancelled")
        run.trace.generation_stopped_at = now()
        if run.orphan_timer is not None:
            run.orphan_timer.cancel()
        self.live.pop(run.run_id, None)
        run.stopped.set()
        run.notify()
        log.info(
            "run end run=%s user=%s status=%s events=%d duration=%.3fs",
            run.run_id,
            run.meta.user_id,
            run.status,
            run.trace.events_logged,
            now() - run.trace.started_at,
        )

    def _flush(self, run: LiveRun) -> None:
        if run.dirty:
            runlog.save_progress(
                self.db, run.run_id, run.meta.message_id, run.last_seq, run.answer.parts
            )
            run.dirty = False
        run.last_flush = time.monotonic()

    def _arm_orphan_timer(self, run: LiveRun) -> None:
        def expire() -> None:
            if run.readers <= 0 and run.task is not None and not run.task.done():
                log.info("run orphaned run=%s after %.1fs", run.run_id, self.config.orphan_s)
                run.trace.orphaned = True
                run.task.cancel()

        loop = asyncio.get_running_loop()
        run.orphan_timer = loop.call_later(self.config.orphan_s, expire)

    def _keep_trace(self, trace: RunTrace) -> None:
        self.traces[trace.run_id] = trace
        while len(self.traces) > _MAX_TRACES:
            del self.traces[next(iter(self.traces))]


def _done_event(message_id: str, stop_reason: str) -> StreamEvent:
    return DoneEvent.model_validate(
        {"runId": "-", "seq": 1, "done": True, "messageId": message_id, "stopReason": stop_reason}
    )


def _error_event(message: str) -> StreamEvent:
    return ErrorEvent(run_id="-", seq=1, done=True, error=message, code="generation_failed")
