"""A chat's title: made from its first prompt when its first answer is stored."""

from __future__ import annotations


def title_for(prompt: str) -> str:
    """A short chat title from the first prompt."""
    words = " ".join(prompt.split())
    return words if len(words) <= 48 else words[:47].rstrip() + "…"
