"""The errors a chat run can end with.

Every error carries fields, not just text, and a short machine ``code`` that the view shows
next to the human text (``[data-error-code]``)::

    ChatError                   base: anything that makes a run (or a request) fail
    ├── TransportError          the network failed: fetch rejected, connection reset, bad read
    ├── HttpStatusError         the server answered an error status before the stream started
    └── TimeoutFired            a first-event, idle or total timeout fired (SPEC §5)

A stream that breaks the wire contract (SPEC §2, §3) raises nothing: a bad frame is skipped and
recorded in the run's trace, an event over the size limit fails the run with the code
``event_too_large``.

A user's abort (Stop) is not an error: it is a run state (``cancelling`` → ``cancelled``), so it
is deliberately not modelled here.
"""

from __future__ import annotations

from typing import Final, Literal

from app.wire.codes import ClientTimeoutCode

TimeoutKind = Literal["first_event", "idle", "total"]
TIMEOUT_CODES: Final[dict[TimeoutKind, ClientTimeoutCode]] = {
    "first_event": "first_event_timeout",
    "idle": "idle_timeout",
    "total": "total_timeout",
}
"""Each timeout of the page and its error code."""


class ChatError(Exception):
    """Base of every error a chat run or an API request can end with."""

    code: str

    def __init__(self, message: str, *, code: str = "chat_error") -> None:
        super().__init__(message)
        self.message = message
        self.code = code


class TransportError(ChatError):
    """The network failed before or during the stream (no HTTP answer to read)."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"network error: {detail}", code="network_error")
        self.detail = detail


class HttpStatusError(ChatError):
    """The server answered ``status`` with the JSON error ``{"error": {code, message}}``."""

    def __init__(
        self, status: int, code: str, message: str, retry_after: float | None = None
    ) -> None:
        super().__init__(message, code=code)
        self.status = status
        self.retry_after = retry_after


class TimeoutFired(ChatError):
    """A run timeout fired; ``kind`` says which one (first event, idle content, total)."""

    def __init__(self, kind: TimeoutKind, seconds: float | None = None) -> None:
        after = f" after {seconds:g} s" if seconds is not None else ""
        label = kind.replace("_", " ")
        super().__init__(f"{label} timeout{after}", code=f"{kind}_timeout")
        self.kind: TimeoutKind = kind
        self.seconds = seconds
