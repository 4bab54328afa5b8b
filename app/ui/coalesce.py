"""Render at most once per animation frame, but structural changes at once (seed 003).

The store applies every event to the state as it arrives; only rendering is coalesced. A
change is *structural* when it alters what is on screen beyond growing text: the active chat,
a message or part appearing, a run's status or cancel confirmation, a tool or image status,
the attempt shown, the context ring, an error, a notice or the draft. Those render
immediately; pure deltas schedule one render for the next frame. Nothing is dropped: the
render always receives the latest state, which contains every delta applied so far.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

from app.state.state import ChatState, RunState, State
from app.wire.parts import ContinuationPart, ImagePart, Part, ToolCallPart

RequestFrame = Callable[[Callable[[], None]], object]


class FrameCoalescer:
    """A store listener that calls ``render(state)`` at most once per frame for deltas."""

    def __init__(self, request_frame: RequestFrame, render: Callable[[State], None]) -> None:
        self._request_frame = request_frame
        self._render = render
        self._latest: State | None = None
        self._dirty = False
        self._scheduled = False

    def on_change(self, state: State, previous: State) -> None:
        """Store listener: render now if the change is structural, else on the next frame."""
        self._latest = state
        if is_structural(state, previous):
            self.flush()
            return
        self._dirty = True
        if not self._scheduled:
            self._scheduled = True
            self._request_frame(self._on_frame)

    def flush(self) -> None:
        """Render the latest state now (if there is anything not rendered yet)."""
        self._dirty = False
        if self._latest is not None:
            self._render(self._latest)

    def _on_frame(self) -> None:
        self._scheduled = False
        if self._dirty:
            self.flush()


def is_structural(state: State, previous: State) -> bool:
    """Whether the change from ``previous`` to ``state`` must be rendered at once."""
    if (
        state.active_chat_id != previous.active_chat_id
        or state.chat_order != previous.chat_order
        or state.last_error != previous.last_error
        or state.fallback_notice != previous.fallback_notice
        or state.composer_draft != previous.composer_draft
        or state.offline != previous.offline
        or state.outbox != previous.outbox
    ):
        return True
    chat, before = state.active_chat, previous.active_chat
    if chat is before:
        return _titles(state) != _titles(previous)
    if chat is None or before is None:
        return True
    return _chat_structure(chat, before) or _runs_changed(chat, before)


def _titles(state: State) -> tuple[str, ...]:
    return tuple(state.chats[c].title for c in state.chat_order if c in state.chats)


def _chat_structure(chat: ChatState, before: ChatState) -> bool:
    """Whether the chat's messages, context ring, title or loading changed."""
    if (chat.context_info, chat.loaded, chat.title) != (
        before.context_info,
        before.loaded,
        before.title,
    ):
        return True
    if chat.messages is before.messages:  # NOTE: the common case of a delta: no tuple built
        return False
    return _messages(chat) != _messages(before)


def _messages(chat: ChatState) -> tuple[Hashable, ...]:
    return tuple((m.id, m.run_ids, m.shown, m.server_id) for m in chat.messages)


def _runs_changed(chat: ChatState, before: ChatState) -> bool:
    """A run of the chat changed beyond its text: status, flags, or its parts' structure."""
    for run_id, run in chat.runs.items():
        old = before.runs.get(run_id)
        if old is None:
            return True
        if old is not run and _run_structure(run) != _run_structure(old):
            return True
    return False


def _run_structure(run: RunState) -> tuple[Hashable, ...]:
    parts = tuple(_part_marker(part) for part in run.parts)
    flags = (run.status, run.cancel, run.reason, run.error, run.has_gap, run.stop_reason)
    return (*flags, run.resuming, parts)


def _part_marker(part: Part) -> Hashable:
    match part:
        case ToolCallPart(tool_call_id=key, status=status):
            return ("tool", key, status)
        case ImagePart(image_id=key, status=status):
            return ("image", key, status)
        case ContinuationPart(recovered=recovered):
            return ("continuation", recovered)
        case _:
            return type(part).__name__
