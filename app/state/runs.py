"""The run state machine of SPEC §5, one pure function per transition.

Each function takes a :class:`RunState` and an action and returns the next run, or the same
object when the action does not apply in the run's status. The sequence guard lives here:

- an event for another run is dropped (``trace.foreign_dropped``);
- ``seq <= last_seq`` is a duplicate, dropped (``trace.duplicates_dropped``);
- while resuming, the first event must be ``last_seq + 1``, else the run is ``interrupted``
  with reason ``gap``;
- on a live stream a gap (``seq > last_seq + 1``) is kept in the run's ``gaps`` (and recorded
  in ``trace.gaps``) and the run goes on with ``has_gap`` set; its terminal event is then held
  (phase ``GapHeld``), not applied;
- a gap replay (phase :class:`~app.state.state.Replaying`, started by :class:`ReplayStarted`,
  or by a resume of a gapped answer) must run 1, 2, 3…: it builds its parts aside until it
  reaches the live
  copy's ``last_seq``, then they replace the gapped parts at once and the answer ends as the
  replay's terminal event says. A replay that skips a seq, fails, or ends before it caught up
  leaves the run ``interrupted`` with reason ``gap`` (``expired`` on 410) and the gapped copy.

# NOTE: a live gap does not stop the answer, because later text is still worth showing, but
# the run can never look cleanly complete: its terminal event only counts once a replay has
# filled the gap, and ``has_gap`` keeps ``is_partial`` true until then.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TypeGuard

from app.state.actions import (
    BytesReceived,
    CancelSettled,
    EventReceived,
    FrameSkipped,
    IssuesRecorded,
    ReplayStarted,
    ResumeFailed,
    ResumeStarted,
    RunRestored,
    RunStarted,
    RunUpdate,
    StopRequested,
    StreamEnded,
    StreamFailed,
)
from app.state.state import (
    ErrorInfo,
    GapHeld,
    Live,
    Replaying,
    Restored,
    Resuming,
    RunState,
    RunStatus,
)
from app.state.trace import Gap, GapReplay, ReplayOutcome, Resume, RunTrace
from app.wire.parts import append_text, fold
from app.wire.protocol import (
    TERMINAL_TYPES,
    ContextInfoEvent,
    DoneEvent,
    ErrorEvent,
    FallbackNoticeEvent,
    StreamEvent,
    TextEvent,
    UserMessageIdEvent,
)

_CONTENT_DELTAS = frozenset({"text", "thinking"})  # what "first content" means in the trace


def new_run(action: RunStarted) -> RunState:
    """The run a send or regenerate starts, ``connecting``."""
    return RunState(
        run_id=action.run_id,
        chat_id=action.chat_id,
        attempt=action.attempt,
        retry_of_run_id=action.retry_of_run_id,
        trace=RunTrace(action.run_id, request_start=action.at),
    )


def reduce_run(run: RunState, action: RunUpdate) -> RunState:
    """The run after ``action``."""
    match action:
        case BytesReceived():
            return _bytes(run, action)
        case FrameSkipped():
            return _skipped(run, action)
        case IssuesRecorded():
            return _issues(run, action)
        case StreamEnded():
            return _ended(run, action)
        case StreamFailed():
            return _failed(run, action)
        case ReplayStarted():
            return _start_replay(run, action)
        case ResumeFailed():
            return _resume_failed(run, action)
        case StopRequested():
            return _stop(run, action)
        case CancelSettled():
            return _cancel_settled(run, action)


def receive(run: RunState, action: EventReceived) -> tuple[RunState, bool]:
    """The run after one event, and whether the event is news (its chat effects apply)."""
    event, at = action.event, action.at
    if _is_next_text(event, run):
        # NOTE: the hot path, one text delta in order: one copy of the run instead of two.
        return replace(run, last_seq=event.seq, parts=fold(run.parts, event)), True
    if not run.is_live:
        return run, False
    if event.run_id != run.run_id:
        return _trace(run, foreign_dropped=run.trace.foreign_dropped + 1), False
    unseen = _unseen(run, event.seq)
    terminal = event.type in TERMINAL_TYPES
    guarded, fresh = _guard(run, event.seq, at, terminal)
    if not fresh:
        return guarded, False
    if isinstance(guarded.phase, Replaying):
        return _apply_aside(guarded, guarded.phase, event, at), unseen
    if guarded.status == "connecting":
        guarded = replace(guarded, status="receiving")
    if terminal and guarded.has_gap:
        return replace(guarded, phase=GapHeld()), False
    return _apply(guarded, event, at), unseen


def _is_next_text(event: StreamEvent, run: RunState) -> TypeGuard[TextEvent]:
    """A text delta that the general path would only append: the very next seq, nothing else."""
    return is_next_text(event, run, run.last_seq)


def is_next_text(event: StreamEvent, run: RunState, last_seq: int) -> TypeGuard[TextEvent]:
    """``event`` is the text delta right after ``last_seq``, which ``run`` would only append."""
    return (
        type(event) is TextEvent
        and run.status == "receiving"
        and event.run_id == run.run_id
        and event.seq == last_seq + 1
        and type(run.phase) is Live
        and run.trace.first_content is not None
    )


def receive_texts(run: RunState, events: Sequence[TextEvent]) -> RunState:
    """The run after in-order text deltas that only append (see :func:`is_next_text`): one
    copy of the run for all of them."""
    delta = "".join(event.text for event in events)
    return replace(run, last_seq=events[-1].seq, parts=append_text(run.parts, delta))


def _unseen(run: RunState, seq: int) -> bool:
    """``seq`` never reached this run: past its last seq, or lost in a live gap."""
    return seq > run.last_seq or any(g.expected <= seq < g.got for g in run.gaps)


def _guard(run: RunState, seq: int, at: float, terminal: bool = False) -> tuple[RunState, bool]:
    """The run with ``seq`` seen, and whether it is new (the replay's guard while aside)."""
    if isinstance(run.phase, Replaying):
        return _guard_replay(run, run.phase, seq, at, terminal)
    return _guard_seq(run, seq, at)


def _guard_seq(run: RunState, seq: int, at: float) -> tuple[RunState, bool]:
    """The run with ``seq`` seen, and whether it is new (neither duplicate nor resume gap)."""
    trace = run.trace
    if seq <= run.last_seq:
        return _trace(run, duplicates_dropped=trace.duplicates_dropped + 1), False
    expected = run.last_seq + 1
    new = () if seq == expected else (Gap(expected, seq),)
    gaps = (*trace.gaps, *new)
    phase = run.phase
    strict = isinstance(phase, Resuming) or (isinstance(phase, Live) and phase.contiguous)
    if strict and seq != expected:
        return _settle(replace(run, reason="gap"), "interrupted", at, gaps=gaps), False
    if isinstance(phase, Resuming) and phase.rebuild:
        run = replace(run, parts=())  # NOTE: the log from seq 1 rebuilds what history showed
    advanced = replace(
        run,
        last_seq=seq,
        phase=phase if isinstance(phase, Live) else Live(),
        has_gap=run.has_gap or bool(new),
        gaps=(*run.gaps, *new),
        trace=replace(trace, gaps=gaps) if new else trace,
    )
    return advanced, True


def _guard_replay(
    run: RunState, replay: Replaying, seq: int, at: float, terminal: bool
) -> tuple[RunState, bool]:
    """Replayed seqs run 1, 2, 3…; reaching the live copy (or a terminal) swaps the parts."""
    if seq <= replay.last_seq:
        return _trace(run, duplicates_dropped=run.trace.duplicates_dropped + 1), False
    expected = replay.last_seq + 1
    if seq != expected:
        unfilled = replace(_unfill(run, "gap", at, Gap(expected, seq)), reason="gap")
        return _settle(unfilled, "interrupted", at), False
    if seq < run.last_seq and not terminal:
        return replace(run, phase=replace(replay, last_seq=seq)), True
    filled = replace(
        run,
        status="receiving",
        parts=replay.parts,
        last_seq=seq,
        has_gap=False,
        gaps=(),
        phase=Live(contiguous=True),
    )
    return replace(filled, trace=run.trace.with_replay_outcome("filled", at)), True


def _apply_aside(run: RunState, replay: Replaying, event: StreamEvent, at: float) -> RunState:
    """Build the replayed copy aside; the gapped copy stays on screen until it is caught up."""
    shadow = _apply(replace(run, parts=replay.parts), event, at)
    return replace(shadow, parts=run.parts, phase=replace(replay, parts=shadow.parts))


def _apply(run: RunState, event: StreamEvent, at: float) -> RunState:
    parts = fold(run.parts, event)  # NOTE: the one fold (a terminal event ends thinking too)
    if parts is not run.parts:
        run = replace(run, parts=parts)
    if isinstance(event, DoneEvent | ErrorEvent) and event.created_at is not None:
        run = replace(run, answered_at=event.created_at, model_id=event.model_id)
    match event:
        case DoneEvent(stop_reason="cancelled"):
            cancelled = replace(run, stop_reason="cancelled", cancel="confirmed")
            return _settle(replace(cancelled, message_id=event.message_id), "cancelled", at)
        case DoneEvent():
            done = replace(run, stop_reason=event.stop_reason, message_id=event.message_id)
            return _settle(done, "completed", at)
        case ErrorEvent():
            error = ErrorInfo(event.code or "stream_error", event.error)
            return _settle(replace(run, reason="error", error=error), "failed", at)
        case UserMessageIdEvent():
            return replace(run, user_message_id=event.message_id)
        case ContextInfoEvent() | FallbackNoticeEvent():
            return run  # NOTE: chat- and store-level: see reducer._event_effects
        case _:
            if event.type in _CONTENT_DELTAS and run.trace.first_content is None:
                return _trace(run, first_content=at)
            return run


def _bytes(run: RunState, action: BytesReceived) -> RunState:
    trace = run.trace
    if not run.is_live or (trace.first_byte is not None and not action.keepalives):
        return run
    first_byte = action.at if trace.first_byte is None else trace.first_byte
    return _trace(run, first_byte=first_byte, keepalives=trace.keepalives + action.keepalives)


def _skipped(run: RunState, action: FrameSkipped) -> RunState:
    """Record the issue; an unknown type's readable seq still counts as seen."""
    if not run.is_live:
        return run
    frame = action.frame
    run = replace(run, trace=run.trace.with_issue(f"{frame.reason}: {frame.detail}"))
    if frame.run_id is not None and frame.run_id != run.run_id:
        return _trace(run, foreign_dropped=run.trace.foreign_dropped + 1)
    seq = frame.seen_seq
    return run if seq is None else _guard(run, seq, action.at)[0]


def _issues(run: RunState, action: IssuesRecorded) -> RunState:
    if not run.is_live or not action.issues:
        return run
    trace = run.trace
    for issue in action.issues:
        trace = trace.with_issue(issue)
    return replace(run, trace=trace)


def _ended(run: RunState, action: StreamEnded) -> RunState:
    if not run.is_live:
        return run
    drop = f"{action.reason}: {action.detail}" if action.detail else action.reason
    reason = "gap" if run.filling_gap else action.reason
    ended = replace(_unfill(run, "failed", action.at), reason=reason)
    return _settle(ended, "interrupted", action.at, drops=(*run.trace.drops, drop))


def found_ended(run: RunState) -> RunState:
    """A settled run the server says is over: interrupted by a drop, it cannot resume."""
    if run.status != "interrupted" or run.reason not in ("eof", "network"):
        return run
    return replace(run, reason="ended")


def _failed(run: RunState, action: StreamFailed) -> RunState:
    if not run.is_live:
        return run
    failed = _unfill(run, "failed", action.at)
    failed = replace(failed, reason=action.reason, error=action.error)
    if action.reason == "protocol":
        failed = replace(failed, trace=failed.trace.with_issue(action.error.message))
    return _settle(failed, "failed", action.at, timeout_fired=action.timeout)


def _resume_failed(run: RunState, action: ResumeFailed) -> RunState:
    if not (run.status == "connecting" and run.resuming):
        return run
    expired = action.reason == "expired"
    reason = "gap" if isinstance(run.phase, Replaying) and not expired else action.reason
    failed = _unfill(run, "expired" if expired else "failed", action.at)
    failed = replace(failed, reason=reason, error=action.error)
    return _settle(failed, "interrupted", action.at)


def _stop(run: RunState, action: StopRequested) -> RunState:
    if not run.is_live:
        return run
    stopping = replace(
        _unfill(run, "stopped", action.at), status="cancelling", cancel="pending", phase=Live()
    )
    return _trace(stopping, cancel_requested=action.at, cancel_settled=None, cancel_outcome=None)


def _cancel_settled(run: RunState, action: CancelSettled) -> RunState:
    if run.status != "cancelling":
        return run
    settled = replace(run, cancel=action.confirmation)
    return _settle(
        settled,
        "cancelled",
        action.at,
        cancel_settled=action.at,
        cancel_outcome=action.confirmation,
    )


def start_resume(run: RunState, action: ResumeStarted) -> RunState:
    """``connecting`` again: after an interruption, or (``recovering``) after a lost cancel."""
    if action.recovering:
        if run.status != "cancelling":
            return run
        run = _trace(run, cancel_settled=action.at, cancel_outcome="completed_first")
    elif not run.can_resume:
        return run
    restored = isinstance(run.phase, Restored)
    after = 0 if restored or run.has_gap else run.last_seq
    mark = Resume(action.at, after, action.automatic, action.recovering)
    resumed = replace(run, reason=None, error=None, cancel=None)
    resumed = _trace(resumed, resumes=(*run.trace.resumes, mark), terminal=None, outcome=None)
    if run.has_gap:  # NOTE: reading on after last_seq would keep the hole: replay it all
        return _begin_replay(resumed, action.at)
    return replace(resumed, status="connecting", phase=Resuming(after, rebuild=restored))


def _start_replay(run: RunState, action: ReplayStarted) -> RunState:
    if not (run.is_live and isinstance(run.phase, GapHeld)):
        return run
    return _begin_replay(run, action.at)


def _begin_replay(run: RunState, at: float) -> RunState:
    """``connecting`` to the whole log; the gapped parts stay shown until it catches up."""
    replaying = replace(run, status="connecting", phase=Replaying())
    return _trace(replaying, replays=(*run.trace.replays, GapReplay(at)))


def _unfill(run: RunState, outcome: ReplayOutcome, at: float, gap: Gap | None = None) -> RunState:
    """Give up a replay still building aside: the gapped copy stays the answer."""
    if not run.filling_gap:
        return run
    trace = run.trace.with_replay_outcome(outcome, at, gap)
    return replace(run, phase=Live(), trace=trace)


def restore(run: RunState, action: RunRestored) -> RunState:
    """The server's record of a settled run, keeping this run's identity and trace."""
    if run.status not in ("completed", "cancelled", "interrupted", "failed"):
        return run
    stored = action.run
    restored = replace(
        stored,
        run_id=run.run_id,
        chat_id=run.chat_id,
        attempt=run.attempt,
        retry_of_run_id=run.retry_of_run_id,
        user_message_id=run.user_message_id,
        trace=run.trace,
    )
    return _settle(restored, stored.status, action.at)


def _settle(run: RunState, status: RunStatus, at: float, **trace: object) -> RunState:
    """``status`` with the trace's terminal time and outcome (plus ``trace`` fields); a run
    read back from the history stays ``Restored``, any other reading phase ends."""
    phase = run.phase if isinstance(run.phase, Restored) else Live()
    settled = replace(run, status=status, phase=phase)
    return _trace(settled, terminal=at, outcome=status, **trace)


def _trace(run: RunState, **changes: object) -> RunState:
    """``run`` with ``changes`` made to its trace."""
    return replace(run, trace=replace(run.trace, **changes))  # type: ignore[arg-type]
