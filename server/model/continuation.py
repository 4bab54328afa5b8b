"""Continuing a chat with another model than its last answer's: the user is told (a toast)
and the conversation is replayed to the new model (a continuation marker, recovered once the
new model answers). The same for the demo models and real ones."""

from __future__ import annotations

from app.wire.protocol import ContinuationTransitionEvent, FallbackNoticeEvent, StreamEvent
from server.runs.drafts import draft


def model_switch_events(previous_label: str | None, label: str) -> list[StreamEvent]:
    """A model switch mid-chat: a toast, then a replay that is not recovered yet."""
    if not previous_label:
        return []
    message = (
        f"Model changed from {previous_label} to {label}: "
        "the conversation is replayed to the new model."
    )
    return [
        draft(FallbackNoticeEvent, reason="model_changed", message=message),
        draft(ContinuationTransitionEvent, mode="replay", recovered=False, reason="model_changed"),
    ]


def replay_recovered() -> StreamEvent:
    """The replay to a new model succeeded."""
    return draft(ContinuationTransitionEvent, mode="replay", recovered=True, reason="model_changed")
