"""Tool call routes (SPEC §12): a run's calls, and the decision on one that waits.

``POST /api/runs/{runId}/tool-calls/{toolCallId}/decision`` answers the decision that stands:
the first one taken, from any tab or worker (the store holds it). The same one again is 200
with the same answer; the other one is ``409 decision_taken``. Another user's run, or a call
that never asked, is ``404`` like an unknown id.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web
from pydantic import ValidationError

from app.wire.api import MessageOut, ToolDecisionBody, ToolDecisionResult, WaitingFor
from server.contract.errors import ApiError
from server.contract.jsonio import answer_payload, read_json_body
from server.http.auth import current_user
from server.http.services import services
from server.store import runlog, tool_calls
from server.store.db import Database
from server.store.tool_calls import ToolCallRecord
from server.tools.approvals import decide


async def decide_tool_call(request: web.Request) -> web.Response:
    """``POST …/tool-calls/{toolCallId}/decision`` ``{"approved", "reason"?}``."""
    svc, user_id = services(request), current_user(request)
    run_id, call_id = request.match_info["run_id"], request.match_info["tool_call_id"]
    try:
        body = ToolDecisionBody.model_validate(await read_json_body(request))
    except ValidationError as exc:
        raise ApiError(400, "invalid_body", "a decision is {'approved': bool, 'reason'?}") from exc
    key = runlog.run_key(user_id, run_id)
    decided = await decide(svc.db, svc.bell, key, call_id, body.approved, "user", body.reason)
    if decided is None or decided.answer is None:
        raise ApiError(404, "tool_call_not_found", f"no call {call_id!r} waits in this run")
    wanted = "approved" if body.approved else "denied"
    if not decided.taken_now and decided.answer != wanted:
        raise ApiError(409, "decision_taken", f"this call was already {decided.answer}")
    return answer_payload(
        ToolDecisionResult(
            tool_call_id=call_id, decision=decided.answer, effect=decided.record.effect
        )
    )


async def list_tool_calls(request: web.Request) -> web.Response:
    """``GET /api/runs/{runId}/tool-calls``: every call of the run with its effect."""
    svc, user_id, run_id = services(request), current_user(request), request.match_info["run_id"]
    row = await runlog.run_row(svc.db, user_id, run_id)
    if row is None:
        raise ApiError(404, "run_not_found", f"run {run_id!r} not found")
    calls = await tool_calls.of_run(svc.db, row["id"])
    return web.json_response({"toolCalls": [call.wire() for call in calls]})


async def waiting_for(db: Database, run_key: str) -> WaitingFor | None:
    """The call the run waits on the user (or a page, SPEC §13) for, if any."""
    for call in await tool_calls.of_run(db, run_key):
        if call.state == "awaiting_approval":
            return WaitingFor(kind="approval", tool_call_id=call.tool_call_id)
        if call.state == "awaiting_client":
            return WaitingFor(kind="client", tool_call_id=call.tool_call_id)
    return None


async def with_ledger_effects(
    db: Database, chat_id: str, user_id: str, messages: list[MessageOut]
) -> list[MessageOut]:
    """The messages with each tool call's effect as the ledger says it (a call left waiting
    by a Stop reads denied, one lost mid-call ``unknown``: the event log cannot say so)."""
    calls = await tool_calls.of_chat(db, chat_id)
    if not calls:
        return messages
    return [_overlaid(message, calls, user_id) for message in messages]


def _overlaid(
    message: MessageOut, calls: dict[tuple[str, str], ToolCallRecord], user_id: str
) -> MessageOut:
    if message.run_id is None:
        return message
    key = runlog.run_key(user_id, message.run_id)
    parts = [
        _part_with_effect(part, calls.get((key, str(part.get("toolCallId")))))
        for part in message.parts
    ]
    return message.model_copy(update={"parts": parts})


def _part_with_effect(part: dict[str, Any], call: ToolCallRecord | None) -> dict[str, Any]:
    if call is None or part.get("type") != "tool_call" or not call.acts:
        return part
    return {**part, "effect": call.effect, "decidedBy": call.decided_by}
