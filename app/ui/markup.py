"""The two HTML helpers every view module uses: escaped text and one escaped attribute."""

from __future__ import annotations

from html import escape

__all__ = ["attr", "escape"]


def attr(name: str, value: object) -> str:
    """One escaped HTML attribute."""
    return f' {name}="{escape(str(value), quote=True)}"'
