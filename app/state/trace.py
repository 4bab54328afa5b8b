"""The per-run trace of SPEC §5: what happened to one run, and when.

Times are milliseconds from an injectable :data:`Clock` (``performance.now()`` in the browser,
:func:`monotonic_ms` under CPython, a fake in tests). The reducer fills the trace from the
``at`` stamp every run action carries, so the trace stays part of the pure state; the view
shows it in the run details panel and :func:`format_trace` gives the console line.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal

from app.wire.errors import TimeoutKind

Clock = Callable[[], float]
"""Returns a monotonic time in milliseconds."""

CancelOutcome = Literal["confirmed", "unconfirmed", "completed_first"]
ReplayOutcome = Literal["filled", "gap", "expired", "failed", "stopped"]
"""How a gap replay ended.

filled:  it reached the live copy contiguously from seq 1; its parts replaced the gapped ones.
gap:     the replayed log skips a seq too.
expired: the event log is gone (410).
failed:  the request failed, or the connection ended or broke before it caught up.
stopped: the user pressed Stop first.
"""
MAX_ISSUES = 50


def monotonic_ms() -> float:
    """The default clock: ``time.monotonic()`` in milliseconds."""
    return time.monotonic() * 1000.0


@dataclass(frozen=True, slots=True)
class Gap:
    """A missing stretch of seqs: ``expected`` was due, ``got`` arrived."""

    expected: int
    got: int


@dataclass(frozen=True, slots=True)
class Resume:
    """One resume of the run: when, after which seq, and why."""

    at: float
    after_seq: int
    automatic: bool
    recovering: bool = False


@dataclass(frozen=True, slots=True)
class GapReplay:
    """One re-read of the run's whole event log to fill a gap: when, and how it ended."""

    at: float
    outcome: ReplayOutcome | None = None  # None while it reads
    ended: float | None = None
    gap: Gap | None = None  # outcome "gap": where the replay skipped

    def __str__(self) -> str:
        where = f"({self.gap.expected}->{self.gap.got})" if self.gap else ""
        return f"{self.outcome or 'open'}{where}"


@dataclass(frozen=True, slots=True)
class RunTrace:
    """The timeline and counters of one run (all times in clock milliseconds)."""

    run_id: str
    request_start: float | None = None
    first_byte: float | None = None
    first_content: float | None = None
    terminal: float | None = None
    outcome: str | None = None  # the status the run settled in (last one, after resumes)
    duplicates_dropped: int = 0
    foreign_dropped: int = 0  # events whose runId is another run's
    gaps: tuple[Gap, ...] = ()
    drops: tuple[str, ...] = ()  # connection ends without a terminal event: "eof", "network: …"
    resumes: tuple[Resume, ...] = ()
    replays: tuple[GapReplay, ...] = ()  # gap replays (re-reads of the log from seq 1)
    cancel_requested: float | None = None
    cancel_settled: float | None = None
    cancel_outcome: CancelOutcome | None = None
    timeout_fired: TimeoutKind | None = None
    protocol_issues: tuple[str, ...] = ()  # at most MAX_ISSUES kept
    keepalives: int = 0

    @property
    def cancel_latency(self) -> float | None:
        """Milliseconds from Stop to the server's answer (or the deadline)."""
        if self.cancel_requested is None or self.cancel_settled is None:
            return None
        return self.cancel_settled - self.cancel_requested

    @property
    def time_to_first_byte(self) -> float | None:
        """Milliseconds from the request to its first byte."""
        return _since(self.request_start, self.first_byte)

    @property
    def time_to_first_content(self) -> float | None:
        """Milliseconds from the request to the first text or thinking delta."""
        return _since(self.request_start, self.first_content)

    def with_issue(self, issue: str) -> RunTrace:
        """This trace with one more protocol issue (capped at MAX_ISSUES)."""
        if len(self.protocol_issues) >= MAX_ISSUES:
            return self
        return replace(self, protocol_issues=(*self.protocol_issues, issue))

    def with_replay_outcome(
        self, outcome: ReplayOutcome, at: float, gap: Gap | None = None
    ) -> RunTrace:
        """This trace with the open gap replay ended (unchanged if none is open)."""
        if not self.replays or self.replays[-1].outcome is not None:
            return self
        ended = GapReplay(self.replays[-1].at, outcome, at, gap)
        return replace(self, replays=(*self.replays[:-1], ended))


def _since(start: float | None, end: float | None) -> float | None:
    return None if start is None or end is None else end - start


def format_trace(trace: RunTrace) -> str:
    """One console line: ``[run_…] completed ttfb=12ms ttfc=40ms total=900ms dup=1 …``."""
    fields = [
        ("ttfb", _ms(trace.time_to_first_byte)),
        ("ttfc", _ms(trace.time_to_first_content)),
        ("total", _ms(_since(trace.request_start, trace.terminal))),
        ("dup", str(trace.duplicates_dropped) if trace.duplicates_dropped else None),
        ("foreign", str(trace.foreign_dropped) if trace.foreign_dropped else None),
        ("gaps", ",".join(f"{g.expected}->{g.got}" for g in trace.gaps) or None),
        ("drops", ",".join(trace.drops) or None),
        ("resumes", str(len(trace.resumes)) if trace.resumes else None),
        ("replays", ",".join(str(r) for r in trace.replays) or None),
        ("cancel", _cancel(trace)),
        ("timeout", trace.timeout_fired),
        ("issues", str(len(trace.protocol_issues)) if trace.protocol_issues else None),
        ("keepalives", str(trace.keepalives) if trace.keepalives else None),
    ]
    shown = " ".join(f"{name}={value}" for name, value in fields if value is not None)
    return f"[{trace.run_id}] {trace.outcome or 'open'} {shown}".rstrip()


def _ms(value: float | None) -> str | None:
    return None if value is None else f"{value:.0f}ms"


def _cancel(trace: RunTrace) -> str | None:
    if trace.cancel_requested is None:
        return None
    latency = _ms(trace.cancel_latency)
    outcome = trace.cancel_outcome or "pending"
    return f"{outcome}/{latency}" if latency else outcome
