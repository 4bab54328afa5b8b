"""One call of an MCP server's tool, run at most once (SPEC §12).

    ledger row written (awaiting_approval, or approved for a read-only tool)
    [tool_approval_requested → the decision → tool_decided]       a tool that acts
    approved → running (a conditional update: one runner wins)   then the MCP request, with
        _meta["riacho/idempotencyKey"] = "<runId>:<toolCallId>", a time limit, and Stop
        cancelling it (the SDK sends MCP cancellation)
    running → done | failed (the tool answered) | unknown (no answer: it may have happened)
    the outcome: the result as the model gets it (size capped, with a note), and the effect

A call whose row is already past a state (a replay of the run, a second worker, a restart)
is never sent again: the outcome is read from the ledger.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import mcp.types as mt
from pydantic import JsonValue

from app.wire.protocol import (
    StreamEvent,
    SystemEventEvent,
    ToolApprovalRequestedEvent,
    ToolDecidedEvent,
    ToolEffect,
)
from server.contract.tool_effects import Transition
from server.runs.drafts import draft
from server.store import tool_calls
from server.store.db import Database, now
from server.store.tool_calls import ToolCallRecord
from server.tools.approvals import DecisionBell, wait_decision
from server.tools.connections import McpServers, McpTool, ToolUnavailable, tools_note


@dataclass(frozen=True, slots=True)
class ToolRoom:
    """What running a tool of an MCP server needs, for one run."""

    db: Database
    servers: McpServers
    bell: DecisionBell
    run_key: str
    run_id: str
    approval_timeout_s: float
    client_tools: frozenset[str] = frozenset()  # the tools the run's page runs (SPEC §13)
    client_timeout_s: float = 300.0  # no result from a page by then: the model is told


@dataclass(frozen=True, slots=True)
class CallOutcome:
    """What the call did: the result as the model gets it, and its effect."""

    result: JsonValue
    is_error: bool
    effect: ToolEffect


def idempotency_key(run_id: str, tool_call_id: str) -> str:
    return f"{run_id}:{tool_call_id}"


async def run_call(
    room: ToolRoom, tool: McpTool, tool_call_id: str, arguments: dict[str, Any]
) -> AsyncIterator[StreamEvent | CallOutcome]:
    """The call's events, then exactly one :class:`CallOutcome`."""
    deadline = None if tool.read_only else now() + room.approval_timeout_s
    record = await tool_calls.open_call(
        room.db,
        room.run_key,
        tool_call_id,
        tool.qualified_name,
        arguments,
        acts=not tool.read_only,
        deadline_at=deadline,
    )
    if record.state == "awaiting_approval":
        yield draft(
            ToolApprovalRequestedEvent,
            tool_call_id=tool_call_id,
            tool_name=tool.qualified_name,
            arguments=arguments,
        )
        record = await wait_decision(room.db, room.bell, record)
        assert record.decided_by is not None
        yield draft(
            ToolDecidedEvent,
            tool_call_id=tool_call_id,
            approved=record.state != "denied",
            by=record.decided_by,
        )
    if record.state == "approved":
        record = await _execute(room, tool, record)
    yield outcome_of(record)


async def _execute(room: ToolRoom, tool: McpTool, record: ToolCallRecord) -> ToolCallRecord:
    key, call_id = room.run_key, record.tool_call_id
    if not await tool_calls.move(room.db, key, call_id, "start"):
        return await _reread(room, record)  # NOTE: another runner took it: never twice
    connection = room.servers.connection(tool.server)
    limit = connection.settings.call_timeout_s if connection is not None else 1.0
    try:
        if connection is None:
            raise ToolUnavailable(f"the MCP server {tool.server!r} is not configured")
        answer = await asyncio.wait_for(
            connection.call(
                tool.name, record.arguments, idempotency_key(room.run_id, call_id), limit
            ),
            limit,
        )
    except ToolUnavailable as exc:
        await tool_calls.move(
            room.db, key, call_id, "fail", result={"error": str(exc)}, is_error=True
        )
    except asyncio.CancelledError:
        await asyncio.shield(_lose(room, call_id, "the answer was stopped while the tool ran"))
        raise
    except TimeoutError:
        await _lose(room, call_id, f"the tool did not answer within {limit:g} s")
    except Exception as exc:  # NOTE: the SDK's errors (a broken connection, a JSON-RPC error)
        await _lose(room, call_id, f"the call broke before an answer: {exc}")
    else:
        result, is_error = _result(answer, connection.settings.result_max_chars)
        transition: Transition = "fail" if is_error else "finish"
        await tool_calls.move(room.db, key, call_id, transition, result=result, is_error=is_error)
    return await _reread(room, record)


async def _lose(room: ToolRoom, call_id: str, reason: str) -> None:
    await tool_calls.move(
        room.db, room.run_key, call_id, "lose", result={"unknown": reason}, is_error=True
    )


async def _reread(room: ToolRoom, record: ToolCallRecord) -> ToolCallRecord:
    found = await tool_calls.get(room.db, room.run_key, record.tool_call_id)
    assert found is not None
    return found


def outcome_of(record: ToolCallRecord) -> CallOutcome:
    """The outcome a ledger row stands for (the model is told a denial, and by whom)."""
    effect = record.effect
    if record.state == "denied":
        who = {"user": "the user", "timeout": "no decision in time", "stop": "Stop"}
        denied: dict[str, JsonValue] = {
            "denied": True,
            "by": record.decided_by,
            "message": "This call was denied (by "
            + who.get(record.decided_by or "user", "the user")
            + "); it was not run. Go on without it.",
        }
        if record.reason:
            denied["reason"] = record.reason
        return CallOutcome(denied, True, effect)
    if record.state == "unknown":
        detail = record.result if isinstance(record.result, dict) else {}
        return CallOutcome(
            {
                "unknown": True,
                "message": "The tool did not answer: it may have happened — check.",
                **detail,
            },
            True,
            effect,
        )
    if record.state in ("running", "approved", "awaiting_approval"):
        return CallOutcome(
            {"unknown": True, "message": "This call is handled elsewhere; it was not run here."},
            True,
            "unknown" if record.acts else "none",
        )
    return CallOutcome(record.result, record.is_error, effect)


def _result(answer: mt.CallToolResult, max_chars: int) -> tuple[JsonValue, bool]:
    """The tool's answer as JSON for the model: its text (capped, with a note) or its error."""
    texts = [block.text for block in answer.content if isinstance(block, mt.TextContent)]
    others = len(answer.content) - len(texts)
    text = "\n".join(texts)
    if others:
        text += f"\n[{others} non-text content block(s) left out]"
    out: dict[str, JsonValue] = {"text": text}
    if len(text) > max_chars:
        out = {
            "text": text[:max_chars],
            "truncated": f"the result was cut at {max_chars} of {len(text)} characters",
        }
    if answer.is_error:
        out = {
            "error": out["text"] or "the tool reported an error",
            **{k: v for k, v in out.items() if k == "truncated"},
        }
    return out, bool(answer.is_error)


async def noting_down_servers(
    servers: McpServers, events: AsyncIterator[StreamEvent]
) -> AsyncIterator[StreamEvent]:
    """The run's events, with a ``tools_unavailable`` marker after the first one when an MCP
    server is down (the run's trace and the page say it; the tools are not offered)."""
    first = True
    async for event in events:
        yield event
        note = tools_note(servers) if first else None
        first = False
        if note is not None:
            yield draft(SystemEventEvent, kind="tools_unavailable", message=f"Tools: {note}.")
