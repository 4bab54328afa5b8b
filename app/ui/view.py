"""The view: renders state into the page through a tiny DOM interface (pure, testable).

State is immutable, so "did this message change?" is an identity check: a message is
re-rendered only when its ``MessageState`` or shown ``RunState`` object is new. Answer text is
rendered linearly: finished markdown blocks are rendered once and kept; only the open last
block is rendered again as it grows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from app.state.state import ChatState, MessageState, RunState, State, settled_runs
from app.ui.markdown import render_markdown, split_blocks, with_cursor
from app.ui.render import (
    AttachmentSrc,
    PromptView,
    announcement,
    answer_html,
    assistant_attributes,
    assistant_message_html,
    banner_html,
    chat_head_html,
    chat_list_html,
    context_html,
    message_foot_html,
    parts_html,
    pending_answer_html,
    toast_html,
    user_message_html,
)

SLOTS = ("#chat-head", "#chat-list", "#banner-slot", "#context-slot", "#toasts")


@dataclass(frozen=True, slots=True)
class Controls:
    """The composer's enabled state."""

    can_send: bool
    can_stop: bool


@dataclass(frozen=True, slots=True)
class MessagePatch:
    """A streaming update of one assistant message that keeps its element and the finished text.

    ``attributes`` and ``foot_html`` are ``None`` when unchanged; ``append_html`` goes after the
    finished blocks; ``open_html`` (``None`` when unchanged) replaces the open block.
    """

    attributes: tuple[tuple[str, str], ...] | None
    foot_html: str | None
    append_html: str
    open_html: str | None


class Dom(Protocol):
    """What the view needs from the page (the browser adapter implements it)."""

    def set_html(self, slot: str, html: str) -> None:
        """Replace the inner HTML of ``slot`` (a selector from :data:`SLOTS`)."""

    def sync_messages(self, order: Sequence[str], changed: Mapping[str, str]) -> None:
        """Make the message list hold ``order`` (keys), replacing the ``changed`` ones' HTML."""

    def patch_message(self, key: str, patch: MessagePatch) -> None:
        """Apply a streaming update to the message ``key`` (already on the page)."""

    def set_controls(self, controls: Controls) -> None:
        """Enable or disable Send and Stop."""

    def set_draft(self, text: str) -> None:
        """Put ``text`` back into the composer."""

    def announce(self, text: str) -> None:
        """Say ``text`` in the one polite live region (``[data-announce]``)."""


@dataclass(slots=True)
class _Rendered:
    finished: str
    html: str
    final: bool = False  # rendered as a settled answer: its last block counted as finished


class AnswerRenderer:
    """Markdown for a run's growing answer, rendering each finished block once."""

    def __init__(self) -> None:
        self._cache: dict[str, _Rendered] = {}

    def html(self, run_id: str, text: str, *, final: bool = False) -> str:
        """The whole answer's HTML."""
        finished, open_html = self.render(run_id, text, final=final)
        return finished + open_html

    def render(self, run_id: str, text: str, *, final: bool = False) -> tuple[str, str]:
        """(HTML of the finished blocks, HTML of the open block); the first only ever grows.
        ``final``: the answer will not grow (its run settled), so every block is finished."""
        cached = self._cache.get(run_id)
        if cached is None or not text.startswith(cached.finished) or (cached.final and not final):
            # NOTE: text never shrinks in a run; this is a reset (or a settled answer is live
            # again, resumed: its last block may still grow, so it was not finished after all).
            cached = _Rendered("", "")
        # NOTE: only the text after the last finished block is parsed again: it starts at a
        # top-level block boundary, so its block structure is the same as in the whole text.
        rest = text[len(cached.finished) :]
        added, open_block = (rest, "") if final else split_blocks(rest)
        if added:
            cached = _Rendered(cached.finished + added, cached.html + render_markdown(added))
        cached.final = final
        self._cache[run_id] = cached
        if not open_block:
            return cached.html, ""
        return cached.html, render_markdown(open_block, finished=False)


@dataclass(frozen=True, slots=True)
class _Shown:
    """What the page holds for one message, to tell what a new state changes."""

    message: MessageState | PromptView
    run: RunState | None
    skeleton: str = ""  # the parts without the answer text: a change here replaces the element
    attributes: tuple[tuple[str, str], ...] = ()
    foot: str = ""
    finished: str = ""
    open: str = ""

    def is_for(self, message: MessageState | PromptView, run: RunState | None) -> bool:
        # NOTE: identity, not equality: state is immutable, and deep equality would compare
        # the whole answer text of a run on every delta (a prompt's small view is compared).
        if isinstance(message, PromptView):
            return self.message == message
        return self.message is message and self.run is run


class View:
    """Renders :class:`State` into a :class:`Dom`, touching only what changed."""

    def __init__(
        self,
        dom: Dom,
        *,
        now: Callable[[], datetime] | None = None,
        attachment_src: AttachmentSrc | None = None,
    ) -> None:
        self._dom = dom
        self._now = now or (lambda: datetime.now().astimezone())
        self._attachment_src = attachment_src
        self._previous: State | None = None
        self._answers = AnswerRenderer()
        self._slots: dict[str, str] = {}
        self._shown: dict[str, _Shown] = {}
        self._chat_id: str | None = None
        self._order: list[str] | None = None
        self._controls: Controls | None = None
        self._draft = ""

    def render(self, state: State) -> None:
        """Bring the page in line with ``state``."""
        chat = state.active_chat
        self._set_slot("#chat-head", chat_head_html(state))
        self._set_slot("#chat-list", chat_list_html(state, self._now()))
        self._set_slot("#banner-slot", banner_html(state))
        self._set_slot("#context-slot", context_html(state.context_info))
        self._set_slot("#toasts", toast_html(state))
        self._render_messages(state, chat)
        self._render_controls(state)
        self._announce(state)

    def _announce(self, state: State) -> None:
        """One polite announcement when an answer of the chat on screen settles."""
        previous, self._previous = self._previous, state
        if previous is None or state.active_chat_id != previous.active_chat_id:
            return
        for run in settled_runs(state, previous):
            if run.chat_id == state.active_chat_id and (words := announcement(run)):
                self._dom.announce(words)

    def _set_slot(self, slot: str, html: str) -> None:
        if self._slots.get(slot) != html:
            self._slots[slot] = html
            self._dom.set_html(slot, html)

    def _render_messages(self, state: State, chat: ChatState | None) -> None:
        if state.active_chat_id != self._chat_id:
            self._shown.clear()
            self._chat_id = state.active_chat_id
        messages = chat.visible() if chat is not None else ()
        changed: dict[str, str] = {}
        patches: dict[str, MessagePatch] = {}
        for message in messages:
            run = chat.shown_run(message) if chat is not None else None
            seen = self._shown.get(message.id)
            item: MessageState | PromptView = message
            if message.role == "user" and chat is not None:
                item = PromptView(
                    message,
                    chat.branch_of(message),
                    state.editing.message_id == message.id,
                    not chat.is_generating,
                )
            if seen is not None and seen.is_for(item, run):
                continue
            shown, html, patch = self._update(seen, item, run)
            self._shown[message.id] = shown
            if html is not None:
                changed[message.id] = html
            elif patch is not None:
                patches[message.id] = patch
        order = [m.id for m in messages]
        for key in set(self._shown) - set(order):
            del self._shown[key]  # NOTE: off the page now (another branch): rendered anew later
        if changed or order != self._order:
            self._order = order
            self._dom.sync_messages(order, changed)
        for key, patch in patches.items():
            self._dom.patch_message(key, patch)

    def _update(
        self, seen: _Shown | None, message: MessageState | PromptView, run: RunState | None
    ) -> tuple[_Shown, str | None, MessagePatch | None]:
        """What to show now, and either the message's whole HTML or a patch (or neither)."""
        if isinstance(message, PromptView):
            return _Shown(message, run), user_message_html(message, self._attachment_src), None
        if run is None:
            return _Shown(message, run), pending_answer_html(message), None
        finished, open_html = self._answers.render(run.run_id, run.text, final=not run.is_live)
        if run.is_live:
            open_html = with_cursor(open_html)
        shown = _Shown(
            message,
            run,
            parts_html(run, ""),
            assistant_attributes(message, run),
            message_foot_html(message, run),
            finished,
            open_html,
        )
        if not _can_patch(seen, shown):
            html = assistant_message_html(message, run, answer_html(finished, open_html))
            return shown, html, None
        assert seen is not None
        return shown, None, _patch(seen, shown)

    def _render_controls(self, state: State) -> None:
        controls = Controls(can_send=not state.is_generating, can_stop=state.is_generating)
        if controls != self._controls:
            self._controls = controls
            self._dom.set_controls(controls)
        if state.composer_draft and state.composer_draft != self._draft:
            self._dom.set_draft(state.composer_draft)
        self._draft = state.composer_draft


def _can_patch(seen: _Shown | None, shown: _Shown) -> bool:
    """The element on the page can be updated in place (same structure, text only grew)."""
    return (
        seen is not None
        and seen.run is not None
        and shown.run is not None
        and seen.run.run_id == shown.run.run_id
        and seen.skeleton == shown.skeleton
        and shown.finished.startswith(seen.finished)
    )


def _patch(seen: _Shown, shown: _Shown) -> MessagePatch | None:
    """The smallest update from ``seen`` to ``shown``; ``None`` when nothing visible changed."""
    patch = MessagePatch(
        attributes=shown.attributes if shown.attributes != seen.attributes else None,
        foot_html=shown.foot if shown.foot != seen.foot else None,
        append_html=shown.finished[len(seen.finished) :],
        open_html=shown.open if shown.open != seen.open else None,
    )
    if patch == MessagePatch(None, None, "", None):
        return None
    return patch
