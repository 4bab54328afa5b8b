"""Compaction of a chat answered by a real model: the model summarises the conversation, and
later calls send that summary in place of the turns it covers (``server.model.conversation``).

The demo's compaction (``server.turns.context.compact``) only lowers its token estimate; a real
model must really be sent less, so here the summary is stored and the chat's ``compacted_at``
marks the turns it replaces. The usage shown drops at once (the summary's estimate) and the model's
own count follows with the next answer's ``context_info``.
"""

from __future__ import annotations

from app.wire.protocol import TextEvent
from server.model.catalog import ProviderModel
from server.model.conversation import chat_history, merge_user_runs
from server.model.providers.base import Message, ModelCall, UserMessage, open_stream
from server.store.chats import save_summary
from server.store.db import Database, now
from server.turns.context import ContextUsage, estimate_tokens, model_usage, save_model_usage

SUMMARY_REQUEST = (
    "Summarise our conversation so far for your own later use: the facts, numbers, names, "
    "decisions and open questions, in a few short paragraphs. Answer with the summary only."
)
SUMMARY_MAX_TOKENS = 2048


async def compact_with_model(
    db: Database, model: ProviderModel, chat_id: str
) -> tuple[ContextUsage, ContextUsage]:
    """Ask the model for a summary and store it; the usage before and after (raises
    ``ProviderFailure`` when the model cannot answer: nothing changes then)."""
    window = model.context_window
    before = await model_usage(db, chat_id) or ContextUsage(0, window)
    history = await chat_history(db, chat_id, None, structured_tools=False)
    if not history:
        return before, before
    summary = await _summary(model, history)
    stamp = now()
    await save_summary(db, chat_id, summary, stamp)
    after = ContextUsage(estimate_tokens(summary), window)
    await save_model_usage(db, chat_id, after.used_tokens, after.max_tokens)
    return before, after


async def _summary(model: ProviderModel, history: list[Message]) -> str:
    messages = merge_user_runs([*history, UserMessage(SUMMARY_REQUEST)])
    call = ModelCall(
        model=model.settings.id,
        messages=tuple(messages),
        system=model.settings.system,
        max_output_tokens=min(SUMMARY_MAX_TOKENS, model.settings.max_output_tokens),
    )
    stream = await open_stream(model.adapter, call, model.timeouts)
    parts = [item.text async for item in stream.items() if isinstance(item, TextEvent)]
    return "".join(parts).strip()
