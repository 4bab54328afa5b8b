"""The per-run trace."""

from __future__ import annotations

import pytest

from app.state.trace import MAX_ISSUES, Gap, GapReplay, Resume, RunTrace, format_trace, monotonic_ms


def test_latencies_are_differences_of_clock_times() -> None:
    trace = RunTrace(
        "r",
        request_start=100.0,
        first_byte=130.0,
        first_content=180.0,
        cancel_requested=200.0,
        cancel_settled=450.0,
    )
    assert (trace.time_to_first_byte, trace.time_to_first_content, trace.cancel_latency) == (
        30.0,
        80.0,
        250.0,
    )
    assert RunTrace("r").cancel_latency is None and RunTrace("r").time_to_first_byte is None


def test_issues_are_capped() -> None:
    trace = RunTrace("r")
    for index in range(MAX_ISSUES + 5):
        trace = trace.with_issue(f"issue {index}")
    assert len(trace.protocol_issues) == MAX_ISSUES


FORMATS = [
    pytest.param(RunTrace("r1"), "[r1] open", id="empty"),
    pytest.param(
        RunTrace(
            "r1",
            request_start=0.0,
            first_byte=12.0,
            first_content=40.4,
            terminal=900.0,
            outcome="completed",
            duplicates_dropped=1,
            gaps=(Gap(3, 5),),
            keepalives=2,
        ),
        "[r1] completed ttfb=12ms ttfc=40ms total=900ms dup=1 gaps=3->5 keepalives=2",
        id="completed-with-counters",
    ),
    pytest.param(
        RunTrace(
            "r2",
            outcome="cancelled",
            cancel_requested=10.0,
            cancel_settled=60.0,
            cancel_outcome="confirmed",
            foreign_dropped=2,
            drops=("eof",),
            resumes=(Resume(5.0, 3, True),),
            timeout_fired="idle",
            protocol_issues=("x",),
        ),
        "[r2] cancelled foreign=2 drops=eof resumes=1 cancel=confirmed/50ms timeout=idle issues=1",
        id="cancel-and-issues",
    ),
    pytest.param(
        RunTrace(
            "r4",
            outcome="completed",
            gaps=(Gap(2, 3),),
            resumes=(Resume(5.0, 0, False),),
            replays=(GapReplay(1.0, "gap", 2.0, Gap(2, 3)), GapReplay(5.0, "filled", 9.0)),
        ),
        "[r4] completed gaps=2->3 resumes=1 replays=gap(2->3),filled",
        id="gap-replays",
    ),
    pytest.param(
        RunTrace("r5", outcome=None, replays=(GapReplay(1.0),)),
        "[r5] open replays=open",
        id="gap-replay-reading",
    ),
    pytest.param(
        RunTrace("r3", outcome="cancelling", cancel_requested=1.0),
        "[r3] cancelling cancel=pending",
        id="cancel-pending",
    ),
]


def test_replay_outcome_ends_only_the_open_replay() -> None:
    reading = RunTrace("r1", replays=(GapReplay(1.0, "failed", 2.0), GapReplay(5.0)))

    ended = reading.with_replay_outcome("gap", 7.0, Gap(2, 3))

    assert ended.replays == (GapReplay(1.0, "failed", 2.0), GapReplay(5.0, "gap", 7.0, Gap(2, 3)))
    assert ended.with_replay_outcome("filled", 9.0) is ended  # already ended: unchanged
    assert RunTrace("r1").with_replay_outcome("filled", 9.0).replays == ()


@pytest.mark.parametrize(("trace", "line"), FORMATS)
def test_format_trace(trace: RunTrace, line: str) -> None:
    assert format_trace(trace) == line


def test_monotonic_clock_is_in_milliseconds_and_never_goes_back() -> None:
    first, second = monotonic_ms(), monotonic_ms()
    assert 0 <= first <= second
