"""The ledger of tool calls (SPEC §12): one row per run and call id, written before the call
starts and after it ends. Every change is a conditional update along the transitions of
server/contract/tool_effects.py, so exactly one writer moves a call; the others read what it did.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, cast

from pydantic import JsonValue

from server.contract.tool_effects import (
    DecidedBy,
    Effect,
    State,
    Transition,
    after,
    effect,
    sources,
)
from server.store.db import Database, Row, now


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    """One call as the ledger keeps it."""

    run_key: str
    tool_call_id: str
    tool_name: str
    arguments: dict[str, Any]
    acts: bool
    state: State
    decided_by: DecidedBy | None
    reason: str | None
    result: JsonValue | None
    is_error: bool
    deadline_at: float | None

    @property
    def effect(self) -> Effect:
        return effect(self.state, self.acts)

    def wire(self) -> dict[str, Any]:
        """The call as ``GET /api/runs/{runId}/tool-calls`` answers it."""
        out: dict[str, Any] = {
            "toolCallId": self.tool_call_id,
            "toolName": self.tool_name,
            "arguments": self.arguments,
            "effect": self.effect,
        }
        if self.result is not None:
            out |= {"result": self.result, "isError": self.is_error}
        if self.decided_by is not None:
            out["decidedBy"] = self.decided_by
        return out


def _record(row: Row) -> ToolCallRecord:
    result = row["result"]
    return ToolCallRecord(
        run_key=row["run_key"],
        tool_call_id=row["tool_call_id"],
        tool_name=row["tool_name"],
        arguments=json.loads(row["arguments"]),
        acts=bool(row["acts"]),
        state=cast(State, row["state"]),
        decided_by=row["decided_by"],
        reason=row["reason"],
        result=json.loads(result) if result is not None else None,
        is_error=bool(row["is_error"]),
        deadline_at=row["deadline_at"],
    )


async def open_call(
    db: Database,
    run_key: str,
    tool_call_id: str,
    tool_name: str,
    arguments: dict[str, Any],
    *,
    acts: bool,
    deadline_at: float | None,
    first: State | None = None,
) -> ToolCallRecord:
    """The call's row: written now (``first``, else ``awaiting_approval``, or ``approved`` when
    read-only), or the one already there (a replay, a second worker): the first write stands."""
    stamp = now()
    await db.execute(
        "INSERT INTO tool_calls (run_key, tool_call_id, tool_name, arguments, acts, state,"
        " deadline_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (run_key, tool_call_id) DO NOTHING",
        (
            run_key,
            tool_call_id,
            tool_name,
            json.dumps(arguments, ensure_ascii=False),
            int(acts),
            first or ("awaiting_approval" if acts else "approved"),
            deadline_at,
            stamp,
            stamp,
        ),
    )
    found = await get(db, run_key, tool_call_id)
    assert found is not None
    return found


async def get(db: Database, run_key: str, tool_call_id: str) -> ToolCallRecord | None:
    row = await db.one(
        "SELECT * FROM tool_calls WHERE run_key = ? AND tool_call_id = ?", (run_key, tool_call_id)
    )
    return _record(row) if row is not None else None


async def of_run(db: Database, run_key: str) -> list[ToolCallRecord]:
    """The run's calls, in the order they were asked for."""
    rows = await db.all(
        "SELECT * FROM tool_calls WHERE run_key = ? ORDER BY created_at, tool_call_id",
        (run_key,),
    )
    return [_record(row) for row in rows]


async def move(
    db: Database,
    run_key: str,
    tool_call_id: str,
    transition: Transition,
    *,
    decided_by: DecidedBy | None = None,
    reason: str | None = None,
    result: JsonValue | None = None,
    is_error: bool = False,
) -> bool:
    """Apply ``transition`` if the call's state allows it; whether this writer moved it."""
    updates = {"updated_at": now()}
    sets = ["state = CASE state " + _cases(transition) + " END", "updated_at = ?"]
    values: list[Any] = [updates["updated_at"]]
    if decided_by is not None:
        sets += ["decided_by = ?", "reason = ?"]
        values += [decided_by, reason]
    if transition in ("finish", "fail", "lose") or result is not None:
        sets += ["result = COALESCE(?, result)", "is_error = ?"]
        values += [json.dumps(result, ensure_ascii=False) if result is not None else None]
        values += [int(is_error)]
    marks = ", ".join("?" * len(sources(transition)))
    moved = await db.execute(
        f"UPDATE tool_calls SET {', '.join(sets)}"
        f" WHERE run_key = ? AND tool_call_id = ? AND state IN ({marks})",
        (*values, run_key, tool_call_id, *sources(transition)),
    )
    return moved == 1


def _cases(transition: Transition) -> str:
    # NOTE: states come from code (effects.TRANSITIONS), never from input.
    return " ".join(
        f"WHEN '{state}' THEN '{after(state, transition)}'" for state in sources(transition)
    )


async def lose_open_calls(db: Database, run_key: str, reason: str) -> int:
    """A run that ended while calls were open (its worker died, it was stopped): waiting ones
    are denied, approved ones never ran (failed), running ones are ``unknown``."""
    lost = 0
    for call in await of_run(db, run_key):
        if after(call.state, "lose") is None:
            continue
        result: JsonValue = {"error": reason} if call.state != "running" else {"unknown": reason}
        lost += await move(
            db,
            run_key,
            call.tool_call_id,
            "lose",
            decided_by="stop" if call.state == "awaiting_approval" else None,
            result=result,
            is_error=True,
        )
    return lost


async def of_chat(db: Database, chat_id: str) -> dict[tuple[str, str], ToolCallRecord]:
    """Every call of the chat's runs, by (run key, call id)."""
    rows = await db.all(
        "SELECT tool_calls.* FROM tool_calls JOIN runs ON runs.id = tool_calls.run_key"
        " WHERE runs.chat_id = ?",
        (chat_id,),
    )
    return {(row["run_key"], row["tool_call_id"]): _record(row) for row in rows}
