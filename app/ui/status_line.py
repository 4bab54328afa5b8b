"""The status line under the composer (``[data-announce]``, the one polite live region): what
it says belongs to one run of the chat on screen.

It says how an answer of the chat on screen ended, once; it is emptied when that is no longer
true of what the user sees: another chat is shown (or the chat was deleted), an answer of the
chat starts, or an error banner (an alert of its own) appears.
"""

from __future__ import annotations

from collections.abc import Callable

from app.state.state import RunState, State, settled_runs


def started_in_active_chat(state: State, previous: State) -> bool:
    """An answer of the chat on screen became live between ``previous`` and ``state``."""
    chat = state.active_chat
    before = previous.active_chat
    if chat is None or before is None or chat is before:
        return False
    return any(
        chat.runs[run_id].is_live
        and (before.runs.get(run_id) is None or not before.runs[run_id].is_live)
        for run_id in chat.live_runs
        if run_id in chat.runs
    )


def next_status_line(
    state: State, previous: State, words_of: Callable[[RunState], str]
) -> str | None:
    """The status line's new words (``""``: empty it), or ``None`` to leave it as it is."""
    if state.active_chat_id != previous.active_chat_id:
        return ""
    said = [
        words
        for run in settled_runs(state, previous)
        if run.chat_id == state.active_chat_id and (words := words_of(run))
    ]
    if said:
        return said[-1]
    new_error = state.last_error is not None and state.last_error is not previous.last_error
    if new_error or started_in_active_chat(state, previous):
        return ""
    return None
