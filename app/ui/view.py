"""The view: renders state into the page through a tiny DOM interface (pure, testable).

State is immutable, so "did this message change?" is an identity check: a message is
re-rendered only when its ``MessageState`` or shown ``RunState`` object is new. Answer text is
rendered linearly: finished markdown blocks are rendered once and kept; only the open last
block is rendered again as it grows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from app.state.state import (
    ChatState,
    ComposerOptions,
    EditingPrompt,
    MessageState,
    RunState,
    State,
)
from app.ui.context_ring import compaction_note_html
from app.ui.markdown import close_open_markup, render_markdown, split_blocks, with_cursor
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
    composer_files_html,
    context_html,
    message_foot_html,
    parts_html,
    pending_answer_html,
    queued_html,
    toast_html,
    user_message_html,
)
from app.ui.status_line import next_status_line
from app.wire.parts import answer_content
from app.wire.text import Text

SLOTS = (
    "#chat-head",
    "#chat-list",
    "#banner-slot",
    "#context-slot",
    "#toasts",
    "#attachment-list",
    "#queued-slot",
    "#note-slot",
)


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

    def set_model(self, model_id: str) -> None:
        """Show ``model_id`` in the model picker (if the picker offers it)."""

    def set_options(self, options: ComposerOptions) -> None:
        """Show the composer's options: Thinking and Tools pressed or not, the effort picked."""

    def announce(self, text: str) -> None:
        """Say ``text`` in the one polite live region (``[data-announce]``)."""


@dataclass(slots=True)
class _Rendered:
    """One run's answer as rendered so far: its finished blocks only ever grow, until a reset
    (a new ``epoch``) renders it from the start."""

    epoch: int
    source: Text | str = ""  # the text last rendered (to tell that it only grew)
    finished_len: int = 0  # characters of the text in finished blocks
    blocks: list[str] = field(default_factory=list)  # the finished blocks' HTML, in order
    final: bool = False  # rendered as a settled answer: its last block counted as finished


@dataclass(frozen=True, slots=True)
class Answer:
    """A rendered answer: ``count`` finished blocks of epoch ``epoch``, and the open block."""

    epoch: int
    count: int
    blocks: list[str]
    open_html: str

    def finished_html(self, start: int = 0) -> str:
        """The HTML of the finished blocks from ``start`` (to append what is new)."""
        return "".join(self.blocks[start : self.count])


def _grew(text: Text | str, before: Text | str) -> bool:
    """``text`` is ``before`` with more at the end (O(1) for one growing :class:`Text`)."""
    if isinstance(text, Text) and isinstance(before, Text) and text.extends(before):
        return True
    return str(text).startswith(str(before))


def _tail(text: Text | str, offset: int) -> str:
    return text.since(offset) if isinstance(text, Text) else text[offset:]


class AnswerRenderer:
    """Markdown for a run's growing answer, rendering each finished block once.

    NOTE: linear in the answer's length: the text after the finished blocks is read from the
    growing :class:`Text` without building the whole string, and finished blocks are kept as a
    list the view appends from, never as one string compared or copied on each frame.
    """

    def __init__(self) -> None:
        self._cache: dict[str, _Rendered] = {}
        self._epochs = 0

    def html(self, run_id: str, text: Text | str, *, final: bool = False, cut: bool = False) -> str:
        """The whole answer's HTML."""
        finished, open_html = self.render(run_id, text, final=final, cut=cut)
        return finished + open_html

    def render(
        self, run_id: str, text: Text | str, *, final: bool = False, cut: bool = False
    ) -> tuple[str, str]:
        """(HTML of the finished blocks, HTML of the open block); the first only ever grows."""
        answer = self.answer(run_id, text, final=final, cut=cut)
        return answer.finished_html(), answer.open_html

    def answer(
        self, run_id: str, text: Text | str, *, final: bool = False, cut: bool = False
    ) -> Answer:
        """The answer rendered; ``final``: it will not grow (its run settled), so every block
        is finished; ``cut``: it ended before it was complete (stopped, broken), so its last
        block's unclosed markup is closed as it was while it streamed."""
        cached = self._cache.get(run_id)
        if cached is None or not _grew(text, cached.source) or (cached.final and not final):
            # NOTE: text never shrinks in a run; this is a reset (or a settled answer is live
            # again, resumed: its last block may still grow, so it was not finished after all).
            self._epochs += 1
            cached = self._cache[run_id] = _Rendered(self._epochs)
        # NOTE: only the text after the last finished block is parsed again: it starts at a
        # top-level block boundary, so its block structure is the same as in the whole text.
        rest = _tail(text, cached.finished_len)
        added, open_block = (rest, "") if final and not cut else split_blocks(rest)
        if added:
            cached.blocks.append(render_markdown(added))
            cached.finished_len += len(added)
        if final and open_block:
            cached.blocks.append(render_markdown(close_open_markup(open_block)))
            cached.finished_len += len(open_block)
            open_block = ""
        cached.source, cached.final = text, final
        open_html = (
            render_markdown(close_open_markup(open_block), finished=False) if open_block else ""
        )
        return Answer(cached.epoch, len(cached.blocks), cached.blocks, open_html)


@dataclass(frozen=True, slots=True)
class _Shown:
    """What the page holds for one message, to tell what a new state changes."""

    message: MessageState | PromptView
    run: RunState | None
    skeleton: str = ""  # the parts without the answer text: a change here replaces the element
    attributes: tuple[tuple[str, str], ...] = ()
    foot: str = ""
    epoch: int = 0  # the answer's rendering (see AnswerRenderer)
    blocks: int = 0  # finished blocks on the page
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
        self._options: ComposerOptions | None = None
        self._model_shown_for: str | None = None  # the chat whose model the picker was set to

    def render(self, state: State) -> None:
        """Bring the page in line with ``state``."""
        chat = state.active_chat
        self._set_slot("#chat-head", chat_head_html(state))
        self._set_slot("#chat-list", chat_list_html(state, self._now()))
        self._set_slot("#banner-slot", banner_html(state))
        self._set_slot("#queued-slot", queued_html(state))
        self._set_slot("#context-slot", context_html(state.context_info))
        self._set_slot("#note-slot", compaction_note_html(state.context_info))
        self._set_slot("#toasts", toast_html(state))
        self._set_slot("#attachment-list", composer_files_html(state.composer.files))
        self._render_messages(state, chat)
        self._render_controls(state)
        self._announce(state)

    def _announce(self, state: State) -> None:
        """The status line, owned by a run of the chat on screen (app/ui/status_line.py)."""
        previous, self._previous = self._previous, state
        words = None if previous is None else next_status_line(state, previous, announcement)
        if words is not None:
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
                    state.editing == EditingPrompt(message.id),
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
        answer = self._answers.answer(
            run.run_id,
            answer_content(run.parts),
            final=not run.is_live,
            cut=run.status != "completed",
        )
        open_html = with_cursor(answer.open_html) if run.is_live else answer.open_html
        shown = _Shown(
            message,
            run,
            parts_html(run, ""),
            assistant_attributes(message, run),
            message_foot_html(message, run),
            answer.epoch,
            answer.count,
            open_html,
        )
        if not _can_patch(seen, shown):
            html = answer_html(answer.finished_html(), open_html)
            return shown, assistant_message_html(message, run, html), None
        assert seen is not None
        return shown, None, _patch(seen, shown, answer)

    def _render_controls(self, state: State) -> None:
        controls = Controls(can_send=not state.is_generating, can_stop=state.is_generating)
        if controls != self._controls:
            self._controls = controls
            self._dom.set_controls(controls)
        if state.composer_draft and state.composer_draft != self._draft:
            self._dom.set_draft(state.composer_draft)
        self._draft = state.composer_draft
        if state.composer.options != self._options:
            self._options = state.composer.options
            self._dom.set_options(self._options)
        self._show_chat_model(state.active_chat)

    def _show_chat_model(self, chat: ChatState | None) -> None:
        """Once per chat opened (as soon as its read is in), the picker shows the chat's model:
        the next answer goes on with it unless the user picks another."""
        if chat is None or not chat.loaded or chat.chat_id == self._model_shown_for:
            return
        self._model_shown_for = chat.chat_id
        if chat.model_id is not None:
            self._dom.set_model(chat.model_id)


def _can_patch(seen: _Shown | None, shown: _Shown) -> bool:
    """The element on the page can be updated in place (same structure, text only grew)."""
    return (
        seen is not None
        and seen.run is not None
        and shown.run is not None
        and seen.run.run_id == shown.run.run_id
        and seen.skeleton == shown.skeleton
        and seen.epoch == shown.epoch
        and seen.blocks <= shown.blocks
    )


def _patch(seen: _Shown, shown: _Shown, answer: Answer) -> MessagePatch | None:
    """The smallest update from ``seen`` to ``shown``; ``None`` when nothing visible changed."""
    patch = MessagePatch(
        attributes=shown.attributes if shown.attributes != seen.attributes else None,
        foot_html=shown.foot if shown.foot != seen.foot else None,
        append_html=answer.finished_html(seen.blocks),
        open_html=shown.open if shown.open != seen.open else None,
    )
    if patch == MessagePatch(None, None, "", None):
        return None
    return patch
