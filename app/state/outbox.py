"""Prompts sent while the server cannot be reached: kept in order, sent once when it can.

A queued prompt gets its run id when it is queued, and keeps it until the server has answered a
request carrying it. Sending it again after a lost answer is therefore harmless: the server
answers ``409 run_exists`` and the page attaches to the run the first request made (SPEC §11).

The outbox is plain data (pure functions over a tuple); the store keeps it in ``State.outbox``
and the page keeps it on the device for the signed-in user, so it survives a reload or a
closed tab.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from pydantic import ValidationError

from app.wire.api import AttachmentInfo, ReasoningEffort

EFFORTS: tuple[ReasoningEffort, ...] = ("low", "medium", "high")


@dataclass(frozen=True, slots=True)
class QueuedPrompt:
    """A prompt waiting for the connection, with everything its request needs."""

    run_id: str  # made when it was queued: the request's ``X-Run-Id`` whenever it goes
    chat_id: str
    prompt: str
    thinking_enabled: bool = False
    reasoning_effort: ReasoningEffort | None = None
    tool_intent: bool = False
    model_id: str | None = None
    attachments: tuple[AttachmentInfo, ...] = ()
    sending: bool = False  # its request is out; it leaves the outbox once the server answers

    def to_json(self) -> dict[str, Any]:
        """What the device keeps of it (``sending`` is not kept: after a reload it waits)."""
        return {
            "runId": self.run_id,
            "chatId": self.chat_id,
            "prompt": self.prompt,
            "thinkingEnabled": self.thinking_enabled,
            "reasoningEffort": self.reasoning_effort,
            "toolIntent": self.tool_intent,
            "modelId": self.model_id,
            "attachments": [a.model_dump(by_alias=True) for a in self.attachments],
        }

    @classmethod
    def from_json(cls, kept: object) -> QueuedPrompt | None:
        """A kept prompt, or None when what was kept is not one (a newer or damaged copy)."""
        if not isinstance(kept, dict):
            return None
        run_id, chat_id, prompt = kept.get("runId"), kept.get("chatId"), kept.get("prompt")
        if not (isinstance(run_id, str) and isinstance(chat_id, str) and isinstance(prompt, str)):
            return None
        if not run_id or not chat_id:
            return None
        effort = kept.get("reasoningEffort")
        model = kept.get("modelId")
        try:
            attachments = tuple(
                AttachmentInfo.model_validate(item) for item in kept.get("attachments") or ()
            )
        except (ValidationError, TypeError):
            return None
        return cls(
            run_id,
            chat_id,
            prompt,
            thinking_enabled=kept.get("thinkingEnabled") is True,
            reasoning_effort=effort if effort in EFFORTS else None,
            tool_intent=kept.get("toolIntent") is True,
            model_id=model if isinstance(model, str) and model else None,
            attachments=attachments,
        )


Outbox = tuple[QueuedPrompt, ...]


def queued(outbox: Outbox, item: QueuedPrompt) -> Outbox:
    """``item`` at the end (a run id already queued is not queued twice)."""
    if any(waiting.run_id == item.run_id for waiting in outbox):
        return outbox
    return (*outbox, item)


def without(outbox: Outbox, run_id: str) -> Outbox:
    """The outbox less the prompt ``run_id`` (the same tuple if it is not there)."""
    kept = tuple(item for item in outbox if item.run_id != run_id)
    return outbox if len(kept) == len(outbox) else kept


def marked(outbox: Outbox, run_id: str, *, sending: bool) -> Outbox:
    """The prompt ``run_id`` marked as sent (its request out) or waiting again."""
    if not any(item.run_id == run_id and item.sending != sending for item in outbox):
        return outbox
    return tuple(
        replace(item, sending=sending) if item.run_id == run_id else item for item in outbox
    )


def next_to_send(outbox: Outbox) -> QueuedPrompt | None:
    """The oldest prompt still waiting, unless one is on its way (they go one at a time, in
    order: a prompt follows the answer to the one before it)."""
    if any(item.sending for item in outbox):
        return None
    return outbox[0] if outbox else None


def waiting_in(outbox: Outbox, chat_id: str | None) -> Outbox:
    """The prompts of one chat still in the outbox (waiting, or their request on its way)."""
    return tuple(item for item in outbox if item.chat_id == chat_id)


def find(outbox: Outbox, run_id: str) -> QueuedPrompt | None:
    return next((item for item in outbox if item.run_id == run_id), None)


def kept_outbox(kept: object) -> Outbox:
    """The outbox the device kept (what does not read as a queued prompt is dropped)."""
    if not isinstance(kept, Sequence) or isinstance(kept, str):
        return ()
    items: Outbox = ()
    for entry in kept:
        item = QueuedPrompt.from_json(entry)
        if item is not None:
            items = queued(items, item)
    return items
