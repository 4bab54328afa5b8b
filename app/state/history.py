"""A chat's history from the server (``GET /api/chats/{id}``) as client state.

Persisted parts are the JSON of the one fold (:mod:`app.wire.parts`), validated back into the
same part values by :func:`~app.wire.parts.parts_from_json` (an unknown or malformed part is
skipped, never fatal).

The server stores a tree (:class:`~app.wire.api.MessageOut`): each assistant attempt is its own
message answering the user message ``parent_id``; a user message follows the assistant message
(attempt) ``parent_id``, or starts the chat (``None``: a chat may have several first prompts,
an edit of the first one is another). The client groups the attempts of one answer into one
:class:`MessageState` (attempt 1 first) and turns a prompt's parent into the run id it follows
(``after_run``). Any tree is read as it is, whatever its shape or order.

What is on screen after the read is the conversation of the newest message: at each fork on
its way up to the top, its prompt and its attempt are chosen; any other fork shows its newest
prompt and its latest attempt.

A run the server still reports ``running`` becomes ``interrupted`` with
reason ``detached``: the store re-attaches to it at once by resuming (SPEC §5, page reload).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from app.state.state import (
    TOP,
    ChatState,
    ContextInfo,
    EndReason,
    ErrorInfo,
    MessageState,
    Restored,
    RunState,
    RunStatus,
    context_of,
)
from app.state.trace import RunTrace
from app.wire.api import ChatDetail, MessageOut
from app.wire.codes import RunEndCause, is_run_end_cause
from app.wire.errors import TIMEOUT_CODES, TimeoutKind
from app.wire.parts import TextPart, parts_from_json
from app.wire.text import Text

_STATUS: dict[str, tuple[RunStatus, EndReason | None]] = {
    "running": ("interrupted", "detached"),
    "completed": ("completed", None),
    "cancelled": ("cancelled", None),
    "failed": ("failed", "error"),
    "interrupted": ("interrupted", "eof"),
}


def chat_from_detail(detail: ChatDetail) -> ChatState:
    """The chat with its messages grouped into answers, its runs by id, and the conversation
    of its newest message on screen."""
    run_of = {out.id: _run_id(out) for out in detail.messages if out.role == "assistant"}
    messages: list[MessageState] = []
    runs: dict[str, RunState] = {}
    answer_at: dict[str, int] = {}  # the answered prompt's id -> its answer's index in messages
    for out in detail.messages:
        if out.role == "user":
            messages.append(_prompt(out, run_of.get(out.parent_id or "")))
            continue
        run = run_from_message(detail.id, out)
        runs[run.run_id] = run
        key = out.parent_id or out.id
        if key in answer_at:
            messages[answer_at[key]] = _add_attempt(messages[answer_at[key]], run, runs)
        else:
            answer_at[key] = len(messages)
            messages.append(_answer(out, run))
    chat = ChatState(
        detail.id,
        detail.title,
        tuple(messages),
        runs,
        context_info=_context(detail),
        loaded=True,
        model_id=detail.model_id,
        updated_at=detail.updated_at.timestamp(),
    )
    return _show_newest(chat, detail.messages, run_of)


def _run_id(out: MessageOut) -> str:
    return out.run_id or f"stored_{out.id}"


def _show_newest(chat: ChatState, stored: list[MessageOut], run_of: dict[str, str]) -> ChatState:
    """``chat`` showing the path from the top to its newest message (see the docstring)."""
    by_id = {out.id: out for out in stored}
    messages = list(chat.messages)
    branches: dict[str, str] = {}
    out = stored[-1] if stored else None
    seen: set[str] = set()  # NOTE: a malformed tree with a cycle ends the walk, not the page
    while out is not None and out.id not in seen:
        seen.add(out.id)
        if out.role == "assistant":
            index, message = _holding(messages, run_of[out.id])
            messages[index] = replace(message, shown=message.run_ids.index(run_of[out.id]))
        else:
            branches[run_of.get(out.parent_id or "") or TOP] = out.id
        parent = by_id.get(out.parent_id or "")
        out = parent if parent is not None and parent.role != out.role else None
    return replace(chat, messages=tuple(messages), branches=branches)


def _holding(messages: list[MessageState], run_id: str) -> tuple[int, MessageState]:
    return next((i, m) for i, m in enumerate(messages) if run_id in m.run_ids)


def _context(detail: ChatDetail) -> ContextInfo | None:
    return None if detail.context_info is None else context_of(detail.context_info)


def _prompt(out: MessageOut, after_run: str | None) -> MessageState:
    return MessageState(
        out.id,
        "user",
        text=out.text,
        server_id=out.id,
        after_run=after_run,
        attachments=tuple(out.attachments),
    )


END_CAUSES: dict[RunEndCause, EndReason | None] = {
    "server_restarted": "server_restarted",
    "server_shutdown": "server_shutdown",
    "orphaned": "orphaned",
    # NOTE: the status says it: cancelled by Stop or by itself, interrupted with no terminal
    # event (``eof``), or by a lost process (a resume reads the error it logged)
    "user_cancelled": None,
    "cancelled": None,
    "stream_ended": None,
    "worker_lost": None,
}
"""What each end cause the server keeps means on the page (``None``: the status's own)."""


_PAGE_TIMEOUTS: dict[str, TimeoutKind] = {code: kind for kind, code in TIMEOUT_CODES.items()}


def run_from_message(chat_id: str, out: MessageOut) -> RunState:
    """One persisted assistant message as a settled run (parts from history)."""
    status, reason = _STATUS.get(out.status or "completed", ("completed", None))
    cause = END_CAUSES[out.reason] if is_run_end_cause(out.reason) else None
    if status != "completed" and cause is not None:
        reason = cause
    error, timeout = None, _PAGE_TIMEOUTS.get(out.reason or "")
    if status == "cancelled" and timeout is not None:
        # NOTE: the page gave up waiting and cancelled it, saying so: shown as it was then
        status, reason = "failed", "timeout"
    if status == "failed":
        error = ErrorInfo(out.reason or "stream_error", out.error_message or "")
    parts = parts_from_json(out.parts)
    if not parts and out.text:
        parts = (TextPart(Text(out.text)),)
    run_id = _run_id(out)
    return RunState(
        run_id=run_id,
        chat_id=chat_id,
        attempt=out.attempt,
        status=status,
        parts=parts,
        reason=reason,
        error=error,
        stop_reason=out.stop_reason if status == "completed" else None,
        cancel="confirmed" if status == "cancelled" else None,
        has_gap=out.partial and status == "completed",
        message_id=out.id,
        answered_at=None if out.created_at is None else out.created_at.isoformat(),
        model_id=out.model_id,
        phase=Restored(),
        trace=RunTrace(
            run_id, outcome=status, timeout_fired=timeout if reason == "timeout" else None
        ),
    )


def _answer(out: MessageOut, run: RunState) -> MessageState:
    return MessageState(
        out.id, "assistant", server_id=out.id, reply_to=out.parent_id, run_ids=(run.run_id,)
    )


def _add_attempt(message: MessageState, run: RunState, runs: dict[str, RunState]) -> MessageState:
    """``message`` with ``run`` among its attempts, sorted by attempt; the latest shown."""
    run_ids = sorted((*message.run_ids, run.run_id), key=lambda r: runs[r].attempt)
    return replace(message, run_ids=tuple(run_ids), shown=len(run_ids) - 1)


@dataclass(frozen=True, slots=True)
class ChatView:
    """What of a chat was on screen: the prompt chosen at each fork (by the server's id) and
    the attempts shown (by run id). Kept on the device, so a reload shows the same."""

    branches: Mapping[str, str] = field(default_factory=dict)  # fork -> prompt (server id)
    runs: tuple[str, ...] = ()  # the attempt shown of each answer that has several

    def to_json(self) -> dict[str, object]:
        return {"branches": dict(self.branches), "runs": list(self.runs)}

    @classmethod
    def from_json(cls, data: object) -> ChatView | None:
        """The view of stored JSON; ``None`` when it is not one (never raises)."""
        if not isinstance(data, dict):
            return None
        branches, runs = data.get("branches"), data.get("runs")
        if not isinstance(branches, dict) or not isinstance(runs, list):
            return None
        pairs = {str(k): str(v) for k, v in branches.items() if isinstance(v, str)}
        return cls(pairs, tuple(str(r) for r in runs if isinstance(r, str)))


def view_of(chat: ChatState) -> ChatView:
    """The choices on screen in ``chat`` (see :class:`ChatView`)."""
    by_id = {m.id: m for m in chat.messages}
    branches = {
        fork: by_id[chosen].server_id or chosen
        for fork, chosen in chat.branches.items()
        if chosen in by_id
    }
    runs = tuple(
        str(m.shown_run_id) for m in chat.messages if m.role == "assistant" and len(m.run_ids) > 1
    )
    return ChatView(branches, runs)


def with_view(chat: ChatState, view: ChatView) -> ChatState:
    """``chat`` showing the remembered choices that still exist in it (the rest as read)."""
    prompts = {m.server_id or m.id: m for m in chat.messages if m.role == "user"}
    branches = dict(chat.branches)
    for fork, prompt_id in view.branches.items():
        prompt = prompts.get(prompt_id)
        if prompt is not None and (prompt.after_run or TOP) == fork:
            branches[fork] = prompt.id
    messages = tuple(
        replace(m, shown=m.run_ids.index(shown))
        if (shown := next((r for r in view.runs if r in m.run_ids), None)) is not None
        else m
        for m in chat.messages
    )
    return replace(chat, messages=messages, branches=branches)


def detached_runs(chat: ChatState) -> tuple[str, ...]:
    """Runs still running on the server when the history was read (to re-attach to)."""
    return tuple(r.run_id for r in chat.runs.values() if r.reason == "detached")
