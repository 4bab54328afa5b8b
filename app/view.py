"""The view: renders state into the page through a tiny DOM interface (pure, testable).

State is immutable, so "did this message change?" is an identity check: a message is
re-rendered only when its ``MessageState`` or shown ``RunState`` object is new. Answer text is
rendered linearly: finished markdown blocks are rendered once and kept; only the open last
block is rendered again as it grows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from app.markdown import render_markdown, split_blocks
from app.render import (
    assistant_message_html,
    banner_html,
    chat_list_html,
    chat_title_html,
    context_html,
    pending_answer_html,
    toast_html,
    user_message_html,
)
from app.state import ChatState, MessageState, RunState, State

SLOTS = ("#chat-title", "#chat-list", "#banner-slot", "#context-slot", "#toasts")


@dataclass(frozen=True, slots=True)
class Controls:
    """The composer's enabled state."""

    can_send: bool
    can_stop: bool


class Dom(Protocol):
    """What the view needs from the page (the browser adapter implements it)."""

    def set_html(self, slot: str, html: str) -> None:
        """Replace the inner HTML of ``slot`` (a selector from :data:`SLOTS`)."""

    def sync_messages(self, order: Sequence[str], changed: Mapping[str, str]) -> None:
        """Make the message list hold ``order`` (keys), replacing the ``changed`` ones' HTML."""

    def set_controls(self, controls: Controls) -> None:
        """Enable or disable Send and Stop."""

    def set_draft(self, text: str) -> None:
        """Put ``text`` back into the composer."""


@dataclass(slots=True)
class _Rendered:
    finished: str
    html: str


class AnswerRenderer:
    """Markdown for a run's growing answer, rendering each finished block once."""

    def __init__(self) -> None:
        self._cache: dict[str, _Rendered] = {}

    def html(self, run_id: str, text: str) -> str:
        cached = self._cache.get(run_id)
        if cached is None or not text.startswith(cached.finished):
            cached = _Rendered("", "")  # NOTE: text never shrinks in a run; this is a reset
        # NOTE: only the text after the last finished block is parsed again: it starts at a
        # top-level block boundary, so its block structure is the same as in the whole text.
        added, open_block = split_blocks(text[len(cached.finished) :])
        if added:
            cached = _Rendered(cached.finished + added, cached.html + render_markdown(added))
        self._cache[run_id] = cached
        return cached.html + render_markdown(open_block) if open_block else cached.html


def _same(seen: tuple[object, object] | None, version: tuple[object, object]) -> bool:
    # NOTE: identity, not equality: state is immutable, and deep equality would compare the
    # whole answer text of a run on every delta.
    return seen is not None and seen[0] is version[0] and seen[1] is version[1]


class View:
    """Renders :class:`State` into a :class:`Dom`, touching only what changed."""

    def __init__(self, dom: Dom) -> None:
        self._dom = dom
        self._answers = AnswerRenderer()
        self._slots: dict[str, str] = {}
        self._messages: dict[str, tuple[object, object]] = {}
        self._chat_id: str | None = None
        self._order: list[str] | None = None
        self._controls: Controls | None = None
        self._draft = ""

    def render(self, state: State) -> None:
        """Bring the page in line with ``state``."""
        chat = state.active_chat
        self._set_slot("#chat-title", chat_title_html(chat))
        self._set_slot("#chat-list", chat_list_html(state))
        self._set_slot("#banner-slot", banner_html(state))
        self._set_slot("#context-slot", context_html(state.context_info))
        self._set_slot("#toasts", toast_html(state))
        self._render_messages(state.active_chat_id, chat)
        self._render_controls(state)

    def _set_slot(self, slot: str, html: str) -> None:
        if self._slots.get(slot) != html:
            self._slots[slot] = html
            self._dom.set_html(slot, html)

    def _render_messages(self, chat_id: str | None, chat: ChatState | None) -> None:
        if chat_id != self._chat_id:
            self._messages.clear()
            self._chat_id = chat_id
        messages = chat.messages if chat is not None else ()
        changed: dict[str, str] = {}
        for message in messages:
            run = chat.shown_run(message) if chat is not None else None
            version = (message, run)
            if not _same(self._messages.get(message.id), version):
                self._messages[message.id] = version
                changed[message.id] = self._message_html(chat, message, run)
        order = [m.id for m in messages]
        if changed or order != self._order:
            self._order = order
            self._dom.sync_messages(order, changed)

    def _message_html(
        self, chat: ChatState | None, message: MessageState, run: RunState | None
    ) -> str:
        if message.role == "user":
            return user_message_html(message)
        if run is None or chat is None:
            return pending_answer_html(message)
        return assistant_message_html(chat, message, run, self._answers.html(run.run_id, run.text))

    def _render_controls(self, state: State) -> None:
        controls = Controls(can_send=not state.is_generating, can_stop=state.is_generating)
        if controls != self._controls:
            self._controls = controls
            self._dom.set_controls(controls)
        if state.composer_draft and state.composer_draft != self._draft:
            self._dom.set_draft(state.composer_draft)
        self._draft = state.composer_draft
