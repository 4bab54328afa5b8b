"""``POST /api/respond/stream``: checks, then a run streamed as SSE (model, demo or scenario).

A real model's run first waits for its provider to accept the request: a provider that cannot
be reached or refuses it (401/403/429/5xx) is answered ``503 model_unavailable`` (other
refusals ``502 provider_error``) before any stream starts, and the turn leaves nothing behind.

# NOTE: the wait is bounded by ``Config.accept_wait_s`` (below the browser's 30 s first-event
# timeout): a provider still silent then (a local server loading its model) gets the stream
# opened anyway, and a later refusal arrives in it as an ``error`` event.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any

from aiohttp import web
from pydantic import ValidationError

from app.wire.api import RespondStreamBody, ServerRunStatus
from app.wire.protocol import ContextInfoEvent, StreamEvent
from server.contract.errors import ApiError
from server.contract.jsonio import read_json_body
from server.demo import model as demo
from server.http.auth import current_user
from server.http.services import Services, services
from server.model import loop as model_turn
from server.model.catalog import ProviderModel
from server.model.providers.base import ProviderFailure
from server.model.turn import model_turn_for
from server.runs.coalesce import coalesce
from server.runs.live import LiveRun
from server.runs.registry import emit_all
from server.runs.stream import follow_run, open_sse
from server.scenarios.player import stream_scenario
from server.store.db import new_id
from server.tools.calls import ToolRoom, noting_down_servers
from server.tools.client_tools import client_tools
from server.turns.context import save_model_usage
from server.turns.start import Turn, check_turn, create_rows, discard_rows, touch_chat

log = logging.getLogger("riacho.respond")
JsonObject = dict[str, Any]


async def respond_stream(request: web.Request) -> web.StreamResponse:
    """Validate the turn, start its run, and stream the run's events."""
    svc, user_id = services(request), current_user(request)
    if not svc.runs.accepting:
        raise ApiError(503, "server_stopping", "the server is restarting", {"Retry-After": "5"})
    try:
        body = RespondStreamBody.model_validate(await read_json_body(request))
    except ValidationError as exc:
        detail = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ApiError(400, "invalid_body", detail) from exc
    run_id = body.run_id or request.headers.get("X-Run-Id") or new_id("run")
    turn = await check_turn(svc.db, svc.catalog, svc.config.limits, user_id, body, run_id)
    await svc.runs.check_room(user_id, svc.config.limits.runs_per_user)
    steps = await svc.hooks.take(body.chat_id) if svc.hooks is not None else None
    if steps is not None:
        return await stream_scenario(request, svc.db, svc.runs, turn, steps)
    if isinstance(turn.model, ProviderModel):
        run = await _start_model_run(svc, turn, turn.model, body)
    else:
        await create_rows(svc.db, turn)
        run = svc.runs.register(turn.meta)
        demo_turn = demo.demo_turn_for(
            svc.db,
            turn,
            body,
            token_ms=svc.config.demo_token_ms,
            context_window=svc.config.context_window_tokens,
            room=tool_room(svc, run, body),
        )
        events = _emit_coalesced(svc, run, _tools_said(svc, body, demo.play(demo_turn)))
        svc.runs.start(run, events, demo.endings(demo_turn))
    response = await open_sse(request)
    await follow_run(svc.runs, run, response, after=0)
    return response


async def _start_model_run(
    svc: Services, turn: Turn, model: ProviderModel, body: RespondStreamBody
) -> LiveRun:
    """Start the run, then wait until the provider accepted the first request (or refused it)."""
    await create_rows(svc.db, turn, touch_chat=False)
    run = svc.runs.register(turn.meta)
    opened: model_turn.Opened = asyncio.get_running_loop().create_future()
    answer = await model_turn_for(
        svc.db,
        turn,
        model,
        body,
        max_model_calls=svc.config.max_model_calls,
        notes=run.trace.history_notes,
        room=tool_room(svc, run, body),
    )
    for note in run.trace.history_notes:
        log.info("history run=%s: %s", run.run_id, note)
    played = _tools_said(svc, body, model_turn.play(answer, opened))
    events = _emit_coalesced(svc, run, played, _usage_saver(svc, run))
    svc.runs.start(run, events, model_turn.endings(answer))
    failure = await _accepted(run, opened, svc.config.accept_wait_s)
    if failure is None:
        await touch_chat(svc.db, turn)
        return run
    await run.stopped.wait()
    await discard_rows(svc.db, turn, keep_user_message=body.retry_of_run_id is not None)
    raise model_turn.pre_stream_error(failure)


async def _accepted(
    run: LiveRun, opened: model_turn.Opened, timeout: float
) -> ProviderFailure | None:
    """The provider's refusal of the first request; ``None`` when it accepted, when the run
    stopped, or when it has not answered within ``timeout`` seconds."""
    stopped = asyncio.ensure_future(run.stopped.wait())
    try:
        waited: set[asyncio.Future[Any]] = {opened, stopped}
        await asyncio.wait(waited, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()
    return opened.result() if opened.done() else None


async def _emit_coalesced(
    svc: Services,
    run: LiveRun,
    events: AsyncIterator[StreamEvent],
    on_event: Callable[[StreamEvent], Awaitable[None]] | None = None,
) -> ServerRunStatus | None:
    """``emit_all`` of a generator's events with their deltas merged per window; the generator
    is closed however the run ends (a Stop during an append leaves it at a ``yield``)."""
    merged = coalesce(events, svc.config.coalesce_ms / 1000)
    try:
        return await emit_all(svc.runs, run, merged, on_event)
    finally:
        if isinstance(merged, AsyncGenerator):
            await merged.aclose()


def _tools_said(
    svc: Services, body: RespondStreamBody, events: AsyncIterator[StreamEvent]
) -> AsyncIterator[StreamEvent]:
    """With Tools on, a run says which MCP servers are down."""
    return noting_down_servers(svc.mcp, events) if body.tool_intent else events


def tool_room(svc: Services, run: LiveRun, body: RespondStreamBody) -> ToolRoom:
    """What the run's tool calls need: MCP servers, ledger, decisions, deadlines, and the
    tools its page runs (SPEC §13)."""
    return ToolRoom(
        svc.db,
        svc.mcp,
        svc.bell,
        run.key,
        run.run_id,
        svc.config.approval_timeout_s,
        client_tools=client_tools(body.client_tools),
        client_timeout_s=svc.config.client_tool_timeout_s,
    )


def _usage_saver(svc: Services, run: LiveRun) -> Callable[[StreamEvent], Awaitable[None]]:
    """Keep the usage a real model reports, so a reloaded chat shows it."""

    async def save(event: StreamEvent) -> None:
        if isinstance(event, ContextInfoEvent):
            await save_model_usage(svc.db, run.meta.chat_id, event.used_tokens, event.max_tokens)

    return save
