"""A search result's snippet: the words around the first place a chat's message matched."""

from __future__ import annotations

SNIPPET_SIDE = 60  # characters kept on each side of the match


def snippet_of(text: str, words: str, side: int = SNIPPET_SIDE) -> str | None:
    """The words of ``text`` around the first case-blind match of ``words``, on one line,
    with ``…`` where it was cut; ``None`` if ``words`` is not in it."""
    flat = " ".join(text.split())
    at = flat.lower().find(words.lower())
    if at < 0 or not words:
        return None
    start, end = max(0, at - side), min(len(flat), at + len(words) + side)
    if start > 0:
        space = flat.find(" ", start, at)
        start = space + 1 if space >= 0 else start
    if end < len(flat):
        space = flat.rfind(" ", at + len(words), end)
        end = space if space >= 0 else end
    return ("…" if start > 0 else "") + flat[start:end] + ("…" if end < len(flat) else "")
