"""The status line (app/ui/status_line.py): its words belong to a run of the chat on screen."""

from __future__ import annotations

from dataclasses import replace

from app.state.state import ChatState, ErrorInfo, RunState, RunStatus, State
from app.ui.render import announcement
from app.ui.status_line import next_status_line


def chat(chat_id: str, **statuses: RunStatus) -> ChatState:
    runs = {run_id: RunState(run_id, chat_id, status=status) for run_id, status in statuses.items()}
    live = tuple(r for r, run in runs.items() if run.is_live)
    return ChatState(chat_id, runs=runs, live_runs=live, loaded=True)


def state(active: str | None, *chats: ChatState) -> State:
    return State(chats={c.chat_id: c for c in chats}, active_chat_id=active)


def test_an_answer_of_the_chat_on_screen_ending_says_so() -> None:
    before = state("a", chat("a", r1="receiving"))
    after = state("a", chat("a", r1="completed"))

    assert next_status_line(after, before, announcement) == "Answer complete"


def test_the_next_answer_starting_empties_it() -> None:
    before = state("a", chat("a", r1="completed"))
    after = state("a", chat("a", r1="completed", r2="connecting"))

    assert next_status_line(after, before, announcement) == ""


def test_another_chat_shown_or_the_chat_deleted_empties_it() -> None:
    done = state("a", chat("a", r1="completed"), chat("b"))

    assert next_status_line(replace(done, active_chat_id="b"), done, announcement) == ""
    assert next_status_line(state(None, chat("b")), done, announcement) == ""


def test_an_answer_ending_in_another_chat_says_nothing() -> None:
    before = state("a", chat("a"), chat("b", r1="receiving"))
    after = state("a", chat("a"), chat("b", r1="completed"))

    assert next_status_line(after, before, announcement) is None


def test_a_new_error_banner_empties_it() -> None:
    before = state("a", chat("a", r1="completed"))
    after = replace(before, last_error=ErrorInfo("model_unavailable", "down"))

    assert next_status_line(after, before, announcement) == ""
