"""Draft events: contract events with placeholder run fields that the run registry stamps.

A generator (the demo, a model turn, a provider adapter) yields drafts; ``RunRegistry.emit``
gives each the run's id, the next seq, and ``done`` for terminal types.
"""

from __future__ import annotations

from typing import Any, TypeVar

from app.wire.protocol import DoneEvent, ErrorEvent, EventBase, StreamEvent, end_error
from server.runs.registry import Endings

E = TypeVar("E", bound=EventBase)


def draft(cls: type[E], **fields: Any) -> E:
    """An event with placeholder run fields (the registry stamps them)."""
    return cls(run_id="-", seq=1, done=cls in (DoneEvent, ErrorEvent), **fields)


def answer_endings(message_id: str) -> Endings:
    """How an answer that is stopped or breaks ends: ``done(cancelled)`` or an ``error``."""

    def failed(message: str) -> StreamEvent:
        return end_error(message, "generation_failed")

    return Endings(draft(DoneEvent, message_id=message_id, stop_reason="cancelled"), failed)
