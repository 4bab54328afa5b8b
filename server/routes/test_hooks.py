"""Test hooks (SPEC §9), registered only with ``--test-hooks``."""

from __future__ import annotations

from aiohttp import web

from server.errors import ApiError
from server.jsonio import answer, read_json_body
from server.scenarios.steps import StepError, parse_scenario
from server.services import services


async def queue_scenario(request: web.Request) -> web.Response:
    """``POST /__test__/scenarios`` ``{"chatId"?, "steps": [...]}``."""
    try:
        limit = services(request).config.limits.scenario_max_bytes
        scenario = parse_scenario(await read_json_body(request, max_bytes=limit))
    except StepError as exc:
        raise ApiError(400, "invalid_body", str(exc)) from exc
    waiting = services(request).scenarios.push(scenario.chat_id, scenario.steps)
    return answer(
        {
            "queued": True,
            "chatId": scenario.chat_id,
            "waiting": waiting,
            "steps": len(scenario.steps),
        }
    )


async def run_trace(request: web.Request) -> web.Response:
    """``GET /__test__/runs/{runId}``: what the server saw of a run."""
    trace = services(request).runs.traces.get(request.match_info["run_id"])
    if trace is None:
        raise ApiError(404, "run_not_found", "no trace for this run")
    return answer(trace.to_json())


async def reset(request: web.Request) -> web.Response:
    """``POST /__test__/reset``: cancel live runs, forget scenarios, wipe the database."""
    svc = services(request)
    await svc.runs.shutdown()
    svc.scenarios.clear()
    svc.runs.traces.clear()
    with svc.db.transaction():
        for table in (
            "run_events",
            "runs",
            "messages",
            "chats",
            "attachments",
            "sessions",
            "users",
        ):
            svc.db.execute(f"DELETE FROM {table}")
    return answer({"reset": True})
