"""Where a new prompt goes in the chat's tree: after the last answer on screen that the
server has, as the server's tree says, not as the page happened to keep it.

The page knows the server has an answer's run once an event of it arrived or the chat read
named its message. An answer stopped (or timed out) before its first event is not known
either way: the server is asked (``GET /api/runs/{id}``). Only a run the server does not
know (404) is skipped; the prompt follows the newest answer it does know.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.run.transport import ChatApi
from app.state.state import ChatState, RunState
from app.wire.errors import ChatError, HttpStatusError


@dataclass(frozen=True, slots=True)
class Candidate:
    """An answer's run on screen a new prompt may follow; ``known``: the server has it."""

    run_id: str
    known: bool


def known_to_server(run: RunState) -> bool:
    """An event of the run arrived, or the chat read named its message."""
    return run.last_seq > 0 or run.message_id is not None


def candidates(chat: ChatState) -> tuple[Candidate, ...]:
    """The shown runs of the answers on screen, newest first, down to the first one known to
    the server (the ones above it are never needed)."""
    found: list[Candidate] = []
    for message in reversed(chat.visible()):
        run = chat.shown_run(message)
        if run is None:
            continue
        found.append(Candidate(run.run_id, known_to_server(run)))
        if found[-1].known:
            break
    return tuple(found)


@dataclass(frozen=True, slots=True)
class Placed:
    """A new prompt's place, known without asking: after ``after_run`` (``None``: the top)."""

    after_run: str | None


def settled_place(chat: ChatState) -> Placed | None:
    """The place of a new prompt when the page can tell without asking the server; ``None``
    when an answer on screen has to be looked up first (:func:`place_of_prompt`)."""
    found = candidates(chat)
    if not found:
        return Placed(None)
    return Placed(found[0].run_id) if found[0].known else None


async def place_of_prompt(chat: ChatState, api: ChatApi) -> str | None:
    """The run a new prompt follows, asking the server about answers the page cannot place
    (``None``: the prompt starts the chat). A lookup that fails otherwise than 404 keeps the
    answer on screen: the send itself then meets the same trouble and says so."""
    for candidate in candidates(chat):
        if candidate.known or await _server_has(api, candidate.run_id):
            return candidate.run_id
    return None


async def _server_has(api: ChatApi, run_id: str) -> bool:
    try:
        await api.get_run(run_id)
    except HttpStatusError as error:
        return error.status != 404
    except ChatError:
        return True
    return True
