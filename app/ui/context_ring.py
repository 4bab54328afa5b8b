"""The context ring, its compaction callout and the note a compaction leaves in the chat, in
words that stay true: a count past the window is said as such (never "1,208 of 900 (100%)"),
the callout says how full the context is, and Compact says what it did."""

from __future__ import annotations

from app.state.state import ContextInfo
from app.ui.markup import attr, escape

FULL_RATIO = 0.995  # NOTE: from here the ring says "Full": "100%" never fits inside it
ALMOST_FULL_RATIO = 0.85


def context_words(info: ContextInfo) -> str:
    """The ring's label: how much of the window the chat sends, or that it is past it."""
    if info.used_tokens > info.max_tokens:
        return (
            f"{info.used_tokens:,} tokens: more than this model's "
            f"{info.max_tokens:,}-token window, the oldest turns no longer fit"
        )
    return f"{info.used_tokens:,} of {info.max_tokens:,} tokens ({_ratio(info):.0%})"


def callout_words(info: ContextInfo) -> str:
    """Why the callout offers Compact, as full as the context really is."""
    if info.used_tokens > info.max_tokens:
        return "This chat no longer fits the model's window."
    if _ratio(info) >= ALMOST_FULL_RATIO:
        return "Context almost full."
    return f"Context {_ratio(info):.0%} used."


def context_html(info: ContextInfo | None) -> str:
    """The context ring (and the compaction callout when recommended)."""
    if info is None:
        return ""
    ratio = _ratio(info)
    label = context_words(info)
    shown = "Full" if ratio >= FULL_RATIO or info.used_tokens > info.max_tokens else f"{ratio:.0%}"
    ring = (
        f'<div class="context-ring"{attr("data-context-ring", "")}'
        f"{attr('data-ratio', f'{ratio:.4f}')}"
        f"{attr('data-severity', info.severity)}{attr('title', label)}{attr('aria-label', label)}"
        f' role="img" style="--ratio:{ratio:.4f}"><span aria-hidden="true">{shown}</span></div>'
    )
    if not info.compaction_recommended:
        return ring
    return ring + (
        f'<div class="callout" data-callout="compaction">{escape(callout_words(info))} '
        '<button type="button" data-action="compact">Compact</button></div>'
    )


def compaction_note_html(info: ContextInfo | None) -> str:
    """What the last compaction did, in the chat (until the next answer measures anew)."""
    done = None if info is None else info.compacted
    if info is None or done is None:
        return ""
    turns = "1 earlier turn" if done.turns == 1 else f"{done.turns} earlier turns"
    words = (
        f"Compacted: {turns} summarised. This chat now sends {info.used_tokens:,} of "
        f"{info.max_tokens:,} tokens (it sent {done.used_before:,})."
    )
    return f'<p class="compaction-note" data-note="compacted" role="status">{escape(words)}</p>'


def _ratio(info: ContextInfo) -> float:
    return min(max(info.ratio, 0.0), 1.0)
