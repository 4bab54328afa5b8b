"""Small pieces every adapter shares: drafts, tool arguments, HTTP failures, tool-call state."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from app.protocol import (
    StreamEvent,
    TextEvent,
    ThinkingEvent,
    ThinkingStartEvent,
    ToolCallArgumentsDeltaEvent,
    ToolCallCompletedEvent,
    ToolCallStartedEvent,
    parse_partial_arguments,
)
from server.drafts import draft
from server.providers.base import ProviderFailure

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


def retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds from ``retry-after-ms`` or ``retry-after`` (delta seconds only)."""
    if not headers:
        return None
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        raw = (headers.get(name) or "").strip()
        try:
            return max(float(raw) / scale, 0.0)
        except ValueError:
            continue
    return None


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
