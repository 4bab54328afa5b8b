"""Client settings: run timeouts, the cancel deadline and the event size limit (SPEC §2, §5).

Tests set them through the page URL (``/?idleTimeoutMs=1500``): ``firstEventTimeoutMs``,
``idleTimeoutMs``, ``totalTimeoutMs``, ``cancelDeadlineMs``, ``cancelPollMs``, ``maxEventBytes``,
``noticeMs``,
each a positive integer. A bad value never crashes the
page: the default is kept and a warning is recorded in :attr:`ClientConfig.warnings` (the
browser shell logs them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from app.wire.sse import DEFAULT_MAX_EVENT_BYTES

SERVER_WORD_GRACE_MS = 10_000
"""How much longer than the server the page waits: time for the server's error to arrive."""
_MAX_DIGITS = 12  # NOTE: ~30 years in ms; longer digit strings are a typo, not a setting


@dataclass(frozen=True, slots=True)
class ClientConfig:
    """Timeouts and limits of the chat client (milliseconds, bytes)."""

    first_event_timeout_ms: int = 30_000  # request start -> first event (keepalives don't count)
    idle_timeout_ms: int = 60_000  # last event -> next event (keepalives don't count)
    total_timeout_ms: int = 600_000  # request start -> terminal event
    cancel_deadline_ms: int = 5_000  # Stop -> server confirmation, else "unconfirmed"
    cancel_poll_ms: int = 250  # interval of GET /api/runs/{id} while a cancel is pending
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES  # one line or event; longer: event_too_large
    auto_resume: bool = True  # resume once, automatically, when the connection drops
    reach_probe_ms: int = 5_000  # while the server is unreachable: how often it is asked again
    notice_ms: int = 8_000  # how long a fallback toast stays (it is also dismissable)
    warnings: tuple[str, ...] = field(default=(), compare=False)

    def waiting_longer_than(self, first_event_ms: int | None, idle_ms: int | None) -> ClientConfig:
        """These settings with the first-event and idle timeouts longer than the server's own
        waits for a model (plus :data:`SERVER_WORD_GRACE_MS` for its error to arrive): a slow
        model is then failed by the server, in its words, never by the page too soon."""
        first, idle = self.first_event_timeout_ms, self.idle_timeout_ms
        if first_event_ms is not None:
            first = max(first, first_event_ms + SERVER_WORD_GRACE_MS)
        if idle_ms is not None:
            idle = max(idle, idle_ms + SERVER_WORD_GRACE_MS)
        return replace(self, first_event_timeout_ms=first, idle_timeout_ms=idle)

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> ClientConfig:
        """Settings from URL query parameters; bad values keep the default, with a warning."""
        default, warnings = cls(), []

        def read(name: str, value: int) -> int:
            raw = query.get(name)
            if raw is None:
                return value
            parsed = _positive_int(raw)
            if parsed is None:
                warnings.append(f"{name}={raw!r} is not a positive integer; using {value}")
                return value
            return parsed

        return cls(
            first_event_timeout_ms=read("firstEventTimeoutMs", default.first_event_timeout_ms),
            idle_timeout_ms=read("idleTimeoutMs", default.idle_timeout_ms),
            total_timeout_ms=read("totalTimeoutMs", default.total_timeout_ms),
            cancel_deadline_ms=read("cancelDeadlineMs", default.cancel_deadline_ms),
            cancel_poll_ms=read("cancelPollMs", default.cancel_poll_ms),
            reach_probe_ms=read("reachProbeMs", default.reach_probe_ms),
            notice_ms=read("noticeMs", default.notice_ms),
            max_event_bytes=read("maxEventBytes", default.max_event_bytes),
            warnings=tuple(warnings),
        )


def _positive_int(raw: str) -> int | None:
    text = raw.strip()
    if not text.isascii() or not text.isdigit() or len(text) > _MAX_DIGITS:
        return None
    value = int(text)
    return value if value > 0 else None
