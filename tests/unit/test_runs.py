"""The run state machine (``app.state.runs``) on its own: phases, guards, transitions."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from app.state.actions import (
    EventReceived,
    ReplayStarted,
    ResumeStarted,
    RunRestored,
    RunStarted,
    StopRequested,
    StreamEnded,
)
from app.state.runs import new_run, receive, reduce_run, restore, start_resume
from app.state.state import GapHeld, Live, Replaying, Restored, Resuming, RunState
from app.state.trace import Resume, RunTrace
from app.wire.parts import TextPart, answer_text
from app.wire.protocol import ParsedEvent, parse_event
from app.wire.text import Text


def event(event_type: str, seq: int, run_id: str = "r1", **fields: Any) -> EventReceived:
    payload = {"type": event_type, "runId": run_id, "seq": seq, "done": False, **fields}
    parsed = parse_event(json.dumps(payload))
    assert isinstance(parsed, ParsedEvent), parsed
    return EventReceived("r1", float(seq), parsed.event)


def text(seq: int, value: str, run_id: str = "r1") -> EventReceived:
    return event("text", seq, run_id, text=value)


def done(seq: int) -> EventReceived:
    return event("done", seq, messageId="m1", stopReason="stop")


def feed(run: RunState, *actions: EventReceived) -> RunState:
    for action in actions:
        run, _ = receive(run, action)
    return run


def started() -> RunState:
    return new_run(RunStarted("r1", 1.0, "c1", "a1", "hi", user_message_id="u1"))


def test_a_new_run_is_connecting_and_live() -> None:
    run = started()
    assert (run.status, run.phase, run.parts, run.last_seq) == ("connecting", Live(), (), 0)
    assert run.trace.request_start == 1.0


def test_events_in_order_build_the_answer_and_done_completes_it() -> None:
    run = feed(started(), text(1, "Hel"), text(2, "lo"), done(3))
    assert (run.status, run.text, run.last_seq, run.stop_reason) == (
        "completed",
        "Hello",
        3,
        "stop",
    )
    assert run.phase == Live() and not run.is_partial


@pytest.mark.parametrize(
    ("actions", "news", "dropped"),
    [
        pytest.param([text(1, "a"), text(1, "a")], [True, False], (1, 0), id="repeated-seq"),
        pytest.param([text(1, "a"), text(2, "x", "r9")], [True, False], (0, 1), id="foreign-run"),
    ],
)
def test_what_is_not_news_is_dropped_and_counted(
    actions: list[EventReceived], news: list[bool], dropped: tuple[int, int]
) -> None:
    run, seen = started(), []
    for action in actions:
        run, fresh = receive(run, action)
        seen.append(fresh)
    assert seen == news
    assert (run.trace.duplicates_dropped, run.trace.foreign_dropped) == dropped
    assert run.text == "a"


def test_a_live_gap_goes_on_but_holds_the_terminal_event_for_a_replay() -> None:
    run = feed(started(), text(1, "a"), text(3, "c"), done(4))
    assert (run.status, run.text, run.has_gap, run.phase) == ("receiving", "ac", True, GapHeld())
    assert run.filling_gap and run.is_partial
    replaying = reduce_run(run, ReplayStarted("r1", 5.0))
    assert (replaying.status, replaying.phase) == ("connecting", Replaying())


def test_a_held_terminal_counts_once_the_replay_has_filled_the_gap() -> None:
    held = feed(started(), text(1, "a"), text(3, "c"), done(4))
    replaying = reduce_run(held, ReplayStarted("r1", 5.0))
    aside = feed(replaying, text(1, "a"), text(2, "b"), text(3, "c"))
    assert isinstance(aside.phase, Replaying)
    assert (aside.text, answer_text(aside.phase.parts)) == ("ac", "abc")
    filled = feed(aside, done(4))
    assert (filled.status, filled.text, filled.has_gap) == ("completed", "abc", False)


def test_a_replay_swaps_at_the_live_copy_and_then_stays_contiguous() -> None:
    gapped = reduce_run(feed(started(), text(1, "a"), text(3, "c")), StreamEnded("r1", 4.0, "eof"))
    replaying = start_resume(gapped, ResumeStarted("r1", 5.0))
    assert replaying.phase == Replaying()
    filled = feed(replaying, text(1, "a"), text(2, "b"), text(3, "c"))
    assert (filled.text, filled.has_gap, filled.phase) == ("abc", False, Live(contiguous=True))
    holed = feed(filled, text(5, "e"))
    assert (holed.status, holed.reason, holed.text) == ("interrupted", "gap", "abc")


def test_a_resume_asks_from_the_last_seq_and_its_first_event_must_follow() -> None:
    interrupted = reduce_run(feed(started(), text(1, "a")), StreamEnded("r1", 2.0, "eof"))
    assert (interrupted.status, interrupted.reason) == ("interrupted", "eof")
    resuming = start_resume(interrupted, ResumeStarted("r1", 3.0))
    assert (resuming.status, resuming.phase) == ("connecting", Resuming(after_seq=1))
    assert resuming.trace.resumes == (Resume(3.0, 1, False, False),)
    assert feed(resuming, text(2, "b")).phase == Live()
    skipped = feed(resuming, text(3, "c"))
    assert (skipped.status, skipped.reason) == ("interrupted", "gap")


def test_the_resume_position_is_the_phase_s_not_the_trace_s() -> None:
    resuming = start_resume(
        replace(started(), status="interrupted", reason="eof", last_seq=4), ResumeStarted("r1", 1.0)
    )
    misleading = replace(resuming, trace=RunTrace("r1", resumes=(Resume(0.0, 99, False, False),)))
    assert misleading.phase == Resuming(after_seq=4)


def _restored(**fields: Any) -> RunState:
    return RunState(
        "r1",
        "c1",
        status=fields.pop("status", "interrupted"),
        reason=fields.pop("reason", "detached"),
        parts=(TextPart(Text("from history")),),
        phase=Restored(),
        **fields,
    )


def test_resuming_a_restored_run_reads_the_log_from_the_start_and_rebuilds_its_parts() -> None:
    resuming = start_resume(_restored(), ResumeStarted("r1", 1.0))
    assert resuming.phase == Resuming(after_seq=0, rebuild=True)
    assert resuming.text == "from history"  # NOTE: shown until the log's first event
    rebuilt = feed(resuming, text(1, "Fresh "), text(2, "text"))
    assert (rebuilt.text, rebuilt.phase) == ("Fresh text", Live())


def test_resuming_a_restored_gapped_answer_replays_it_without_losing_what_it_folds() -> None:
    gapped = _restored(status="completed", reason=None, has_gap=True)
    replaying = start_resume(
        replace(gapped, status="interrupted", reason="eof"), ResumeStarted("r1", 1.0)
    )
    assert replaying.phase == Replaying()
    rebuilt = feed(replaying, text(1, "one "), text(2, "two"), done(3))
    assert (rebuilt.status, rebuilt.text, rebuilt.has_gap) == ("completed", "one two", False)


def test_a_settled_restored_run_stays_restored() -> None:
    restored = restore(
        replace(started(), status="cancelled", cancel="unconfirmed"),
        RunRestored("r1", 2.0, _restored(status="completed", reason=None)),
    )
    assert (restored.status, restored.phase, restored.run_id) == ("completed", Restored(), "r1")


def test_stop_ends_any_reading_phase() -> None:
    replaying = reduce_run(
        feed(started(), text(1, "a"), text(3, "c"), done(4)), ReplayStarted("r1", 5.0)
    )
    stopped = reduce_run(replaying, StopRequested("r1", 6.0))
    assert (stopped.status, stopped.cancel, stopped.phase) == ("cancelling", "pending", Live())


def test_a_settled_run_ignores_events() -> None:
    completed = feed(started(), text(1, "a"), done(2))
    assert receive(completed, text(3, "late")) == (completed, False)
