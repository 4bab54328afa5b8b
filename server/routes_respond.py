"""``POST /api/respond/stream``: checks, then a run streamed as SSE (demo or test scenario)."""

from __future__ import annotations

import logging

from aiohttp import web
from pydantic import ValidationError

from app.api import RespondStreamBody, RunStatus
from server import demo
from server.auth import current_user
from server.context import ContextUsage, chat_usage, estimate_tokens
from server.db import new_id
from server.errors import ApiError
from server.jsonio import read_json_body
from server.live_run import LiveRun
from server.scenario_player import stream_scenario
from server.services import Services, services
from server.stream import follow_run, open_sse
from server.turns import Turn, check_turn, create_rows

log = logging.getLogger("riacho.respond")


async def respond_stream(request: web.Request) -> web.StreamResponse:
    """Validate the turn, start its run, and stream the run's events."""
    svc, user_id = services(request), current_user(request)
    try:
        body = RespondStreamBody.model_validate(await read_json_body(request))
    except ValidationError as exc:
        detail = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ApiError(400, "invalid_body", detail) from exc
    run_id = body.run_id or request.headers.get("X-Run-Id") or new_id("run")
    turn = check_turn(svc.db, user_id, body, run_id)
    steps = svc.scenarios.take(body.chat_id) if svc.config.test_hooks else None
    if steps is not None:
        return await stream_scenario(request, svc, turn, steps)
    create_rows(svc.db, turn)
    run = svc.runs.register(turn.meta)
    svc.runs.start(run, _generate(svc, run, _demo_turn(svc, turn, body)))
    response = await open_sse(request)
    await follow_run(svc.runs, run, response, after=0)
    return response


def _demo_turn(svc: Services, turn: Turn, body: RespondStreamBody) -> demo.DemoTurn:
    info, window = turn.model.info, svc.config.context_window_tokens

    def usage(answer: str) -> ContextUsage:
        before = chat_usage(svc.db, turn.meta.chat_id, window).used_tokens
        return ContextUsage(before + estimate_tokens(answer), window)

    return demo.DemoTurn(
        prompt=turn.prompt,
        user_message_id=turn.meta.user_message_id,
        message_id=turn.meta.message_id,
        model_label=info.label,
        token_s=svc.config.demo_token_ms * turn.model.pace / 1000,
        thinking=body.thinking_enabled and info.supports_thinking,
        effort=body.reasoning_effort,
        tools=body.tool_intent and info.supports_tools,
        brief=turn.model.brief,
        previous_model_label=turn.previous_model_label,
        attachments=[str(a["name"]) for a in turn.attachments],
        usage=usage,
    )


async def _generate(svc: Services, run: LiveRun, turn: demo.DemoTurn) -> RunStatus | None:
    status: RunStatus | None = None
    async for event in demo.play(turn):
        svc.runs.emit(run, event)
        if event.type == "done":
            status = "cancelled" if event.stop_reason == "cancelled" else "completed"
    return status
