"""A checked turn made into a real model's turn: the call (history on the branch, the new
prompt with its attachments, tools, thinking, effort) and where each call's record is kept."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from app.wire.api import RespondStreamBody
from server.model.catalog import ProviderModel
from server.model.conversation import chat_history, merge_user_runs, user_message
from server.model.loop import ModelTurn
from server.model.providers.base import ModelCall, StepRecord, ToolSpec
from server.model.tools import client_specs, offered
from server.store.db import Database
from server.store.messages import save_steps
from server.tools.calls import ToolRoom
from server.turns.start import Turn


async def model_turn_for(
    db: Database,
    turn: Turn,
    model: ProviderModel,
    body: RespondStreamBody,
    *,
    max_model_calls: int,
    notes: list[str],
    room: ToolRoom | None = None,
) -> ModelTurn:
    """The model turn of ``turn`` (what could not be sent as stored is said in ``notes``)."""
    tools: tuple[ToolSpec, ...] = ()
    if model.info.supports_tools:
        # NOTE: the tools the page runs (SPEC §13) are offered with Tools off too
        tools = offered(room) if body.tool_intent else client_specs(room)
    history = await chat_history(
        db,
        turn.meta.chat_id,
        turn.meta.user_message_id,
        bool(tools),
        source=model.info.id,
        notes=notes,
    )
    call = ModelCall(
        model=model.settings.id,
        messages=tuple(
            merge_user_runs([*history, await user_message(db, turn.prompt, turn.attachments)])
        ),
        system=model.settings.system,
        tools=tools,
        thinking=body.thinking_enabled and model.info.supports_thinking,
        effort=body.reasoning_effort,
        max_output_tokens=model.settings.max_output_tokens,
    )
    return ModelTurn(
        model=model,
        call=call,
        user_message_id=turn.meta.user_message_id,
        message_id=turn.meta.message_id,
        max_model_calls=max_model_calls,
        previous_model_label=turn.previous_model_label,
        keep_step=step_keeper(db, turn.meta.message_id),
        room=room,
    )


def step_keeper(db: Database, message_id: str) -> Callable[[StepRecord], Awaitable[None]]:
    """Persist each model call's record with the answer (``messages.steps``)."""
    kept: list[dict[str, Any]] = []

    async def keep(record: StepRecord) -> None:
        kept.append(record.to_json())
        await save_steps(db, message_id, kept)

    return keep
