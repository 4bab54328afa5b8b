"""The user's decision on a call that acts (SPEC §12): taken once, from any tab or worker.

The store holds the decision (a conditional update of the ledger row), so the run waiting for
it, in whatever process, reads it there: :func:`wait_decision` looks every
:data:`POLL_S` and is woken at once by a decision taken in its own process
(:class:`DecisionBell`). No decision by the deadline is a denial (``timeout``); a run stopped
while it waits denies (``stop``).
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field

from app.wire.api import ToolDecision
from server.contract.tool_effects import DecidedBy
from server.store import tool_calls
from server.store.db import Database, now
from server.store.tool_calls import ToolCallRecord

POLL_S = 0.2


@dataclass(slots=True)
class DecisionBell:
    """Wakes the waiters of this process when a decision is taken here."""

    _waiting: dict[tuple[str, str], asyncio.Event] = field(default_factory=dict)

    def ring(self, run_key: str, tool_call_id: str) -> None:
        event = self._waiting.get((run_key, tool_call_id))
        if event is not None:
            event.set()

    def listen(self, run_key: str, tool_call_id: str) -> asyncio.Event:
        return self._waiting.setdefault((run_key, tool_call_id), asyncio.Event())

    def forget(self, run_key: str, tool_call_id: str) -> None:
        self._waiting.pop((run_key, tool_call_id), None)


@dataclass(frozen=True, slots=True)
class Decided:
    """A decision on a call: taken now, or the one that stood already."""

    record: ToolCallRecord
    taken_now: bool

    @property
    def answer(self) -> ToolDecision | None:
        if self.record.state == "awaiting_approval":
            return None
        return "denied" if self.record.state == "denied" else "approved"


async def decide(
    db: Database,
    bell: DecisionBell,
    run_key: str,
    tool_call_id: str,
    approved: bool,
    by: DecidedBy,
    reason: str | None = None,
) -> Decided | None:
    """Take the decision unless one stands; ``None`` when the run has no such waiting call."""
    record = await tool_calls.get(db, run_key, tool_call_id)
    if record is None or not record.acts:
        return None
    moved = await tool_calls.move(
        db, run_key, tool_call_id, "approve" if approved else "deny", decided_by=by, reason=reason
    )
    if moved:
        bell.ring(run_key, tool_call_id)
    record = await tool_calls.get(db, run_key, tool_call_id)
    assert record is not None
    return Decided(record, moved)


async def wait_decision(db: Database, bell: DecisionBell, record: ToolCallRecord) -> ToolCallRecord:
    """Wait until the call is decided (by the user, or by its deadline); a cancelled wait
    (Stop) denies it first, so a decision arriving later finds it taken."""
    key, call_id = record.run_key, record.tool_call_id
    event = bell.listen(key, call_id)
    try:
        while True:
            current = await tool_calls.get(db, key, call_id)
            assert current is not None
            if current.state != "awaiting_approval":
                return current
            deadline = current.deadline_at
            if deadline is not None and now() >= deadline:
                await decide(db, bell, key, call_id, False, "timeout", "no decision in time")
                continue
            wait = POLL_S if deadline is None else min(POLL_S, max(deadline - now(), 0.0))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), wait)
            event.clear()
    except asyncio.CancelledError:
        await asyncio.shield(
            decide(db, bell, key, call_id, False, "stop", "the answer was stopped")
        )
        raise
    finally:
        bell.forget(key, call_id)
