"""Copying what the user sees of an unfinished answer (SPEC §8): ``[data-action=copy]`` stays
for complete answers; an answer that stopped, broke, failed or is still arriving offers
``[data-action=copy-partial]`` when it has text, its words saying the copy is partial."""

from __future__ import annotations

from app.state.state import RunState

COPY_PARTIAL_WORDS = "Copy partial answer"
COPIED_PARTIAL_WORDS = "Copied the partial answer"


def partial_text(run: RunState) -> str | None:
    """The text to copy from an unfinished answer; ``None`` when there is nothing to offer."""
    if not run.is_partial:
        return None
    text = run.text
    return text if text.strip() else None
