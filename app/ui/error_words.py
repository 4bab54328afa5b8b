"""A server fault (HTTP 5xx) in words: what happened, that the message is kept, and what to do
— never the server's own text ("boom internal"), which belongs to its log."""

from __future__ import annotations

from collections.abc import Mapping

from app.state.state import ErrorInfo

SERVER_FAULT_WORDS = (
    "The server ran into a problem and could not answer. Your message is still in the box: "
    "press Retry, or try again in a minute. If it keeps happening, whoever runs this server "
    "can find why in its log."
)


def is_server_fault(error: ErrorInfo, worded: Mapping[str, str]) -> bool:
    """A 5xx whose code has no words of its own (``worded``), or the generic ``http_error``."""
    if error.status is None or error.status < 500:
        return False
    return error.code == "http_error" or error.code not in worded
