"""Stop end to end (SPEC §5): the server's word decides how a stopped run ends.

    settle_cancel(run)  cancel_run → poll get_run until it settles or the deadline passes
                        cancelled                → cancelled, confirmed
                        deadline, still running  → cancelled, unconfirmed
                        completed/failed first   → recover: the persisted result wins

Recovering reads the events after the last seq (the complete answer, not the local cut);
if that fails it takes the run from the chat history.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

from app.run.runner import RunEnv, Window, read_resumed
from app.state.actions import CancelSettled, ResumeStarted, RunRestored
from app.state.history import run_from_message
from app.wire.api import SERVER_SETTLED, CancelResult, RunInfo
from app.wire.errors import ChatError


async def settle_cancel(env: RunEnv, run_id: str) -> None:
    """After Stop: cancel on the server and poll until it settles or the deadline passes."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + env.config.cancel_deadline_ms / 1000
    status = await _ask(env.api.cancel_run(run_id), deadline)
    while status not in SERVER_SETTLED:
        remaining = deadline - loop.time()
        if remaining <= 0:
            env.dispatch(CancelSettled(run_id, env.clock(), "unconfirmed"))
            return
        await asyncio.sleep(min(env.config.cancel_poll_ms / 1000, remaining))
        status = await _ask(env.api.get_run(run_id), deadline)
    if status == "cancelled":
        env.dispatch(CancelSettled(run_id, env.clock(), "confirmed"))
    else:
        await recover(env, run_id)


async def _ask(request: Awaitable[CancelResult | RunInfo], deadline: float) -> str | None:
    """The run status a request answers, or None if it failed or the deadline passed."""
    remaining = deadline - asyncio.get_running_loop().time()
    try:
        answer = await asyncio.wait_for(request, timeout=max(remaining, 0.0))
    except (ChatError, TimeoutError):
        return None
    return answer.status


async def recover(env: RunEnv, run_id: str) -> None:
    """The server ended the run before the cancel: show its real result, not the local cut."""
    env.dispatch(ResumeStarted(run_id, env.clock(), recovering=True))
    await read_resumed(env, run_id, Window())
    run = env.run(run_id)
    if run is None or run.status != "interrupted":
        return
    try:
        detail = await env.api.get_chat(run.chat_id)
    except ChatError:
        return
    for message in detail.messages:
        if message.role == "assistant" and message.run_id == run_id:
            restored = run_from_message(run.chat_id, message)
            env.dispatch(RunRestored(run_id, env.clock(), restored))
            return
