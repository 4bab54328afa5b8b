"""HTML for the pieces of the page, from state (pure; every string is escaped here).

The DOM hooks of SPEC §8 are produced here and nowhere else. The answer text of a run is one
``.message-text`` holding the concatenation of all its text deltas, placed where the first text
part appeared; the other parts (thinking, tool calls, images, markers) keep their order around it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from html import escape
from typing import Final

from app.state.outbox import QueuedPrompt, waiting_in
from app.state.state import (
    ComposerFile,
    ConfirmingDelete,
    EditingTitle,
    ErrorInfo,
    MessageState,
    RunState,
    State,
)
from app.ui.answer_menu import answer_menu_html, continuation_words
from app.ui.answer_meta import answer_meta_html
from app.ui.chat_groups import period_label
from app.ui.chat_menu import (
    PINNED_LABEL,
    menu_button_html,
    pinned_first,
    snippet_html,
    title_html,
)
from app.ui.chat_title import hidden_title_html, rename_form_html
from app.ui.context_ring import context_html as context_html
from app.ui.error_words import SERVER_FAULT_WORDS, is_server_fault
from app.ui.export_menu import export_menu_html
from app.ui.image import image_html
from app.ui.markup import attr
from app.ui.partial_copy import COPY_PARTIAL_WORDS, partial_text
from app.ui.tool_card import TOOL_WORDS, tool_call_html, tool_status_words  # noqa: F401
from app.wire.api import AttachmentInfo, human_size
from app.wire.hooks import PageAction
from app.wire.parts import (
    ContinuationPart,
    ImagePart,
    Part,
    SystemEventPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
)

# NOTE: 24x24 stroke icons (currentColor); every icon button also carries an aria-label.
ICONS: Final = {
    "copy": '<rect x="9" y="9" width="11" height="11" rx="2"/><path d="M5 15V6a2 2 0 0 1 2-2h9"/>',
    "regenerate": '<path d="M20 12a8 8 0 1 1-2.34-5.66"/><path d="M20 4v5h-5"/>',
    "resume": '<path d="M8 5l11 7-11 7z"/>',
    "edit": '<path d="M4 20h4L19 9l-4-4L4 16z"/><path d="M13 7l4 4"/>',
    "delete": '<path d="M4 7h16M10 11v6M14 11v6M9 7V4h6v3M6 7l1 13h10l1-13"/>',
    "rename": '<path d="M4 20h4L19 9l-4-4L4 16z"/>',
    "prev": '<path d="M15 6l-6 6 6 6"/>',
    "next": '<path d="M9 6l6 6-6 6"/>',
    "close": '<path d="M6 6l12 12M18 6L6 18"/>',
    "file": '<path d="M6 3h8l4 4v14H6z"/><path d="M14 3v4h4"/>',
}


def icon(name: str) -> str:
    """An inline SVG icon, hidden from assistive technology (its button has the words)."""
    return f'<svg class="icon" aria-hidden="true" viewBox="0 0 24 24">{ICONS[name]}</svg>'


def icon_button(
    action: PageAction, label: str, name: str, extra: str = "", *, text: str = ""
) -> str:
    """A button with an icon, an accessible name and a tooltip (and visible ``text`` if any)."""
    words = f"<span>{escape(text)}</span>" if text else ""
    return (
        f'<button type="button" class="icon-button"{attr("data-action", action)}'
        f"{attr('aria-label', label)}{attr('title', label)}{extra}>{icon(name)}{words}</button>"
    )


ERROR_TEXT = {
    "invalid_body": "The request was not understood by the server.",
    "chat_not_found": "This chat no longer exists.",
    "empty_prompt": "Write a message first.",
    "attachment_unavailable": "An attachment is no longer available; attach it again.",
    "model_not_found": "That model does not exist.",
    "model_unavailable": "The model is unavailable right now.",
    "unauthenticated": "Your session expired; reload the page.",
    "network_error": "The network failed; check your connection.",
    "attachment_refused": "Nothing was sent: remove the file that cannot go with it.",
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
    "invalid_header": "The sign-in proxy in front of the server sent an unusable request.",
    "too_many_attempts": "Too many wrong passwords; wait before trying again.",
    "host_refused": "The server does not answer to the address this page used.",
    "too_many_readers": "This answer is open in too many places; close some and try again.",
    "storage_unavailable": "The server cannot save right now (its storage failed); "
    "nothing was lost, try again in a moment.",
    "origin_refused": "This page may not talk to the server from where it is served.",
    "body_too_large": "The request is too large.",
    "attachment_empty": "An attached file is empty.",
    "attachment_too_large": "An attached file is too large.",
    "attachment_type_mismatch": "An attached file's content does not match its type.",
    "attachment_type_unsupported": "That kind of file cannot be attached.",
    "chat_error": "Something went wrong with this answer.",
    "conflict": "Another request changed this chat at the same moment; send again.",
    "decision_taken": "That action was already decided elsewhere; the first decision stands.",
    "tool_call_not_found": "That action no longer waits for a decision.",
    "result_taken": "That code's result was already given from elsewhere; the first one stands.",
    "events_expired": "The rest of this answer is no longer kept on the server; regenerate it.",
    "http_error": "The server answered with an error.",
    "method_not_allowed": "The server does not accept that request.",
    "no_worker": "No server process is answering right now; try again in a moment.",
    "not_found": "The server does not know that address.",
    "provider_error": "The model reported an error.",
    "run_exists": "That answer was already started.",
    "run_not_found": "That answer no longer exists on the server.",
    "stream_error": "The answer ended with an error.",
    "unsupported_media_type": "The request was sent in a form the server does not accept.",
    "worker_lost": "The server process writing this answer stopped; regenerate it.",
    "invalid_import": "That file is not a chat export; nothing was imported.",
    "unknown_format": "The server cannot export a chat in that format.",
}
"""Words for every code of the contract (:mod:`app.wire.codes`; a test holds them equal)."""
DETAILED: Final = frozenset(
    {
        "attachment_empty",
        "attachment_refused",
        "attachment_too_large",
        "attachment_type_mismatch",
        "attachment_type_unsupported",
        "http_error",
        "invalid_body",
        "invalid_import",
        "provider_error",
        "provider_refused",
        "stream_error",
    }
)
"""Codes whose server message says the specifics (which file, which field, the provider's
own words): shown after the code's words. (``generation_failed`` carries a broken generator's
exception text: not for users.)"""
INTERRUPTED_TEXT = {
    "eof": "The stream ended before the answer was complete.",
    "network": "The connection broke before the answer was complete.",
    "offline": "You are offline. The answer resumes when the connection returns.",
    "ended": "Nothing more of this answer exists on the server; regenerate it.",
    "gap": "Part of the answer went missing on the way and could not be recovered.",
    "expired": "The rest of this answer is no longer available; regenerate it.",
    "resume_failed": "Resuming failed.",
    "detached": "Re-attaching to the answer…",
    "server_restarted": "The server restarted before the answer was complete.",
    "server_shutdown": "The server stopped before the answer was complete.",
}


SUGGESTIONS: Final = (
    ("Explain", "Explain how a river forms, with a table of the five longest rivers"),
    ("Code", "Write a Python function that checks whether a word is a palindrome"),
    ("Math", "Show the quadratic formula and solve x^2 - 5x + 6 = 0"),
    ("Image", "Draw a river at dawn, winding through a green valley"),
)


def empty_state_html() -> str:
    """The empty chat: what Riacho does, and a few prompts to start with."""
    buttons = "".join(
        f'<li><button type="button" class="suggestion" data-action="suggest"'
        f'{attr("data-prompt", prompt)}><span class="suggestion-kind">{escape(kind)}</span>'
        f"<span>{escape(prompt)}</span></button></li>"
        for kind, prompt in SUGGESTIONS
    )
    return (
        '<div class="empty-state"><h2>What shall we talk about?</h2>'
        "<p>Answers stream in as they are written; you can stop, resume, regenerate or edit "
        "them, and nothing that arrived is ever lost.</p>"
        f'<ul class="suggestions" aria-label="Suggestions">{buttons}</ul></div>'
    )


def human_error(error: ErrorInfo, *, with_wait: bool = True) -> str:
    """The sentence shown for an error code: its words (and the server's specifics, for some);
    the server's message for a code outside the contract; how long to wait, if said (unless
    ``with_wait`` is off: a countdown says it); a server fault in words of its own."""
    if is_server_fault(error, ERROR_TEXT):
        return SERVER_FAULT_WORDS
    text = ERROR_TEXT.get(error.code, error.message or "Something went wrong.")
    if error.code in DETAILED and error.message and error.message not in text:
        text = f"{text} {error.message.rstrip('.')}."
    if error.retry_after and with_wait:
        text += f" Try again in {error.retry_after:g} s."
    return text


RETRYABLE: Final = frozenset(
    {"model_unavailable", "network_error", "server_stopping", "http_error"}
)
"""Errors before a stream that may pass by themselves: their banner offers Retry."""


def retry_html(error: ErrorInfo) -> str:
    """Retry (sends the composer's prompt again), after a countdown when the server said how
    long to wait (``data-until``: the page counts it down, then enables Retry)."""
    if error.retry_at is None or not error.retry_after:
        if (
            error.code not in RETRYABLE
            and not error.retry_after
            and not is_server_fault(error, ERROR_TEXT)
        ):
            return ""
        return '<button type="button" data-action="retry">Retry</button>'
    wait = math.ceil(error.retry_after)
    return (
        f'<span class="retry-in"{attr("data-until", f"{error.retry_at:.0f}")}>'
        f"Try again in {wait} s.</span>"
        '<button type="button" data-action="retry" disabled>Retry</button>'
    )


EMPTY_STATE_HTML: Final = empty_state_html()


OFFLINE_WORDS = (
    "Offline: the server cannot be reached. Your chats as last seen on this device are shown;"
    " new answers wait for the connection."
)


def offline_html(state: State) -> str:
    """The notice shown while the server is unreachable, or nothing."""
    if not state.offline:
        return ""
    return f'<div class="offline" data-offline role="status"><span>{OFFLINE_WORDS}</span></div>'


def banner_html(state: State) -> str:
    """The offline notice and the pre-stream / request error banner, or nothing."""
    return offline_html(state) + _error_html(state)


def _error_html(state: State) -> str:
    error = state.last_error
    if error is None:
        return ""
    words = human_error(error, with_wait=error.retry_at is None)
    return (
        f'<div class="banner" role="alert"{attr("data-error-code", error.code)}>'
        f"<span>{escape(words)}</span>{retry_html(error)}"
        '<button type="button" data-action="dismiss-error">Dismiss</button></div>'
    )


def chat_head_html(state: State) -> str:
    """The top bar's chat title with Rename and Delete (for a chat the server has), the title
    as a text field while it is renamed, or the delete confirmation."""
    chat = state.active_chat
    title = (chat.title if chat else "") or "New chat"
    if chat is None or chat.chat_id not in state.chat_order:
        return f'<h1 class="chat-title">{escape(title)}</h1>'
    if isinstance(state.editing, EditingTitle):
        return hidden_title_html(title) + rename_form_html(title, refused=state.editing.refused)
    if isinstance(state.editing, ConfirmingDelete):
        return hidden_title_html(title) + (
            f'<p class="confirm" role="alert">Delete “{escape(title)}” and all its messages?</p>'
            '<button type="button" class="danger" data-action="confirm-delete">Delete</button>'
            '<button type="button" data-action="cancel-delete">Keep</button>'
        )
    return (
        f'<h1 class="chat-title">{escape(title)}</h1>'
        + icon_button("rename-chat", "Rename chat", "rename", text="Rename")
        + icon_button("delete-chat", "Delete chat", "delete", text="Delete")
        + export_menu_html()
    )


def chat_list_html(state: State, now: datetime | None = None) -> str:
    """The chat list grouped by period, newest first (app/ui/chat_groups.py), or the search's
    results; the active chat carries ``aria-current="true"``."""
    search = state.search
    if search is not None:
        if search.chat_ids is None:
            return '<p class="list-note">Searching…</p>'
        if not search.chat_ids:
            return f'<p class="list-note">No chat contains “{escape(search.query)}”.</p>'
        return _chat_group("Results", search.chat_ids, state)
    if not state.chat_order:
        return '<p class="list-note">Your chats will be listed here.</p>'
    moment = now or datetime.now().astimezone()
    pinned, others = pinned_first(state)
    groups: dict[str, list[str]] = {PINNED_LABEL: pinned} if pinned else {}
    for chat_id in others:
        chat = state.chats.get(chat_id)
        updated = None if chat is None else chat.updated_at
        groups.setdefault(period_label(updated, moment), []).append(chat_id)
    return "".join(_chat_group(label, ids, state) for label, ids in groups.items())


def _chat_group(label: str, chat_ids: tuple[str, ...] | list[str], state: State) -> str:
    items = []
    for chat_id in chat_ids:
        chat = state.chats.get(chat_id)
        title = (chat.title if chat else "") or "New chat"
        current = attr("aria-current", "true") if chat_id == state.active_chat_id else ""
        live = (
            '<span class="live-dot" role="img" aria-label="answering"></span>'
            if chat is not None and chat.is_generating
            else ""
        )
        items.append(
            f'<li><button type="button" class="chat-item"{attr("data-chat-id", chat_id)}{current}>'
            f'<span class="chat-item-title">{title_html(state, title)}</span>'
            f"{snippet_html(state, chat_id)}{live}</button>"
            f"{menu_button_html(chat_id, title, pinned=chat is not None and chat.pinned)}</li>"
        )
    return (
        f'<section class="chat-group"><h2 class="chat-group-label">{escape(label)}</h2>'
        f"<ul>{''.join(items)}</ul></section>"
    )


def toast_html(state: State) -> str:
    """The fallback notice toast, in its own chat only."""
    notice = state.fallback_notice
    if notice is None or notice.chat_id != state.active_chat_id:
        return ""
    return (
        '<div class="toast" role="note" data-toast="fallback"'
        f"{attr('data-reason', notice.reason)}>"
        f"{escape(notice.message)} "
        '<button type="button" data-action="dismiss-toast" aria-label="Dismiss">'
        "&times;</button></div>"
    )


@dataclass(frozen=True, slots=True)
class PromptView:
    """A user message as shown: its branch position, and whether it is being edited."""

    message: MessageState
    branch: tuple[int, int] = (0, 1)  # (index, count) among the prompts after the same answer
    editing: bool = False
    can_edit: bool = True  # not while the chat is answering


AttachmentSrc = Callable[[str], str]
"""The URL a sent attachment's bytes are read from (for image previews)."""


QUEUED_WORDS = "Waiting for the connection: it is sent once, as soon as the server answers"
SENDING_WORDS = "Sending…"


def queued_html(state: State) -> str:
    """The active chat's prompts sent offline, in the order they will go, each saying that it
    waits, with Edit (back to the composer) and Remove while it does."""
    return "".join(_queued_prompt(item) for item in waiting_in(state.outbox, state.active_chat_id))


def _queued_prompt(item: QueuedPrompt) -> str:
    key = attr("data-message-id", item.run_id)
    if item.sending:
        status, actions = SENDING_WORDS, ""
    else:
        status = QUEUED_WORDS
        actions = (
            '<div class="queued-actions">'
            f'<button type="button" data-action="edit-queued"{key}>Edit</button>'
            f'<button type="button" data-action="remove-queued"{key}>Remove</button></div>'
        )
    return (
        f'<article class="message queued" data-queued{attr("data-run-id", item.run_id)}>'
        f'<div class="bubble">{escape(item.prompt)}</div>'
        f'<p class="queued-status">{status}</p>{actions}</article>'
    )


def user_message_html(view: PromptView | MessageState, src: AttachmentSrc | None = None) -> str:
    """A user message: the prompt (or its edit form), its attachments, Edit and the branch
    switcher."""
    if isinstance(view, MessageState):
        view = PromptView(view)
    message = view.message
    key = attr("data-message-id", message.id)
    if view.editing:
        body = (
            f'<form class="edit-form" name="edit-prompt"{key}>'
            '<textarea name="edit-prompt" rows="3" aria-label="Edit your message">'
            f"{escape(message.text)}</textarea>"
            '<div class="edit-actions"><button type="button" data-action="cancel-edit">Cancel'
            f'</button><button type="submit" data-action="save-edit"{key}>Send</button></div>'
            "</form>"
        )
    else:
        body = f'<div class="bubble">{escape(message.text)}</div>'
    files = sent_attachments_html(message.attachments, src) if message.attachments else ""
    return (
        f'<article class="message" data-role="user"{key}>{body}{files}'
        f"{'' if view.editing else _prompt_actions(view)}</article>"
    )


def _prompt_actions(view: PromptView) -> str:
    key = attr("data-message-id", view.message.id)
    disabled = "" if view.can_edit else " disabled"
    buttons = [icon_button("edit", "Edit message", "edit", key + disabled)]
    index, count = view.branch
    if count > 1:
        buttons.append(_switcher("branch", key, index, count))
    return f'<div class="message-actions prompt-actions">{"".join(buttons)}</div>'


SWITCHES: dict[str, tuple[PageAction, PageAction]] = {
    "attempt": ("attempt-prev", "attempt-next"),
    "branch": ("branch-prev", "branch-next"),
}


def _switcher(noun: str, key: str, index: int, count: int) -> str:
    """Previous, "n / m", next: the switcher of attempts and of branches."""
    prev_off = " disabled" if index == 0 else ""
    next_off = " disabled" if index >= count - 1 else ""
    previous, following = SWITCHES[noun]
    return (
        '<span class="switcher">'
        + icon_button(previous, f"Previous {noun}", "prev", key + prev_off)
        + f'<span class="switcher-label">{index + 1} / {count}</span>'
        + icon_button(following, f"Next {noun}", "next", key + next_off)
        + "</span>"
    )


def sent_attachments_html(
    attachments: tuple[AttachmentInfo, ...], src: AttachmentSrc | None
) -> str:
    """The files sent with a prompt: images previewed, every file named with its size."""
    items = []
    for item in attachments:
        preview = (
            f'<img class="chip-preview"{attr("src", src(item.attachment_id))}'
            ' alt="" loading="lazy">'
            if src is not None and item.mime_type.startswith("image/")
            else icon("file")
        )
        items.append(
            f'<li class="chip">{preview}<span class="chip-name">{escape(item.name)}</span>'
            f'<span class="chip-size">{escape(human_size(item.size))}</span></li>'
        )
    return f'<ul class="sent-attachments" aria-label="Attachments">{"".join(items)}</ul>'


def composer_files_html(files: tuple[ComposerFile, ...]) -> str:
    """The composer's attachment chips: name, size, progress or error, and Remove."""
    return "".join(_composer_chip(item) for item in files)


def _composer_chip(item: ComposerFile) -> str:
    name = escape(item.name)
    preview = (
        f'<img class="chip-preview"{attr("src", item.preview_url)} alt="">'
        if item.preview_url and is_safe_preview(item.preview_url) and item.error is None
        else icon("file")  # NOTE: a refused file's bytes may be no image: never a broken one
    )
    if item.error is not None:
        state, note = "error", f'<span class="chip-error">{escape(item.error)}</span>'
    elif item.progress is not None:
        percent = round(min(max(item.progress, 0.0), 1.0) * 100)
        state = "uploading"
        note = (
            f'<progress max="100"{attr("value", percent)}'
            f"{attr('aria-label', f'Uploading {item.name}')}></progress>"
        )
    else:
        state, note = "ready", ""
    remove = icon_button(
        "remove-attachment", f"Remove {item.name}", "close", attr("data-file-key", item.key)
    )
    return (
        f'<li class="chip"{attr("data-file-state", state)}>{preview}'
        f'<span class="chip-name">{name}</span>'
        f'<span class="chip-size">{escape(human_size(item.size))}</span>{note}{remove}</li>'
    )


def is_safe_preview(url: str) -> bool:
    """A local preview is an object URL the page made (never a remote address)."""
    return url.startswith("blob:")


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
    inner = (
        status_html(run) + actions_html(message, run) + answer_meta_html(run) + details_html(run)
    )
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
        pieces.append(
            part_html(part, open_block=run.is_live and index == last, run_live=run.is_live)
        )
    if not text_placed:
        # NOTE: the same element as with text, so the first delta patches it in place.
        pieces.append(f'<div class="message-text">{answer_html}</div>')
    return "".join(pieces)


def part_html(part: Part, *, open_block: bool = False, run_live: bool = True) -> str:
    """One non-text part (``open_block``: it is the last part of a live run)."""
    match part:
        case ThinkingPart():
            opened = " open" if open_block else ""
            return (
                f'<details class="thinking" data-part="thinking"{opened}>'
                f"<summary>{escape(thinking_label(part, still_open=open_block))}</summary>"
                f'<div class="thinking-text">{escape(part.text)}</div></details>'
            )
        case ToolCallPart():
            return tool_call_html(part, run_live=run_live)
        case ImagePart():
            return image_html(part, run_live=run_live)
        case ContinuationPart():
            return (
                '<div class="marker" data-part="continuation"'
                f"{attr('data-recovered', str(part.recovered).lower())}"
                f"{attr('data-mode', part.mode)}>{escape(continuation_words(part))}</div>"
            )
        case SystemEventPart():
            return (
                f'<div class="marker" data-part="system-event"{attr("data-kind", part.kind)}>'
                f"{escape(part.message or part.kind)}</div>"
            )
    return ""  # pragma: no cover - TextPart is placed by parts_html


def thinking_label(part: ThinkingPart, *, still_open: bool) -> str:
    """ "Thinking…" while it streams, then "Thought for 3 s" (the same after a reload: the
    duration is folded from the events), or "Thoughts" when the server sent no times."""
    if still_open:
        return "Thinking…"
    duration = part.duration_ms
    if duration is None:
        return "Thoughts"
    seconds = round(duration / 1000)
    return "Thought for less than a second" if seconds < 1 else f"Thought for {seconds} s"


def status_html(run: RunState) -> str:
    """The status line: what happened to this answer, and the warnings."""
    cancel = (
        attr("data-cancel", run.cancel)
        if run.status in ("cancelling", "cancelled") and run.cancel is not None
        else ""
    )
    items = [f'<span class="status-text"{cancel}>{escape(status_text(run))}</span>']
    if run.status == "connecting":
        # NOTE: the page counts the seconds (it knows the time): a slow answer shows it waits.
        since = run.trace.resumes[-1].at if run.trace.resumes else run.trace.request_start
        if since is not None:
            items.append(f'<span class="elapsed"{attr("data-since", f"{since:.0f}")}></span>')
    if run.status == "completed" and run.stop_reason == "length":
        items.append('<span class="warning" data-warning="length">Cut at the length limit</span>')
    if run.is_partial and not run.is_live and run.status != "cancelling" and run.text.strip():
        items.append('<span class="warning" data-warning="partial">Partial answer</span>')
    if run.status == "failed" and run.error is not None:
        items.append(
            f'<span class="warning error"{attr("data-error-code", run.error.code)}>'
            f"{escape(human_error(run.error))}</span>"
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
    copy_off = "" if run.status == "completed" else " disabled"
    buttons = [icon_button("copy", "Copy answer", "copy", key + copy_off)]
    if partial_text(run) is not None:
        words = COPY_PARTIAL_WORDS
        buttons.append(icon_button("copy-partial", words, "copy", key, text=words))
    if run.can_resume:
        buttons.append(icon_button("resume", "Resume answer", "resume", key, text="Resume"))
    if run.can_regenerate:
        buttons.append(icon_button("regenerate", "Regenerate answer", "regenerate", key))
    if len(message.run_ids) > 1:
        buttons.append(_switcher("attempt", key, message.shown, len(message.run_ids)))
    return f'<div class="message-actions">{"".join(buttons)}</div>'


def announcement(run: RunState) -> str:
    """The one polite announcement when an answer settles (the ``[data-announce]`` region)."""
    match run.status:
        case "completed":
            return "Answer complete, with a gap" if run.has_gap else "Answer complete"
        case "cancelled":
            return "Stopped" if run.cancel != "unconfirmed" else "Stopped — not confirmed"
        case "interrupted":
            return f"Interrupted: {status_text(run)}"
        case "failed":
            why = human_error(run.error) if run.error is not None else "something went wrong"
            return f"Failed: {why}"
    return ""


def details_html(run: RunState) -> str:
    """The run details: the answer's menu, in words (app/ui/answer_menu.py)."""
    return answer_menu_html(run)
