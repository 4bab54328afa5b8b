"""A live run: identity, in-memory frames and parts, readers' wake-up, and its trace."""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from typing import Any

from app.wire.api import RunStatus
from server.db import now
from server.runlog import AnswerFold, Frame

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


@dataclass(slots=True)
class RunTrace:
    """What the server saw of a run (exposed by the test hooks)."""

    run_id: str
    started_at: float = field(default_factory=now)
    events_logged: int = 0
    sent_seqs: list[int | None] = field(default_factory=list)
    client_disconnected_at: float | None = None
    cancel_requested_at: float | None = None
    orphaned: bool = False
    generation_stopped_at: float | None = None
    appends_refused: int = 0
    status: str = "running"

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
        }


class LiveRun:
    """A run whose generation task is still going (frames kept in memory for readers)."""

    def __init__(self, meta: RunMeta, trace: RunTrace) -> None:
        self.meta = meta
        self.trace = trace
        self.frames: list[Frame] = []
        self.status: RunStatus = "running"
        self.last_seq = 0
        self.answer = AnswerFold(meta.run_id)
        self.task: asyncio.Task[None] | None = None
        self.readers = 0
        self.stopped = asyncio.Event()
        self.orphan_timer: asyncio.TimerHandle | None = None
        self.last_flush = time.monotonic()
        self.dirty = False
        self._changed = asyncio.Event()

    @property
    def run_id(self) -> str:
        return self.meta.run_id

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


def terminal_status(payload: JsonObject) -> RunStatus | None:
    """The run status an event ends a run with, or ``None`` if it is not terminal."""
    kind = payload.get("type")
    if kind == "error":
        return "failed"
    if kind == "done":
        return "cancelled" if payload.get("stopReason") == "cancelled" else "completed"
    return "completed" if payload.get("done") is True else None
