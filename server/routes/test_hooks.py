"""Test hooks (SPEC §9), registered only with ``--test-hooks``."""

from __future__ import annotations

from aiohttp import web

from server.contract.errors import ApiError
from server.contract.jsonio import answer, read_json_body
from server.http.services import Services, services
from server.scenarios.hooks import TestHooks
from server.scenarios.steps import StepError, parse_scenario
from server.store.db import wipe


def _hooks(svc: Services) -> TestHooks:
    assert svc.hooks is not None  # NOTE: these routes exist only with --test-hooks
    return svc.hooks


async def queue_scenario(request: web.Request) -> web.Response:
    """``POST /__test__/scenarios`` ``{"chatId"?, "steps": [...]}``."""
    svc = services(request)
    try:
        body = await read_json_body(request, max_bytes=svc.config.limits.scenario_max_bytes)
        scenario = parse_scenario(body)
    except StepError as exc:
        raise ApiError(400, "invalid_body", str(exc)) from exc
    waiting = await _hooks(svc).push(scenario.chat_id, body)
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
    trace = await _hooks(services(request)).trace(request.match_info["run_id"])
    if trace is None:
        raise ApiError(404, "run_not_found", "no trace for this run")
    return answer(trace)


async def reset(request: web.Request) -> web.Response:
    """``POST /__test__/reset``: cancel live runs, forget scenarios and traces (in every worker
    of the deployment), wipe the database."""
    svc = services(request)
    await _hooks(svc).reset()
    await wipe(svc.db)
    return answer({"reset": True})
