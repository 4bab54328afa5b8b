"""A chat's history from the server (``GET /api/chats/{id}``) as client state.

Persisted parts are the JSON of the one fold (:mod:`app.state.parts`), validated back into the
same part values by :func:`~app.state.parts.parts_from_json` (an unknown or malformed part is
skipped, never fatal).

The server stores each assistant attempt as its own message answering ``parent_id``; the
client groups the attempts of one answer into one :class:`MessageState` (attempt 1 first,
the latest shown). A user message's ``parent_id`` is the assistant message (attempt) it
follows; it becomes that attempt's run id (``after_run``). A server that keeps no tree (no user
message has a parent) is read as one line: each prompt follows the latest attempt before it.

A run the server still reports ``running`` becomes ``interrupted`` with
reason ``detached``: the store re-attaches to it at once by resuming (SPEC §5, page reload).
"""

from __future__ import annotations

from dataclasses import replace

from app.state.parts import TextPart, parts_from_json
from app.state.state import (
    ChatState,
    EndReason,
    ErrorInfo,
    MessageState,
    Restored,
    RunState,
    RunStatus,
)
from app.state.text import Text
from app.state.trace import RunTrace
from app.wire.api import ChatDetail, MessageOut

_STATUS: dict[str, tuple[RunStatus, EndReason | None]] = {
    "running": ("interrupted", "detached"),
    "completed": ("completed", None),
    "cancelled": ("cancelled", None),
    "failed": ("failed", "error"),
    "interrupted": ("interrupted", "eof"),
}


def chat_from_detail(detail: ChatDetail) -> ChatState:
    """The chat with its messages grouped into turns and its runs by id."""
    messages: list[MessageState] = []
    runs: dict[str, RunState] = {}
    groups: dict[str, int] = {}  # parent id -> index of its assistant message in `messages`
    run_of: dict[str, str] = {}  # assistant message id -> its run id
    tree = any(out.role == "user" and out.parent_id for out in detail.messages)
    latest: str | None = None  # NOTE: the latest attempt so far (a server without a tree)
    for out in detail.messages:
        if out.role == "user":
            after = run_of.get(out.parent_id or "") if tree else latest
            messages.append(_prompt(out, after))
            continue
        run = run_from_message(detail.id, out)
        runs[run.run_id] = run
        run_of[out.id] = run.run_id
        index = groups.get(out.parent_id or out.id)
        if index is None:
            groups[out.parent_id or out.id] = len(messages)
            messages.append(_answer(out, run))
        else:
            messages[index] = _add_attempt(messages[index], run, runs)
        latest = messages[groups[out.parent_id or out.id]].shown_run_id
    updated = detail.updated_at.timestamp()
    return ChatState(
        detail.id, detail.title, tuple(messages), runs, loaded=True, updated_at=updated
    )


def _prompt(out: MessageOut, after_run: str | None) -> MessageState:
    return MessageState(
        out.id,
        "user",
        text=out.text,
        server_id=out.id,
        after_run=after_run,
        attachments=tuple(out.attachments),
    )


_SERVER_REASONS: dict[str, EndReason] = {
    "server_restarted": "server_restarted",
    "server_shutdown": "server_shutdown",
    "orphaned": "orphaned",
}


def run_from_message(chat_id: str, out: MessageOut) -> RunState:
    """One persisted assistant message as a settled run (parts from history)."""
    status, reason = _STATUS.get(out.status or "completed", ("completed", None))
    if status != "completed" and out.reason in _SERVER_REASONS:
        reason = _SERVER_REASONS[out.reason]
    error = ErrorInfo(out.reason, "") if status == "failed" and out.reason else None
    parts = parts_from_json(out.parts)
    if not parts and out.text:
        parts = (TextPart(Text(out.text)),)
    run_id = out.run_id or f"stored_{out.id}"
    return RunState(
        run_id=run_id,
        chat_id=chat_id,
        attempt=out.attempt,
        status=status,
        parts=parts,
        reason=reason,
        error=error,
        cancel="confirmed" if status == "cancelled" else None,
        has_gap=out.partial and status == "completed",
        message_id=out.id,
        phase=Restored(),
        trace=RunTrace(run_id, outcome=status),
    )


def _answer(out: MessageOut, run: RunState) -> MessageState:
    return MessageState(
        out.id, "assistant", server_id=out.id, reply_to=out.parent_id, run_ids=(run.run_id,)
    )


def _add_attempt(message: MessageState, run: RunState, runs: dict[str, RunState]) -> MessageState:
    """``message`` with ``run`` among its attempts, sorted by attempt; the latest shown."""
    run_ids = sorted((*message.run_ids, run.run_id), key=lambda r: runs[r].attempt)
    return replace(message, run_ids=tuple(run_ids), shown=len(run_ids) - 1)


def detached_runs(chat: ChatState) -> tuple[str, ...]:
    """Runs still running on the server when the history was read (to re-attach to)."""
    return tuple(r.run_id for r in chat.runs.values() if r.reason == "detached")
