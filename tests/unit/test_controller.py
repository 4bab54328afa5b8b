"""Page intents → store commands: the key table and the click/submit mapping."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

import pytest

from app.run.chat_stream import ChatStream, SendOptions
from app.state.parts import TextPart
from app.state.state import ChatState, MessageState, RunState, RunStatus, State
from app.state.text import Text
from app.ui.controller import Composer, Controller, KeyIntent, key_intent

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


# --- a fake stream ------------------------------------------------------------------------------


@dataclass
class FakeStream:
    """Records the commands the controller gives; ``send`` returns ``task``."""

    state: State = field(default_factory=State)
    task: object | None = field(default_factory=object)
    calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = field(default_factory=list)

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

    def regenerate(self, message_id: str) -> None:
        self._record("regenerate", message_id)

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
    message = MessageState("a1", "assistant", server_id="srv_a1", run_ids=tuple(runs), shown=shown)
    chat = ChatState("c1", messages=(MessageState("u1", "user", text="q"), message), runs=runs)
    return State(chats={"c1": chat}, chat_order=("c1",), active_chat_id="c1")


# --- submit and select --------------------------------------------------------------------------


def test_submit_sends_the_prompt_with_the_composer_s_options() -> None:
    h = harness()
    options = SendOptions(True, "high", True, "demo-2", ("f1", "f2"))

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
