"""Tools the page runs (SPEC §13): the model's ``python``, run by the browser.

    the page sends ``clientTools: ["python"]``  →  the model is offered the ``python`` tool
    the model calls it  →  ledger row ``awaiting_client`` (with its deadline)
        → ``tool_client_requested`` (the page shows the code, runs it after approval or at once)
        → the run waits: the first result posted stands (a conditional update of the row),
          from any tab or worker; no result by the deadline is an error result ("no browser
          ran it"); Stop ends the wait (the call ``failed``, a later post refused)
    → the outcome, which the loop sends as ``tool_result`` and gives the model

The wait is :func:`server.tools.approvals`'s: the store holds the result, the waiter polls it
every :data:`POLL_S` and is woken at once by a post in its own process (the same bell).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from pydantic import JsonValue

from app.wire.protocol import StreamEvent, ToolClientRequestedEvent
from server.contract.tool_effects import Transition
from server.runs.drafts import draft
from server.store import tool_calls
from server.store.db import Database, now
from server.store.tool_calls import ToolCallRecord
from server.tools.approvals import DecisionBell
from server.tools.calls import CallOutcome, ToolRoom

POLL_S = 0.2


@dataclass(frozen=True, slots=True)
class ClientTool:
    """A tool the page runs, as the model is offered it."""

    name: str
    description: str
    parameters: dict[str, Any]


PYTHON = ClientTool(
    name="python",
    description=(
        "Run Python 3 code in the user's browser (Pyodide, standard library only; no network). "
        "The chat's attached files are under /mnt/data/; files written to /mnt/out/ are shown "
        "to the user. Print what you need: the result is the code's stdout, stderr and "
        "traceback. The user may have to approve each run."
    ),
    parameters={
        "type": "object",
        "properties": {"code": {"type": "string", "description": "the Python code to run"}},
        "required": ["code"],
        "additionalProperties": False,
    },
)
CLIENT_TOOLS: dict[str, ClientTool] = {PYTHON.name: PYTHON}
NO_BROWSER = "No browser ran this code within {limit:g} s; go on without its result."
STOPPED = "the answer was stopped before the code's result arrived"


def client_tools(names: list[str]) -> frozenset[str]:
    """The client tools the server knows among those the page says it runs."""
    return frozenset(name for name in names if name in CLIENT_TOOLS)


def offered_client_tools(room: ToolRoom | None) -> tuple[ClientTool, ...]:
    """The tools the run's page runs."""
    if room is None:
        return ()
    return tuple(CLIENT_TOOLS[name] for name in sorted(room.client_tools))


def runs_in_client(room: ToolRoom | None, name: str) -> bool:
    return room is not None and name in room.client_tools


async def run_client_call(
    room: ToolRoom, tool_call_id: str, tool_name: str, arguments: dict[str, Any]
) -> AsyncIterator[StreamEvent | CallOutcome]:
    """``tool_client_requested``, the wait for the page's result, then one outcome."""
    record = await tool_calls.open_call(
        room.db,
        room.run_key,
        tool_call_id,
        tool_name,
        arguments,
        acts=False,
        deadline_at=now() + room.client_timeout_s,
        first="awaiting_client",
    )
    if record.state == "awaiting_client":
        yield draft(
            ToolClientRequestedEvent,
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            arguments=arguments,
        )
        record = await wait_result(room.db, room.bell, record, room.client_timeout_s)
    yield client_outcome(record)


def client_outcome(record: ToolCallRecord) -> CallOutcome:
    """What the model is told of a call the page ran (or did not run)."""
    if record.state == "awaiting_client":
        return CallOutcome(
            {"error": "This call is handled elsewhere; it was not run here."}, True, "none"
        )
    return CallOutcome(record.result, record.is_error, "none")


async def wait_result(
    db: Database, bell: DecisionBell, record: ToolCallRecord, limit_s: float
) -> ToolCallRecord:
    """Wait until a result stands (a page's, or the deadline's); a cancelled wait (Stop) ends
    the call first, so a result posted later is refused."""
    key, call_id = record.run_key, record.tool_call_id
    event = bell.listen(key, call_id)
    try:
        while True:
            current = await tool_calls.get(db, key, call_id)
            assert current is not None
            if current.state != "awaiting_client":
                return current
            deadline = current.deadline_at
            if deadline is not None and now() >= deadline:
                message = NO_BROWSER.format(limit=limit_s)
                await _end(db, key, call_id, "fail", {"error": message, "noBrowser": True})
                continue
            wait = POLL_S if deadline is None else min(POLL_S, max(deadline - now(), 0.0))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), wait)
            event.clear()
    except asyncio.CancelledError:
        await asyncio.shield(_end(db, key, call_id, "lose", {"error": STOPPED}))
        raise
    finally:
        bell.forget(key, call_id)


async def _end(db: Database, key: str, call_id: str, how: Transition, result: JsonValue) -> bool:
    return await tool_calls.move(db, key, call_id, how, result=result, is_error=True)


@dataclass(frozen=True, slots=True)
class Delivered:
    """A result posted by a page: taken now, or the one that stood already."""

    record: ToolCallRecord
    taken_now: bool

    def same(self, result: JsonValue, is_error: bool) -> bool:
        """Whether ``result`` is the one that stands (a repeat of the same post)."""
        return self.record.is_error == is_error and _canonical(self.record.result) == _canonical(
            result
        )


def _canonical(value: JsonValue) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


async def deliver(
    db: Database,
    bell: DecisionBell,
    run_key: str,
    tool_call_id: str,
    result: JsonValue,
    is_error: bool,
) -> Delivered | None:
    """Take the page's result unless one stands; ``None`` when the run has no such call."""
    record = await tool_calls.get(db, run_key, tool_call_id)
    if record is None or record.tool_name not in CLIENT_TOOLS or record.acts:
        return None
    stored: JsonValue = result if result is not None else {}
    how: Transition = "fail" if is_error else "finish"
    moved = await tool_calls.move(db, run_key, tool_call_id, how, result=stored, is_error=is_error)
    if moved:
        bell.ring(run_key, tool_call_id)
    record = await tool_calls.get(db, run_key, tool_call_id)
    assert record is not None
    return Delivered(record, moved)
