"""The states of one tool call and the one pure function of their transitions (SPEC §12).

    awaiting_approval ─approve→ approved ─start→ running ─finish→ done
            │                      │                 ├──fail──→ failed
            └─deny─→ denied        └─lose─→ failed   └──lose──→ unknown
            └─lose─→ denied (Stop, or the answer ended while it waited)

A read-only call starts ``approved``. A call the page runs (SPEC §13, the ``python`` tool)
starts ``awaiting_client``: the first result posted moves it to ``done`` or ``failed``
(``finish`` / ``fail``), as does the run's deadline (``fail``, "no browser ran it") or Stop
(``lose``); its code acts on nothing outside the page's sandbox, so its effect is ``none``.
 ``lose`` is what happens to a call whose run was stopped,
or whose worker died: one that was running *may* have acted, so it is ``unknown``, never
``failed``. Every transition is applied in the store as a conditional update from the states
that allow it, so of two deciders, or two workers, exactly one moves a call.
"""

from __future__ import annotations

from typing import Literal, cast

from app.wire.protocol import DecidedBy, ToolEffect

State = Literal[
    "awaiting_approval",
    "approved",
    "denied",
    "running",
    "done",
    "failed",
    "unknown",
    "awaiting_client",
]
Transition = Literal["approve", "deny", "start", "finish", "fail", "lose"]
#: What the wire says (``effect``): ``approved`` is shown as ``running`` (it starts at once);
#: a read-only call's effect is ``none``.
Effect = ToolEffect
__all__ = ["DecidedBy", "Effect", "State", "Transition", "after", "effect", "sources"]

TRANSITIONS: dict[tuple[State, Transition], State] = {
    ("awaiting_approval", "approve"): "approved",
    ("awaiting_approval", "deny"): "denied",
    ("awaiting_approval", "lose"): "denied",
    ("approved", "start"): "running",
    ("approved", "lose"): "failed",
    ("running", "finish"): "done",
    ("running", "fail"): "failed",
    ("running", "lose"): "unknown",
    ("awaiting_client", "finish"): "done",
    ("awaiting_client", "fail"): "failed",
    ("awaiting_client", "lose"): "failed",
}
FINAL: frozenset[State] = frozenset({"denied", "done", "failed", "unknown"})


def after(state: State, transition: Transition) -> State | None:
    """The state ``transition`` leads to from ``state``; ``None`` when it does not apply."""
    return TRANSITIONS.get((state, transition))


def sources(transition: Transition) -> tuple[State, ...]:
    """The states from which ``transition`` applies."""
    return tuple(state for state, t in TRANSITIONS if t == transition)


def effect(state: State, acts: bool) -> Effect:
    """The call's ``effect`` as the wire says it."""
    if not acts or state == "awaiting_client":
        return "none"
    if state == "approved":
        return "running"
    return cast(Effect, state)
