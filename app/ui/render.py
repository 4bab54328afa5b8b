"""HTML for the pieces of the page, from state (pure; every string is escaped here).

The DOM hooks of SPEC §8 are produced here and nowhere else. The answer text of a run is one
``.message-text`` holding the concatenation of all its text deltas, placed where the first text
part appeared; the other parts (thinking, tool calls, images, markers) keep their order around it.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

from app.state.parts import (
    ContinuationPart,
    ImagePart,
    Part,
    SystemEventPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
)
from app.state.state import ChatState, ContextInfo, ErrorInfo, MessageState, RunState, State
from app.state.trace import format_trace
from app.ui.markdown import is_safe_image

ERROR_TEXT = {
    "invalid_body": "The request was not understood by the server.",
    "chat_not_found": "This chat no longer exists.",
    "empty_prompt": "Write a message first.",
    "attachment_unavailable": "An attachment is no longer available; attach it again.",
    "model_not_found": "That model does not exist.",
    "model_unavailable": "The model is unavailable right now.",
    "unauthenticated": "Your session expired; reload the page.",
    "network_error": "The network failed; check your connection.",
    "first_event_timeout": "The server did not start answering in time.",
    "idle_timeout": "The answer stopped arriving.",
    "total_timeout": "The answer took too long.",
    "event_too_large": "The server sent an event larger than the client accepts.",
    "server_shutdown": "The server stopped before the answer was complete; regenerate it.",
    "server_restarted": "The server restarted before the answer was complete; regenerate it.",
    "server_stopping": "The server is restarting; try again in a moment.",
    "generation_failed": "The answer could not be generated.",
    "provider_refused": "The model declined to answer this.",
    "provider_disconnected": "The connection to the model broke before the answer was complete.",
    "provider_timeout": "The model stopped answering.",
    "too_many_runs": "Too many answers are being written at once; wait for one to finish.",
    "prompt_too_large": "The message is too long.",
    "too_many_attachments": "Too many files are attached to one message.",
    "invalid_credentials": "That name and password do not match.",
    "origin_refused": "This page may not talk to the server from where it is served.",
    "body_too_large": "The request is too large.",
}
INTERRUPTED_TEXT = {
    "eof": "The stream ended before the answer was complete.",
    "network": "The connection broke before the answer was complete.",
    "gap": "Part of the answer went missing on the way and could not be recovered.",
    "expired": "The rest of this answer is no longer available; regenerate it.",
    "resume_failed": "Resuming failed.",
    "detached": "Re-attaching to the answer…",
    "server_restarted": "The server restarted before the answer was complete.",
    "server_shutdown": "The server stopped before the answer was complete.",
}


def attr(name: str, value: object) -> str:
    """One escaped HTML attribute."""
    return f' {name}="{escape(str(value), quote=True)}"'


def human_error(error: ErrorInfo) -> str:
    """The sentence shown for an error code (the server's message when the code is unknown)."""
    text = ERROR_TEXT.get(error.code, error.message or "Something went wrong.")
    if error.retry_after:
        text += f" Try again in {error.retry_after:g} s."
    return text


def banner_html(state: State) -> str:
    """The pre-stream / request error banner, or nothing."""
    error = state.last_error
    if error is None:
        return ""
    return (
        f'<div class="banner" role="alert"{attr("data-error-code", error.code)}>'
        f"<span>{escape(human_error(error))} <code>{escape(error.code)}</code></span>"
        '<button type="button" data-action="dismiss-error">Dismiss</button></div>'
    )


def chat_title_html(chat: ChatState | None) -> str:
    """The active chat's title for the top bar."""
    return escape((chat.title if chat else "") or "New chat")


def chat_list_html(state: State) -> str:
    """The chat list; the active chat carries ``aria-current="true"``."""
    items = []
    for chat_id in state.chat_order:
        chat = state.chats.get(chat_id)
        title = (chat.title if chat else "") or "New chat"
        current = attr("aria-current", "true") if chat_id == state.active_chat_id else ""
        live = " ●" if chat is not None and chat.is_generating else ""
        items.append(
            f'<button type="button"{attr("data-chat-id", chat_id)}{current}>'
            f"{escape(title)}{live}</button>"
        )
    return "".join(items)


def context_html(info: ContextInfo | None) -> str:
    """The context ring (and the compaction callout when recommended)."""
    if info is None:
        return ""
    ratio = min(max(info.ratio, 0.0), 1.0)
    label = f"{info.used_tokens:,} of {info.max_tokens:,} tokens ({ratio:.0%})"
    ring = (
        f'<div class="context-ring"{attr("data-context-ring", "")}'
        f"{attr('data-ratio', f'{ratio:.4f}')}"
        f"{attr('data-severity', info.severity)}{attr('title', label)}{attr('aria-label', label)}"
        f' role="img" style="--ratio:{ratio:.4f}"><span>{ratio:.0%}</span></div>'
    )
    if not info.compaction_recommended:
        return ring
    return ring + (
        '<div class="callout" data-callout="compaction">Context almost full. '
        '<button type="button" data-action="compact">Compact</button></div>'
    )


def toast_html(state: State) -> str:
    """The fallback notice toast."""
    notice = state.fallback_notice
    if notice is None:
        return ""
    return (
        '<div class="toast" role="status" data-toast="fallback"'
        f"{attr('data-reason', notice.reason)}>"
        f"{escape(notice.message)} "
        '<button type="button" data-action="dismiss-toast" aria-label="Dismiss">'
        "&times;</button></div>"
    )


def user_message_html(message: MessageState) -> str:
    """A user message."""
    return (
        f'<article class="message" data-role="user"{attr("data-message-id", message.id)}>'
        f"{escape(message.text)}</article>"
    )


def pending_answer_html(message: MessageState) -> str:
    """An answer whose run is not known (yet): an empty assistant message, never a user one."""
    return (
        f'<article class="message" data-role="assistant"{attr("data-message-id", message.id)}>'
        '<div class="message-text"></div></article>'
    )


def assistant_attributes(message: MessageState, run: RunState) -> tuple[tuple[str, str], ...]:
    """The ``data-*`` hooks of an assistant message (SPEC §8)."""
    return (
        ("data-message-id", message.id),
        ("data-run-id", run.run_id),
        ("data-status", run.status),
        ("data-attempt", str(run.attempt)),
    )


def answer_html(finished_html: str, open_html: str) -> str:
    """The inside of ``.message-text``: finished blocks (only ever appended to), the open one."""
    return f'<div class="md-done">{finished_html}</div><div class="md-open">{open_html}</div>'


def message_foot_html(message: MessageState, run: RunState) -> str:
    """Status, warnings, actions and the run details of an assistant message."""
    inner = status_html(run) + actions_html(message, run) + details_html(run)
    return f'<footer class="message-foot">{inner}</footer>'


def assistant_message_html(message: MessageState, run: RunState, answer_html: str) -> str:
    """An assistant message: the shown attempt's parts, status, warnings and actions."""
    attributes = "".join(attr(name, value) for name, value in assistant_attributes(message, run))
    head = f'<article class="message" data-role="assistant"{attributes}>'
    return head + parts_html(run, answer_html) + message_foot_html(message, run) + "</article>"


def parts_html(run: RunState, answer_html: str) -> str:
    """The parts in order, with the single ``.message-text`` where text first appeared."""
    pieces: list[str] = []
    text_placed = False
    last = len(run.parts) - 1
    for index, part in enumerate(run.parts):
        if isinstance(part, TextPart):
            if not text_placed:
                pieces.append(f'<div class="message-text">{answer_html}</div>')
                text_placed = True
            continue
        pieces.append(part_html(part, open_block=run.is_live and index == last))
    if not text_placed:
        # NOTE: the same element as with text, so the first delta patches it in place.
        pieces.append(f'<div class="message-text">{answer_html}</div>')
    return "".join(pieces)


def part_html(part: Part, *, open_block: bool = False) -> str:
    """One non-text part."""
    match part:
        case ThinkingPart():
            opened = " open" if open_block else ""
            return (
                f'<details class="thinking" data-part="thinking"{opened}>'
                "<summary>Thinking</summary>"
                f'<div class="thinking-text">{escape(part.text)}</div></details>'
            )
        case ToolCallPart():
            return tool_call_html(part)
        case ImagePart():
            return image_html(part)
        case ContinuationPart():
            word = "recovered" if part.recovered else "recovering"
            return (
                '<div class="marker" data-part="continuation"'
                f"{attr('data-recovered', str(part.recovered).lower())}"
                f"{attr('data-mode', part.mode)}>Continuation ({escape(part.mode)}): {word}</div>"
            )
        case SystemEventPart():
            return (
                f'<div class="marker" data-part="system-event"{attr("data-kind", part.kind)}>'
                f"{escape(part.message or part.kind)}</div>"
            )
    return ""  # pragma: no cover - TextPart is placed by parts_html


def _json_text(value: Any) -> str:
    try:
        return json.dumps(value, indent=2, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def tool_call_html(part: ToolCallPart) -> str:
    """A tool call: name, live arguments, status, result."""
    result = ""
    if part.status in ("done", "error"):
        kind = "tool-result error" if part.is_error else "tool-result"
        result = (
            '<details class="tool-result-box"><summary>Result</summary>'
            f'<pre class="{kind}">{escape(_json_text(part.result))}</pre></details>'
        )
    return (
        f'<div class="tool-call"{attr("data-tool-call-id", part.tool_call_id)}'
        f"{attr('data-tool-status', part.status)}>"
        f'<div class="tool-head"><span class="tool-name">{escape(part.tool_name or "tool")}</span>'
        f' <span class="tool-status">{escape(part.status)}</span></div>'
        f'<pre class="tool-args">{escape(_json_text(dict(part.arguments)))}</pre>{result}</div>'
    )


def image_html(part: ImagePart) -> str:
    """A generated image: placeholder, image, or failure."""
    head = (
        f'<figure class="image"{attr("data-image-id", part.image_id)}'
        f"{attr('data-image-status', part.status)}>"
    )
    if part.status == "completed" and part.url and is_safe_image(part.url):
        alt = part.alt or part.prompt
        body = f'<img{attr("src", part.url)}{attr("alt", alt)} loading="lazy">'
    elif part.status == "failed":
        body = (
            f'<div class="image-failed">Image failed: {escape(part.error or "unknown error")}</div>'
        )
    elif part.status == "completed":
        body = '<div class="image-failed">Image not shown: its address is missing or refused</div>'
    else:
        body = f'<div class="image-placeholder">Generating image… {escape(part.prompt)}</div>'
    return f"{head}{body}<figcaption>{escape(part.prompt)}</figcaption></figure>"


def status_html(run: RunState) -> str:
    """The status line: what happened to this answer, and the warnings."""
    items = [f'<span class="status-text">{escape(status_text(run))}</span>']
    if run.status == "completed" and run.stop_reason == "length":
        items.append('<span class="warning" data-warning="length">Cut at the length limit</span>')
    if run.status in ("cancelling", "cancelled") and run.cancel is not None:
        items.append(f'<span class="cancel-state"{attr("data-cancel", run.cancel)}></span>')
    if run.is_partial and not run.is_live and run.status != "cancelling":
        items.append('<span class="warning" data-warning="partial">Partial answer</span>')
    if run.status == "failed" and run.error is not None:
        items.append(
            f'<span class="warning error"{attr("data-error-code", run.error.code)}>'
            f"{escape(human_error(run.error))} <code>{escape(run.error.code)}</code></span>"
        )
    return f'<div class="status-line">{"".join(items)}</div>'


def status_text(run: RunState) -> str:
    """The words for a run's state."""
    match run.status:
        case "connecting":
            if run.filling_gap:
                return "Filling in a missing part of the answer…"
            return "Resuming…" if run.resuming else "Waiting for the answer…"
        case "receiving":
            return "Answering…"
        case "completed":
            return "Completed with a gap: part of the answer may be missing" if run.has_gap else ""
        case "cancelling":
            return "Stopping…"
        case "cancelled":
            if run.cancel == "unconfirmed":
                return "Stop requested — not confirmed by the server"
            if run.reason == "orphaned":
                return "Stopped by the server: nobody was reading the answer"
            return "Stopped"
        case "interrupted":
            return INTERRUPTED_TEXT.get(run.reason or "eof", "Interrupted.")
        case "failed":
            return "Failed"
    return ""  # pragma: no cover


def actions_html(message: MessageState, run: RunState) -> str:
    """Copy, resume, regenerate and the attempt switcher."""
    key = attr("data-message-id", message.id)
    copy_disabled = "" if run.status == "completed" else " disabled"
    buttons = [f'<button type="button" data-action="copy"{key}{copy_disabled}>Copy</button>']
    if run.can_resume:
        buttons.append(f'<button type="button" data-action="resume"{key}>Resume</button>')
    if run.can_regenerate:
        buttons.append(f'<button type="button" data-action="regenerate"{key}>Regenerate</button>')
    if len(message.run_ids) > 1:
        prev_off = " disabled" if message.shown == 0 else ""
        next_off = " disabled" if message.shown >= len(message.run_ids) - 1 else ""
        buttons.append(
            f'<button type="button" data-action="attempt-prev"{key}{prev_off}'
            ' aria-label="Previous attempt">&lsaquo;</button>'
            f'<span class="attempt-label">{message.shown + 1} / {len(message.run_ids)}</span>'
            f'<button type="button" data-action="attempt-next"{key}{next_off}'
            ' aria-label="Next attempt">&rsaquo;</button>'
        )
    return f'<div class="message-actions">{"".join(buttons)}</div>'


def details_html(run: RunState) -> str:
    """The run details panel (the trace)."""
    return (
        '<details class="run-details"><summary>Details</summary>'
        f"<pre>{escape(format_trace(run.trace))}</pre></details>"
    )
