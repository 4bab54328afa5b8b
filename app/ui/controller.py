"""Page intents → store commands (pure: the browser adapter reads the DOM and calls this)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from app.run.chat_stream import ChatStream, SendOptions
from app.state.actions import ComposerAction
from app.state.decisions import regenerate_warning
from app.state.state import (
    ComposerState,
    ConfirmingDelete,
    EditingPrompt,
    EditingTitle,
    NotEditing,
)
from app.ui.partial_copy import partial_text
from app.wire.errors import ChatError
from app.wire.hooks import PageAction

KeyIntent = Literal["send", "stop", "newline", "none"]
Shortcut = Literal["new-chat", "focus-composer", "copy-last", "show-shortcuts"]
SHORTCUTS: dict[str, Shortcut] = {
    "n": "new-chat",
    "/": "focus-composer",
    "c": "copy-last",
    "?": "show-shortcuts",
}


def shortcut_for(key: str, *, typing: bool, modified: bool) -> Shortcut | None:
    """A single-key shortcut (never while typing in a field or with Ctrl, Alt or Meta)."""
    if typing or modified:
        return None
    return SHORTCUTS.get(key)


@dataclass(frozen=True, slots=True)
class Composer:
    """What the composer holds when the user sends."""

    prompt: str
    options: SendOptions = field(default_factory=SendOptions)


def key_intent(key: str, *, shift: bool, composing: bool = False) -> KeyIntent:
    """Enter sends, Shift+Enter adds a line, Escape stops (never while an IME composes)."""
    if composing:
        return "none"
    if key == "Enter":
        return "newline" if shift else "send"
    return "stop" if key == "Escape" else "none"


class Controller:
    """Turns clicks, keys and submits into :class:`ChatStream` commands."""

    def __init__(
        self,
        stream: ChatStream,
        copy_text: Callable[[str], None],
        picked_model: Callable[[], str | None] = lambda: None,
    ) -> None:
        self._stream = stream
        self._copy_text = copy_text
        self._picked_model = picked_model

    @property
    def composer(self) -> ComposerState:
        """The composer's files and options, as the store holds them."""
        return self._stream.get_state().composer

    def compose(self, action: ComposerAction) -> None:
        """A file was added, uploaded or removed, or an option changed."""
        self._stream.compose(action)

    def send_options(self, model_id: str | None) -> SendOptions:
        """What goes with a prompt now: the composer's options and uploaded files, and the
        model picked."""
        composer = self.composer
        return SendOptions(
            thinking_enabled=composer.options.thinking,
            reasoning_effort=composer.options.effort,
            tool_intent=composer.options.tools,
            model_id=model_id,
            attachments=composer.attached,
        )

    def options_now(self) -> SendOptions:
        """The one place a request's options come from (Send, Regenerate and Edit alike): the
        composer's toggles as the store holds them (kept across reloads) and the model picked."""
        return self.send_options(self._picked_model())

    def submit(self, composer: Composer) -> bool:
        """Send the prompt; ``True`` when it was taken (the composer may be cleared)."""
        return self._stream.send(composer.prompt, composer.options) is not None

    def refuse_send(self, why: str) -> None:
        """Send was pressed with a file that cannot go: nothing is sent, and the banner says
        which file and why (the prompt and the other files stay)."""
        self._stream.report_error(ChatError(why, code="attachment_refused"))

    def select_chat(self, chat_id: str) -> None:
        """Show a chat from the list."""
        self._stream.select_chat(chat_id)

    def save_title(self, title: str) -> bool:
        """The renamed title of the active chat (unchanged: nothing is asked); a blank one is
        refused in words and the field stays open. ``False`` when it was refused."""
        state = self._stream.get_state()
        if not isinstance(state.editing, EditingTitle) or state.active_chat_id is None:
            return True  # NOTE: a blur after Escape or Cancel ended the rename
        if not title.strip():
            self._stream.set_editing(EditingTitle(refused=True))
            return False
        self._stream.rename_chat(state.active_chat_id, title)
        return True

    @property
    def generating(self) -> bool:
        """The chat on screen is answering (Enter then sends nothing: the hint says so)."""
        return self._stream.get_state().is_generating

    def save_edit(self, message_id: str, prompt: str) -> bool:
        """Send an edited prompt as a new branch; ``True`` when it was taken."""
        return self._stream.edit(message_id, prompt, self.options_now()) is not None

    def search(self, query: str) -> None:
        """The chat search's words changed."""
        self._stream.search(query)

    def copy_last_answer(self) -> bool:
        """Copy the last completed answer on screen; ``False`` when there is none."""
        state = self._stream.get_state()
        chat = state.active_chat
        for message in reversed(state.messages):
            run = None if chat is None else chat.shown_run(message)
            if run is not None and run.status == "completed":
                self._copy_text(run.text)
                return True
        return False

    def cancel_editing(self) -> bool:
        """Escape: end an in-place edit; ``True`` if one was going on."""
        if self._stream.get_state().editing == NotEditing():
            return False
        self._stream.set_editing(NotEditing())
        return True

    def click(self, action: PageAction, message_id: str | None = None) -> None:
        """A ``[data-action]`` button was pressed (on the message ``message_id``, if any)."""
        if message_id is not None and self._on_message(action, message_id):
            return
        match action:
            case "stop":
                self._stream.stop()
            case "new-chat":
                self._stream.new_chat()
            case "rename-chat":
                self._stream.set_editing(EditingTitle())
            case "delete-chat":
                self._stream.set_editing(ConfirmingDelete())
            case "confirm-delete":
                chat_id = self._stream.get_state().active_chat_id
                if chat_id is not None:
                    self._stream.delete_chat(chat_id)
            case "cancel-title" | "cancel-delete" | "cancel-edit":
                self._stream.set_editing(NotEditing())
            case "dismiss-error":
                self._stream.dismiss_error()
            case "dismiss-toast":
                self._stream.dismiss_notice()
            case "compact":
                chat_id = self._stream.get_state().active_chat_id
                if chat_id is not None:
                    self._stream.compact(chat_id)

    def _on_message(self, action: PageAction, message_id: str) -> bool:
        match action:
            case "resume":
                self._stream.resume(message_id)
            case "regenerate":
                self._stream.regenerate(message_id, self.options_now())
            case "attempt-prev" | "attempt-next":
                self._show_attempt(message_id, -1 if action == "attempt-prev" else 1)
            case "branch-prev" | "branch-next":
                self._show_branch(message_id, -1 if action == "branch-prev" else 1)
            case "edit":
                self._stream.set_editing(EditingPrompt(message_id))
            case "copy":
                self._copy(message_id)
            case "copy-partial":
                self._copy_partial(message_id)
            case "edit-queued":  # NOTE: a queued prompt's id is its run id
                self._stream.edit_queued(message_id)
            case "remove-queued":
                self._stream.remove_queued(message_id)
            case _:
                return False
        return True

    def _show_attempt(self, message_id: str, step: int) -> None:
        chat = self._stream.get_state().active_chat
        message = None if chat is None else chat.find_message(message_id)
        if message is not None:
            index = min(max(message.shown + step, 0), len(message.run_ids) - 1)
            self._stream.show_attempt(message.id, index)

    def _show_branch(self, message_id: str, step: int) -> None:
        chat = self._stream.get_state().active_chat
        message = None if chat is None else chat.find_message(message_id)
        if chat is not None and message is not None:
            index, count = chat.branch_of(message)
            self._stream.show_branch(message.id, min(max(index + step, 0), count - 1))

    def regenerate_warning(self, message_id: str) -> str | None:
        """What to confirm before regenerating ``message_id``: the actions that stay done."""
        chat = self._stream.get_state().active_chat
        message = None if chat is None else chat.find_message(message_id)
        run = None if chat is None or message is None else chat.shown_run(message)
        return None if run is None else regenerate_warning(run.parts)

    def _copy_partial(self, message_id: str) -> None:
        chat = self._stream.get_state().active_chat
        message = None if chat is None else chat.find_message(message_id)
        run = None if chat is None or message is None else chat.shown_run(message)
        text = None if run is None else partial_text(run)
        if text is not None:
            self._copy_text(text)

    def _copy(self, message_id: str) -> None:
        chat = self._stream.get_state().active_chat
        message = None if chat is None else chat.find_message(message_id)
        run = None if chat is None or message is None else chat.shown_run(message)
        if run is not None and run.status == "completed":
            self._copy_text(run.text)
