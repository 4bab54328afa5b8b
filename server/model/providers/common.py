"""What every adapter shares: the adapter skeleton, drafts, tool-call state, and how HTTP and
network failures read."""

from __future__ import annotations

import email.utils
import json
import math
import re
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from app.wire.codes import FailureCode
from app.wire.protocol import (
    StreamEvent,
    TextEvent,
    ThinkingEvent,
    ThinkingStartEvent,
    ToolCallArgumentsDeltaEvent,
    ToolCallCompletedEvent,
    ToolCallStartedEvent,
    parse_partial_arguments,
)
from server.model.providers.base import CallEnd, ProviderFailure, StreamItem
from server.runs.drafts import draft

# NOTE: before the stream, these statuses mean "try later / fix the set-up": 503 for the browser.
UNAVAILABLE_STATUSES = frozenset({401, 403, 408, 429})
_SAFE_ID = re.compile(r"[^A-Za-z0-9_-]")


def text(delta: str) -> StreamEvent:
    return draft(TextEvent, text=delta)


def thinking_start() -> StreamEvent:
    return draft(ThinkingStartEvent)


def thinking(delta: str) -> StreamEvent:
    return draft(ThinkingEvent, text=delta)


def parse_arguments(arguments_text: str) -> dict[str, Any]:
    """The arguments object of complete JSON text; best effort (a prefix, or ``{}``) otherwise."""
    try:
        value = json.loads(arguments_text or "{}")
    except ValueError:
        return parse_partial_arguments(arguments_text)
    return value if isinstance(value, dict) else {}


def safe_id(call_id: str) -> str:
    """A tool call id in the alphabet the strictest provider accepts (``[A-Za-z0-9_-]``)."""
    return _SAFE_ID.sub("_", call_id) or "call"


def retry_after(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """Seconds to wait, from ``retry-after-ms``, or ``retry-after`` in delta seconds or as an
    HTTP-date (RFC 9110 §10.2.3); ``None`` when neither says anything usable."""
    if not headers:
        return None
    milliseconds = _number(headers.get("retry-after-ms"))
    if milliseconds is not None:
        return milliseconds / 1000
    raw = (headers.get("retry-after") or "").strip()
    seconds = _number(raw)
    if seconds is not None or not raw:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None  # NOTE: an HTTP-date is always GMT; one without a zone is not one
    return max(when.timestamp() - (time.time() if now is None else now), 0.0)


def _number(raw: str | None) -> float | None:
    try:
        value = float((raw or "").strip())
    except ValueError:
        return None
    return max(value, 0.0) if math.isfinite(value) else None


def retry_after_header(seconds: float) -> str:
    """``Retry-After`` for a wait of ``seconds``: whole delta seconds, rounded up (at least 1)."""
    return str(max(math.ceil(seconds), 1))


def http_failure(
    provider: str,
    status: int,
    message: str,
    *,
    started: bool,
    headers: Mapping[str, str] | None = None,
) -> ProviderFailure:
    """An HTTP error status: unavailable before the stream (auth, rate limit, 5xx), else error."""
    text = f"{provider} answered HTTP {status}: {message}" if status != 200 else message
    unavailable = status in UNAVAILABLE_STATUSES or status >= 500
    if unavailable and not started:
        return ProviderFailure("provider_unavailable", text, retry_after=retry_after(headers))
    return ProviderFailure("provider_error", text, retry_after=retry_after(headers))


def scrub(message: str, secret: str | None) -> str:
    """``message`` without the API key in it (providers sometimes echo a bad key)."""
    if secret and len(secret) >= 8:
        return message.replace(secret, "***")
    return message


@dataclass(slots=True)
class PendingCall:
    """A tool call whose arguments are still arriving."""

    call_id: str
    name: str
    fragments: list[str] = field(default_factory=list)

    @property
    def arguments_text(self) -> str:
        return "".join(self.fragments)

    def started(self) -> StreamEvent:
        return draft(ToolCallStartedEvent, tool_call_id=self.call_id, tool_name=self.name)

    def delta(self, fragment: str) -> StreamEvent:
        self.fragments.append(fragment)
        return draft(ToolCallArgumentsDeltaEvent, tool_call_id=self.call_id, delta=fragment)

    def completed(self) -> StreamEvent:
        return draft(
            ToolCallCompletedEvent,
            tool_call_id=self.call_id,
            tool_name=self.name,
            arguments=parse_arguments(self.arguments_text),
        )


def network_failure(
    name: str,
    error: BaseException,
    *,
    started: bool,
    timeouts: tuple[type[BaseException], ...],
    connections: tuple[type[BaseException], ...],
) -> ProviderFailure | None:
    """A timeout or a broken connection (``None`` when ``error`` is neither)."""
    if isinstance(error, timeouts):
        code: FailureCode = "provider_timeout" if started else "provider_unavailable"
        return ProviderFailure(code, f"{name} timed out")
    if isinstance(error, connections):
        if not started:
            return ProviderFailure("provider_unavailable", f"{name} cannot be reached: {error}")
        return ProviderFailure("provider_disconnected", f"the connection to {name} broke: {error}")
    return None


class Translation(Protocol):
    """The state of one streamed answer."""

    def run(self, events: AsyncIterator[Any]) -> AsyncIterator[StreamItem]: ...


class SdkAdapter:
    """The skeleton of an adapter: a translation per call, and failures that never carry the
    key. Subclasses make the request and say what the SDK's exceptions mean."""

    key: str | None = None

    def translate(self, events: AsyncIterator[Any]) -> AsyncIterator[StreamItem]:
        return self.translation().run(events)

    def classify(self, error: BaseException, *, started: bool) -> ProviderFailure | None:
        failure = self.failure(error, started)
        if failure is not None:
            failure.message = scrub(failure.message, self.key)
        return failure

    def translation(self) -> Translation:
        raise NotImplementedError

    def failure(self, error: BaseException, started: bool) -> ProviderFailure | None:
        raise NotImplementedError


class ReadToEnd:
    """A translation for streams whose usage follows the completion signal: read to the end;
    a break after the completion signal loses only what followed it.

    A chunk that ends the answer as a failure (an unknown finish, a refusal) may carry its
    last words too: ``on`` sets :attr:`failed` and returns them, and they are sent first.
    """

    finish: str | None = None
    failed: ProviderFailure | None = None

    async def run(self, events: AsyncIterator[Any]) -> AsyncIterator[StreamItem]:
        try:
            async for chunk in events:
                for item in self.on(chunk):
                    yield item
                if self.failed is not None:
                    raise self.failed
        except Exception:
            if self.finish is None:
                raise
        if self.finish is not None:
            yield self.end()

    def on(self, chunk: Any) -> list[StreamItem]:
        raise NotImplementedError

    def end(self) -> CallEnd:
        raise NotImplementedError
