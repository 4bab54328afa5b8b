"""Context window accounting: a token estimate of a chat against a small window."""

from __future__ import annotations

import math
from dataclasses import dataclass

from app.wire.protocol import ContextInfoEvent, Severity, StreamEvent
from server.runs.drafts import draft
from server.store import chats
from server.store.db import Database, Row, now
from server.store.messages import messages_by_id, newest_answer_id

WARNING_RATIO = 0.6
CRITICAL_RATIO = 0.85
COMPACTION_RATIO = 0.75
SUMMARY_SHARE = 0.1


@dataclass(frozen=True, slots=True)
class ContextUsage:
    """Used tokens of a chat against its window."""

    used_tokens: int
    max_tokens: int

    @property
    def ratio(self) -> float:
        return round(self.used_tokens / self.max_tokens, 4) if self.max_tokens else 0.0

    @property
    def severity(self) -> Severity:
        if self.ratio >= CRITICAL_RATIO:
            return "critical"
        return "warning" if self.ratio >= WARNING_RATIO else "ok"

    @property
    def compaction_recommended(self) -> bool:
        return self.ratio >= COMPACTION_RATIO

    def fields(self) -> dict[str, int | float | str | bool]:
        """The five fields of the contract's context usage (``context_info``, a chat's read)."""
        return {
            "used_tokens": self.used_tokens,
            "max_tokens": self.max_tokens,
            "ratio": self.ratio,
            "severity": self.severity,
            "compaction_recommended": self.compaction_recommended,
        }


def context_info_event(usage: ContextUsage) -> StreamEvent:
    """The ``context_info`` draft event of a usage."""
    return draft(ContextInfoEvent, **usage.fields())


def estimate_tokens(text: str) -> int:
    """About one token per four characters, and at least one per word."""
    return max(math.ceil(len(text) / 4), len(text.split()))


async def chat_usage(db: Database, chat_id: str, max_tokens: int) -> ContextUsage:
    """Tokens of the chat's live context: its summary plus the turns after the last compaction
    on the branch of its newest answer (other branches and attempts are not sent)."""
    chat = await chats.compaction_of(db, chat_id)
    if chat is None:
        return ContextUsage(0, max_tokens)
    since = chat["compacted_at"] or 0.0
    used = int(chat["summary_tokens"])
    for user, answer in await branch_turns(db, chat_id):
        if user["created_at"] > since:
            used += estimate_tokens(user["content"])
            used += estimate_tokens(answer["content"]) if answer["status"] == "completed" else 0
    return ContextUsage(used, max_tokens)


async def branch_turns(
    db: Database, chat_id: str, before_user_message: str | None = None
) -> list[tuple[Row, Row]]:
    """(user message, the answer that follows it) pairs, oldest first, on the branch that leads
    to ``before_user_message`` (when ``None``: to the chat's newest answer): the conversation
    a model is given, and the one whose size the context ring shows."""
    rows = await messages_by_id(db, chat_id)
    if before_user_message is None:
        newest = await newest_answer_id(db, chat_id)
        answer = None if newest is None else rows.get(newest)
    else:
        prompt = rows.get(before_user_message)
        answer = None if prompt is None else rows.get(prompt["reply_to"] or "")
    turns: list[tuple[Row, Row]] = []
    seen: set[str] = set()
    while answer is not None and answer["id"] not in seen:  # NOTE: a cycle cannot loop forever
        seen.add(answer["id"])
        user = rows.get(answer["reply_to"] or "")
        if user is None:
            break
        turns.append((user, answer))
        answer = rows.get(user["reply_to"] or "")
    return turns[::-1]


async def save_model_usage(db: Database, chat_id: str, used_tokens: int, max_tokens: int) -> None:
    """Remember the usage a real model reported for a chat's last turn."""
    await chats.save_model_usage(db, chat_id, used_tokens, max_tokens)


async def model_usage(db: Database, chat_id: str) -> ContextUsage | None:
    """The usage a real model last reported for the chat, if any."""
    row = await chats.model_usage_of(db, chat_id)
    return ContextUsage(int(row["used_tokens"]), int(row["max_tokens"])) if row else None


async def compact(db: Database, chat_id: str, max_tokens: int) -> tuple[ContextUsage, ContextUsage]:
    """Replace the chat's context by a summary; returns the usage before and after."""
    before = await chat_usage(db, chat_id, max_tokens)
    summary = max(1, int(before.used_tokens * SUMMARY_SHARE)) if before.used_tokens else 0
    await chats.mark_compacted(db, chat_id, now(), summary)
    return before, await chat_usage(db, chat_id, max_tokens)
