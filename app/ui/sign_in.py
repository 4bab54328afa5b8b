"""The sign-in form's words: why a sign-in was refused, and how long is left to wait."""

from __future__ import annotations

from app.ui.render import ERROR_TEXT


def sign_in_refusal(code: str, message: str, wait_s: int = 0) -> str:
    """The form's sentence for a refused sign-in (``wait_s``: seconds still to wait)."""
    words = ERROR_TEXT.get(code, message or "Something went wrong.")
    if wait_s > 0:
        return f"{words} Try again in {wait_s} s. ({code})"
    return f"{words} ({code})"
