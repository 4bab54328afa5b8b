"""Page intents → store commands: the key table and the click/submit mapping."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, cast

import pytest

from app.run.chat_stream import ChatStream, SendOptions
from app.state.state import (
    ChatState,
    ConfirmingDelete,
    Editing,
    EditingPrompt,
    EditingTitle,
    MessageState,
    NotEditing,
    RunState,
    RunStatus,
    State,
)
from app.ui.controller import Composer, Controller, KeyIntent, Shortcut, key_intent, shortcut_for
from app.wire.api import AttachmentInfo
from app.wire.parts import TextPart
from app.wire.text import Text

# --- key_intent ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "shift", "composing", "intent"),
    [
        pytest.param("Enter", False, False, "send", id="enter-sends"),
        pytest.param("Enter", True, False, "newline", id="shift-enter-new-line"),
        pytest.param("Escape", False, False, "stop", id="escape-stops"),
        pytest.param("Escape", True, False, "stop", id="shift-escape-stops"),
        pytest.param("Enter", False, True, "none", id="enter-while-ime-composes"),
        pytest.param("Enter", True, True, "none", id="shift-enter-while-ime-composes"),
        pytest.param("Escape", False, True, "none", id="escape-while-ime-composes"),
        pytest.param("a", False, False, "none", id="letter"),
        pytest.param("Tab", False, False, "none", id="tab"),
        pytest.param("enter", False, False, "none", id="key-names-are-case-sensitive"),
    ],
)
def test_key_intent(key: str, shift: bool, composing: bool, intent: KeyIntent) -> None:
    assert key_intent(key, shift=shift, composing=composing) == intent


def test_key_intent_is_not_composing_by_default() -> None:
    assert key_intent("Enter", shift=False) == "send"


NO_OPTIONS = SendOptions()


# --- a fake stream ------------------------------------------------------------------------------


@dataclass
class FakeStream:
    """Records the commands the controller gives; ``send`` returns ``task``."""

    state: State = field(default_factory=State)
    task: object | None = field(default_factory=object)
    calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = field(default_factory=list)
    options: list[SendOptions] = field(default_factory=list)  # of regenerate and edit

    def _record(self, name: str, *args: Any, **kwargs: Any) -> None:
        self.calls.append((name, args, kwargs))

    def get_state(self) -> State:
        return self.state

    def send(self, prompt: str, options: SendOptions) -> object | None:
        self._record("send", prompt, options)
        return self.task

    def compact(self, chat_id: str) -> None:
        self._record("compact", chat_id)

    def stop(self) -> None:
        self._record("stop")

    def resume(self, message_id: str) -> None:
        self._record("resume", message_id)

    def regenerate(self, message_id: str, options: SendOptions = NO_OPTIONS) -> None:
        self._record("regenerate", message_id)
        self.options.append(options)

    def select_chat(self, chat_id: str) -> None:
        self._record("select_chat", chat_id)

    def new_chat(self) -> None:
        self._record("new_chat")

    def show_attempt(self, message_id: str, index: int) -> None:
        self._record("show_attempt", message_id, index)

    def dismiss_error(self) -> None:
        self._record("dismiss_error")

    def dismiss_notice(self) -> None:
        self._record("dismiss_notice")

    def show_branch(self, message_id: str, index: int) -> None:
        self._record("show_branch", message_id, index)

    def set_editing(self, editing: Editing) -> None:
        self._record("set_editing", editing)

    def rename_chat(self, chat_id: str, title: str) -> None:
        self._record("rename_chat", chat_id, title)

    def delete_chat(self, chat_id: str) -> None:
        self._record("delete_chat", chat_id)

    def edit(
        self, message_id: str, prompt: str, options: SendOptions = NO_OPTIONS
    ) -> object | None:
        self._record("edit", message_id, prompt)
        self.options.append(options)
        return self.task

    def search(self, query: str) -> None:
        self._record("search", query)


@dataclass
class Harness:
    stream: FakeStream
    controller: Controller
    copied: list[str]


def harness(state: State | None = None, task: object | None = "task") -> Harness:
    stream = FakeStream(state or State(), task)
    copied: list[str] = []
    controller = Controller(cast(ChatStream, stream), copied.append)
    return Harness(stream, controller, copied)


def answer_state(statuses: tuple[RunStatus, ...] = ("completed",), shown: int = 0) -> State:
    """Chat ``c1`` with one answer ``a1`` whose attempts have ``statuses``."""
    runs = {
        f"r{i}": RunState(
            f"r{i}", "c1", attempt=i + 1, status=status, parts=(TextPart(Text(f"answer {i}")),)
        )
        for i, status in enumerate(statuses)
    }
    message = MessageState(
        "a1", "assistant", server_id="srv_a1", reply_to="u1", run_ids=tuple(runs), shown=shown
    )
    chat = ChatState("c1", messages=(MessageState("u1", "user", text="q"), message), runs=runs)
    return State(chats={"c1": chat}, chat_order=("c1",), active_chat_id="c1")


# --- submit and select --------------------------------------------------------------------------


def test_submit_sends_the_prompt_with_the_composer_s_options() -> None:
    h = harness()
    files = tuple(
        AttachmentInfo(attachment_id=f, name=f, size=1, mime_type="text/plain")
        for f in ("f1", "f2")
    )
    options = SendOptions(True, "high", True, "demo-2", files)

    taken = h.controller.submit(Composer("hi", options))

    assert taken is True
    assert h.stream.calls == [("send", ("hi", options), {})]


def test_submit_not_taken_keeps_the_composer() -> None:
    h = harness(task=None)

    assert h.controller.submit(Composer("hi")) is False
    assert [name for name, _, _ in h.stream.calls] == ["send"]


def test_select_chat() -> None:
    h = harness()

    h.controller.select_chat("c9")

    assert h.stream.calls == [("select_chat", ("c9",), {})]


# --- clicks -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "command"),
    [
        pytest.param("stop", "stop", id="stop"),
        pytest.param("new-chat", "new_chat", id="new-chat"),
        pytest.param("dismiss-error", "dismiss_error", id="dismiss-error"),
        pytest.param("dismiss-toast", "dismiss_notice", id="dismiss-toast"),
    ],
)
def test_page_buttons_map_onto_commands(action: str, command: str) -> None:
    h = harness()

    h.controller.click(action)

    assert h.stream.calls == [(command, (), {})]


def test_a_page_action_clicked_inside_a_message_still_applies() -> None:
    h = harness()

    h.controller.click("stop", "a1")

    assert h.stream.calls == [("stop", (), {})]


@pytest.mark.parametrize(
    "action",
    [
        pytest.param("unknown", id="unknown"),
        pytest.param("resume", id="resume-without-a-message"),
        pytest.param("copy", id="copy-without-a-message"),
    ],
)
def test_unmapped_clicks_do_nothing(action: str) -> None:
    h = harness(answer_state())

    h.controller.click(action)

    assert h.stream.calls == [] and h.copied == []


@pytest.mark.parametrize("action", ["resume", "regenerate"])
def test_message_commands_carry_the_message_id(action: str) -> None:
    h = harness()

    h.controller.click(action, "a1")

    assert h.stream.calls == [(action, ("a1",), {})]


def test_compact_asks_for_the_active_chat() -> None:
    h = harness(answer_state())

    h.controller.click("compact")

    assert h.stream.calls == [("compact", ("c1",), {})]


def test_compact_without_an_active_chat_does_nothing() -> None:
    h = harness(State())

    h.controller.click("compact")

    assert h.stream.calls == []


@pytest.mark.parametrize(
    ("shown", "action", "index"),
    [
        pytest.param(1, "attempt-prev", 0, id="prev"),
        pytest.param(1, "attempt-next", 2, id="next"),
        pytest.param(0, "attempt-prev", 0, id="prev-at-first-stays"),
        pytest.param(2, "attempt-next", 2, id="next-at-last-stays"),
    ],
)
def test_attempt_switch_shows_the_neighbour_attempt(shown: int, action: str, index: int) -> None:
    h = harness(answer_state(("completed", "failed", "completed"), shown=shown))

    h.controller.click(action, "a1")

    assert h.stream.calls == [("show_attempt", ("a1", index), {})]


def test_attempt_switch_finds_the_message_by_server_id() -> None:
    h = harness(answer_state(("completed", "completed")))

    h.controller.click("attempt-next", "srv_a1")

    assert h.stream.calls == [("show_attempt", ("a1", 1), {})]


@pytest.mark.parametrize(
    ("state", "message_id"),
    [
        pytest.param(answer_state(("completed", "completed")), "nope", id="unknown-message"),
        pytest.param(State(), "a1", id="no-active-chat"),
    ],
)
def test_attempt_switch_without_the_message_does_nothing(state: State, message_id: str) -> None:
    h = harness(state)

    h.controller.click("attempt-next", message_id)

    assert h.stream.calls == []


def test_copy_copies_the_shown_completed_attempt() -> None:
    h = harness(answer_state(("completed", "completed"), shown=1))

    h.controller.click("copy", "a1")

    assert h.copied == ["answer 1"]
    assert h.stream.calls == []


@pytest.mark.parametrize(
    ("state", "message_id"),
    [
        pytest.param(answer_state(("receiving",)), "a1", id="still-receiving"),
        pytest.param(answer_state(("interrupted",)), "a1", id="interrupted"),
        pytest.param(answer_state(("completed", "failed"), shown=1), "a1", id="shown-failed"),
        pytest.param(answer_state(), "nope", id="unknown-message"),
        pytest.param(answer_state(), "u1", id="user-message-has-no-run"),
        pytest.param(State(), "a1", id="no-active-chat"),
    ],
)
def test_copy_only_copies_a_completed_answer(state: State, message_id: str) -> None:
    h = harness(state)

    h.controller.click("copy", message_id)

    assert h.copied == []


@pytest.mark.parametrize(
    ("status", "copied"),
    [
        pytest.param("cancelled", ["answer 0"], id="stopped"),
        pytest.param("failed", ["answer 0"], id="failed"),
        pytest.param("interrupted", ["answer 0"], id="interrupted"),
        pytest.param("completed", [], id="not-a-complete-answer"),
    ],
)
def test_copy_partial_copies_an_unfinished_answer_only(
    status: RunStatus, copied: list[str]
) -> None:
    h = harness(answer_state((status,)))

    h.controller.click("copy-partial", "a1")

    assert h.copied == copied


# --- chats, edits, branches, shortcuts ----------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "editing"),
    [
        pytest.param("rename-chat", EditingTitle(), id="rename-opens-the-title-field"),
        pytest.param("delete-chat", ConfirmingDelete(), id="delete-asks-first"),
        pytest.param("cancel-title", NotEditing(), id="cancel-rename"),
        pytest.param("cancel-delete", NotEditing(), id="keep-the-chat"),
        pytest.param("cancel-edit", NotEditing(), id="cancel-an-edit"),
    ],
)
def test_in_place_edits_open_and_close(action: str, editing: Editing) -> None:
    h = harness(answer_state())

    h.controller.click(action)

    assert h.stream.calls == [("set_editing", (editing,), {})]


def test_edit_opens_the_prompt_it_was_clicked_on() -> None:
    h = harness(answer_state())

    h.controller.click("edit", "u1")

    assert h.stream.calls == [("set_editing", (EditingPrompt("u1"),), {})]


def test_confirm_delete_deletes_the_active_chat_only_when_there_is_one() -> None:
    h = harness(answer_state())
    h.controller.click("confirm-delete")
    assert h.stream.calls == [("delete_chat", ("c1",), {})]

    empty = harness(State())
    empty.controller.click("confirm-delete")
    assert empty.stream.calls == []


def test_save_title_and_edit_and_search_reach_the_store() -> None:
    h = harness(replace(answer_state(), editing=EditingTitle()))

    h.controller.save_title("Trip")
    taken = h.controller.save_edit("u1", "better words")
    h.controller.search("rio")

    assert taken is True
    assert h.stream.calls == [
        ("rename_chat", ("c1", "Trip"), {}),
        ("edit", ("u1", "better words"), {}),
        ("search", ("rio",), {}),
    ]


def test_a_blank_title_is_refused_in_words_and_the_field_stays() -> None:
    h = harness(replace(answer_state(), editing=EditingTitle()))

    assert h.controller.save_title("   ") is False

    assert h.stream.calls == [("set_editing", (EditingTitle(refused=True),), {})]


def test_a_title_saved_after_the_rename_ended_asks_nothing() -> None:
    h = harness(answer_state())  # NOTE: a blur after Escape or Cancel

    assert h.controller.save_title("Trip") is True

    assert h.stream.calls == []


def _branches() -> State:
    prompts = tuple(MessageState(f"u{i}", "user", text=f"v{i}") for i in range(3))
    chat = ChatState("c1", messages=prompts)
    return State(chats={"c1": chat}, chat_order=("c1",), active_chat_id="c1")


@pytest.mark.parametrize(
    ("clicked", "action", "index"),
    [
        pytest.param("u1", "branch-prev", 0, id="previous"),
        pytest.param("u1", "branch-next", 2, id="next"),
        pytest.param("u0", "branch-prev", 0, id="first-stays-first"),
        pytest.param("u2", "branch-next", 2, id="last-stays-last"),
    ],
)
def test_branch_switcher_steps_within_the_siblings(clicked: str, action: str, index: int) -> None:
    h = harness(_branches())

    h.controller.click(action, clicked)

    assert h.stream.calls == [("show_branch", (clicked, index), {})]


def test_copy_last_answer_copies_the_last_completed_answer_on_screen() -> None:
    h = harness(answer_state(("completed", "failed"), shown=0))

    assert h.controller.copy_last_answer() is True
    assert h.copied == ["answer 0"]

    failed = harness(answer_state(("completed", "failed"), shown=1))
    assert failed.controller.copy_last_answer() is False
    assert failed.copied == []


def test_escape_ends_an_edit_only_when_one_is_open() -> None:
    closed = harness(answer_state())
    assert closed.controller.cancel_editing() is False
    assert closed.stream.calls == []

    editing = harness(replace(answer_state(), editing=EditingTitle()))
    assert editing.controller.cancel_editing() is True
    assert editing.stream.calls == [("set_editing", (NotEditing(),), {})]


@pytest.mark.parametrize(
    ("key", "typing", "modified", "shortcut"),
    [
        pytest.param("n", False, False, "new-chat", id="n-new-chat"),
        pytest.param("/", False, False, "focus-composer", id="slash-composer"),
        pytest.param("c", False, False, "copy-last", id="c-copy"),
        pytest.param("?", False, False, "show-shortcuts", id="question-mark-list"),
        pytest.param("n", True, False, None, id="never-while-typing"),
        pytest.param("c", False, True, None, id="never-with-ctrl-alt-meta"),
        pytest.param("x", False, False, None, id="other-keys"),
        pytest.param("N", False, False, None, id="case-sensitive"),
    ],
)
def test_single_key_shortcuts(
    key: str, typing: bool, modified: bool, shortcut: Shortcut | None
) -> None:
    assert shortcut_for(key, typing=typing, modified=modified) == shortcut


def test_regenerate_and_edit_take_the_options_shown_now_as_send_does() -> None:
    from app.state.state import ComposerOptions, ComposerState

    composer = ComposerState(options=ComposerOptions(thinking=True, effort="high", tools=True))
    stream = FakeStream(replace(answer_state(), composer=composer), "task")
    controller = Controller(cast(ChatStream, stream), lambda _text: None, lambda: "m2")

    controller.click("regenerate", "a1")
    controller.save_edit("u1", "again")

    expected = SendOptions(
        thinking_enabled=True, reasoning_effort="high", tool_intent=True, model_id="m2"
    )
    assert stream.options == [expected, expected]
    assert controller.options_now() == expected
