"""What the page derives about tools that act (SPEC §12), pure: a call's effect as the user
should read it, what waits for a decision, and which actions stay done if an answer is
regenerated.

A call still ``awaiting_approval`` in a run that has ended was denied by that ending (Stop,
or the run broke): the server's ledger says so; the page reads it the same way before a reload
brings the ledger's word.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from app.wire.parts import Part, ToolCallPart
from app.wire.protocol import ToolEffect

EFFECT_WORDS: Final[dict[str, str]] = {
    "none": "",
    "awaiting_approval": "Waiting for your approval",
    "denied": "Denied — not run",
    "running": "Approved — running…",
    "done": "Done",
    "failed": "Failed — it did not happen",
    "unknown": "May have happened — check",
}
DENIED_BY: Final[dict[str, str]] = {
    "user": "Denied — not run",
    "timeout": "Denied (no decision in time) — not run",
    "stop": "Denied (stopped) — not run",
}
STAYS_DONE: Final = frozenset({"done", "unknown"})


def shown_effect(part: ToolCallPart, *, run_live: bool) -> ToolEffect | None:
    """The effect to show: a call left waiting (or running) by an ended run reads as its
    ending left it: denied, or ``unknown`` (it may have happened)."""
    effect = part.effect
    if run_live or effect is None:
        return effect
    if effect == "awaiting_approval":
        return "denied"
    if effect == "running" and part.status not in ("done", "error"):
        return "unknown"
    return effect


def effect_words(part: ToolCallPart, *, run_live: bool) -> str:
    """The effect in words; ``unknown`` never reads "failed"."""
    effect = shown_effect(part, run_live=run_live)
    if effect is None:
        return ""
    if effect == "denied":
        by = part.decided_by or ("stop" if part.effect == "awaiting_approval" else "user")
        return DENIED_BY.get(by, EFFECT_WORDS["denied"])
    return EFFECT_WORDS[effect]


def waits_for_decision(part: ToolCallPart, *, run_live: bool) -> bool:
    """Whether the card offers Approve / Deny."""
    return run_live and part.effect == "awaiting_approval"


def actions_that_stay_done(parts: Iterable[Part]) -> list[ToolCallPart]:
    """The calls of an answer whose effects a regeneration does not undo."""
    return [p for p in parts if isinstance(p, ToolCallPart) and p.effect in STAYS_DONE]


def regenerate_warning(parts: Iterable[Part]) -> str | None:
    """What to confirm before regenerating (``None``: nothing acted)."""
    calls = actions_that_stay_done(parts)
    if not calls:
        return None
    lines = [f"• {call.tool_name}: {EFFECT_WORDS[call.effect or 'done'].lower()}" for call in calls]
    return (
        "Regenerating does not undo what this answer's tools did. These actions stay done:\n"
        + "\n".join(lines)
        + "\n\nRegenerate anyway?"
    )


def waits_on_a_tool(parts: Iterable[Part]) -> bool:
    """Whether the run waits for the user's decision, for a tool that acts, or for a page to
    run the model's code (SPEC §13) — each with a time limit of the server's: its silence then
    is no sign of a dead stream."""
    return any(
        isinstance(p, ToolCallPart)
        and (
            p.effect in ("awaiting_approval", "running")
            or (p.runs_in == "client" and p.status == "completed")
        )
        for p in parts
    )
