"""The pure reducer: run transitions, sequence guards, dropped actions, chat actions."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.state.actions import (
    Action,
    AttemptShown,
    BytesReceived,
    CancelSettled,
    ChatCreated,
    ChatListing,
    ChatLoaded,
    ChatSelected,
    ChatsListed,
    ErrorDismissed,
    ErrorRaised,
    EventReceived,
    EventsReceived,
    FrameSkipped,
    IssuesRecorded,
    NoticeDismissed,
    PreStreamFailed,
    ReplayStarted,
    ResumeFailed,
    ResumeStarted,
    RunRestored,
    RunStarted,
    StopRequested,
    StreamEnded,
    StreamFailed,
)
from app.state.reducer import reduce
from app.state.runs import receive
from app.state.state import (
    ChatState,
    ErrorInfo,
    GapHeld,
    Live,
    MessageState,
    Phase,
    Replaying,
    Resuming,
    RunState,
    RunStatus,
    State,
)
from app.state.trace import Gap, RunTrace
from app.wire.parts import TextPart, answer_text
from app.wire.protocol import ParsedEvent, SkippedFrame, StreamEvent, parse_event
from app.wire.text import Text

ERR = ErrorInfo("boom", "Boom")


def run(status: RunStatus = "receiving", **fields: Any) -> RunState:
    """Run ``r1`` of chat ``c1``."""
    fields.setdefault("trace", RunTrace("r1"))
    return RunState("r1", "c1", status=status, **fields)


def state_with(current: RunState, *, live: bool | None = None) -> State:
    """Chat ``c1`` (active) with one turn answered by ``current``."""
    is_live = current.status in ("connecting", "receiving", "cancelling") if live is None else live
    chat = ChatState(
        "c1",
        messages=(
            MessageState("u1", "user", text="question"),
            MessageState("a1", "assistant", reply_to="u1", run_ids=(current.run_id,)),
        ),
        runs={current.run_id: current},
        live_runs=(current.run_id,) if is_live else (),
        loaded=True,
    )
    return State(chats={"c1": chat}, chat_order=("c1",), active_chat_id="c1")


def event(event_type: str, seq: int, run_id: str = "r1", **fields: Any) -> EventReceived:
    """An EventReceived carrying a validated event (wire camelCase ``fields``)."""
    payload = {"type": event_type, "runId": run_id, "seq": seq, "done": False, **fields}
    parsed = parse_event(json.dumps(payload))
    assert isinstance(parsed, ParsedEvent), parsed
    return EventReceived("r1", 5.0, parsed.event)


def the_run(state: State) -> RunState:
    return state.chats["c1"].runs["r1"]


TRANSITIONS = [
    pytest.param(
        run("connecting"),
        event("text", 1, text="a"),
        {"status": "receiving", "last_seq": 1, "text": "a"},
        id="connecting-first-event-receiving",
    ),
    pytest.param(
        run(last_seq=1),
        event("done", 2, messageId="m9", stopReason="stop"),
        {"status": "completed", "stop_reason": "stop", "message_id": "m9"},
        id="done-stop-completes",
    ),
    pytest.param(
        run(last_seq=1),
        event("done", 2, messageId="m9", stopReason="length"),
        {"status": "completed", "stop_reason": "length", "is_partial": False},
        id="done-length-completes",
    ),
    pytest.param(
        run(last_seq=1),
        event("done", 2, messageId="m9", stopReason="cancelled"),
        {"status": "cancelled", "cancel": "confirmed"},
        id="done-cancelled-is-cancelled-confirmed",
    ),
    pytest.param(
        run(last_seq=1),
        event("error", 2, error="bad", code="rate_limited"),
        {"status": "failed", "reason": "error", "error": ErrorInfo("rate_limited", "bad")},
        id="error-event-fails",
    ),
    pytest.param(
        run(last_seq=1),
        event("error", 2, error="bad"),
        {"status": "failed", "error": ErrorInfo("stream_error", "bad")},
        id="error-event-without-code",
    ),
    pytest.param(
        run(),
        StreamEnded("r1", 5.0, "eof"),
        {"status": "interrupted", "reason": "eof", "can_resume": True},
        id="eof-without-terminal-interrupts",
    ),
    pytest.param(
        run("connecting"),
        StreamEnded("r1", 5.0, "network", "reset"),
        {"status": "interrupted", "reason": "network"},
        id="network-drop-interrupts",
    ),
    pytest.param(
        run(),
        StreamFailed("r1", 5.0, "timeout", ERR, timeout="idle"),
        {"status": "failed", "reason": "timeout", "error": ERR},
        id="timeout-fails",
    ),
    pytest.param(
        run(),
        StreamFailed("r1", 5.0, "protocol", ERR),
        {"status": "failed", "reason": "protocol"},
        id="protocol-error-fails",
    ),
    pytest.param(
        run(),
        StopRequested("r1", 5.0),
        {"status": "cancelling", "cancel": "pending", "is_live": False},
        id="stop-is-cancelling-at-once",
    ),
    pytest.param(
        run("cancelling", cancel="pending"),
        CancelSettled("r1", 5.0, "confirmed"),
        {"status": "cancelled", "cancel": "confirmed", "can_regenerate": True},
        id="cancel-confirmed",
    ),
    pytest.param(
        run("cancelling", cancel="pending"),
        CancelSettled("r1", 5.0, "unconfirmed"),
        {"status": "cancelled", "cancel": "unconfirmed"},
        id="cancel-unconfirmed",
    ),
    pytest.param(
        run("connecting", phase=Resuming(3), last_seq=3),
        ResumeFailed("r1", 5.0, "expired", ERR),
        {"status": "interrupted", "reason": "expired", "can_resume": False},
        id="resume-410-expired",
    ),
    pytest.param(
        run("interrupted", reason="eof", last_seq=3),
        ResumeStarted("r1", 5.0),
        {"status": "connecting", "resuming": True, "reason": None},
        id="resume-reconnects",
    ),
    pytest.param(
        run("cancelling", cancel="pending", last_seq=3),
        ResumeStarted("r1", 5.0, recovering=True),
        {"status": "connecting", "cancel": None, "resuming": True},
        id="recover-after-completion-won",
    ),
    pytest.param(
        run("cancelled", cancel="unconfirmed"),
        RunRestored("r1", 5.0, RunState("x", "c1", status="completed")),
        {"status": "completed", "run_id": "r1", "cancel": None},
        id="restore-from-history",
    ),
]


@pytest.mark.parametrize(("start", "action", "expected"), TRANSITIONS)
def test_run_transition(start: RunState, action: Action, expected: dict[str, Any]) -> None:
    after = the_run(reduce(state_with(start), action))
    assert {name: getattr(after, name) for name in expected} == expected


SEQ_GUARD = [
    pytest.param(
        False,
        3,
        {"last_seq": 3, "status": "receiving", "has_gap": False},
        (0, ()),
        id="next-seq-applied",
    ),
    pytest.param(
        False,
        2,
        {"last_seq": 2, "status": "receiving", "text": "ab"},
        (1, ()),
        id="duplicate-dropped",
    ),
    pytest.param(False, 1, {"last_seq": 2, "text": "ab"}, (1, ()), id="older-duplicate-dropped"),
    pytest.param(
        False,
        5,
        {"last_seq": 5, "has_gap": True, "is_partial": True, "text": "abX"},
        (0, (Gap(3, 5),)),
        id="live-gap-recorded-and-applied",
    ),
    pytest.param(
        True,
        3,
        {"last_seq": 3, "status": "receiving", "resuming": False},
        (0, ()),
        id="resume-next-seq-applied",
    ),
    pytest.param(
        True,
        5,
        {"last_seq": 2, "status": "interrupted", "reason": "gap", "text": "ab"},
        (0, (Gap(3, 5),)),
        id="resume-gap-interrupts",
    ),
    pytest.param(
        True,
        2,
        {"last_seq": 2, "status": "connecting", "resuming": True},
        (1, ()),
        id="resume-duplicate-dropped-still-resuming",
    ),
]


@pytest.mark.parametrize(("resuming", "seq", "expected", "counters"), SEQ_GUARD)
def test_sequence_guard(
    resuming: bool, seq: int, expected: dict[str, Any], counters: tuple[int, tuple[Gap, ...]]
) -> None:
    seeded = the_run(
        reduce(reduce(state_with(run()), event("text", 1, text="a")), event("text", 2, text="b"))
    )  # text "ab", last_seq 2
    phase = Resuming(seeded.last_seq) if resuming else Live()
    seeded = replace(seeded, status="connecting" if resuming else "receiving", phase=phase)
    after = the_run(reduce(state_with(seeded), event("text", seq, text="X")))
    assert {name: getattr(after, name) for name in expected} == expected
    assert (after.trace.duplicates_dropped, after.trace.gaps) == counters


@pytest.mark.parametrize(
    ("run_gaps", "trace_gaps", "news"),
    [
        pytest.param((Gap(3, 5),), (), True, id="a-replayed-seq-in-a-hole-of-the-run-is-news"),
        pytest.param((), (Gap(3, 5),), False, id="one-in-a-filled-hole-of-the-trace-is-not"),
    ],
)
def test_the_run_state_not_its_trace_says_which_seqs_are_missing(
    run_gaps: tuple[Gap, ...], trace_gaps: tuple[Gap, ...], news: bool
) -> None:
    """A replay re-reads seqs the page has seen: only those in a hole carry news (their chat
    effects apply once). The trace only records, and keeps a gap after it is filled."""
    replaying = replace(
        run(last_seq=6, status="connecting", has_gap=True, gaps=run_gaps),
        phase=Replaying(last_seq=3),
        trace=RunTrace("r1", gaps=trace_gaps),
    )
    _, is_news = receive(replaying, event("text", 4, text="d"))
    assert is_news is news


def test_a_live_gap_is_kept_by_the_run_until_a_replay_fills_it() -> None:
    seeded = the_run(reduce(state_with(run()), event("text", 1, text="a")))
    gapped = the_run(reduce(state_with(seeded), event("text", 4, text="d")))
    assert (gapped.gaps, gapped.trace.gaps, gapped.has_gap) == ((Gap(2, 4),), (Gap(2, 4),), True)


def test_skipped_frame_with_readable_seq_counts_as_seen() -> None:
    frame = SkippedFrame("unknown_type", "future", "r1", 3, "unknown event type 'future'")
    after = the_run(reduce(state_with(run(last_seq=2)), FrameSkipped("r1", 5.0, frame)))
    assert (after.last_seq, after.has_gap) == (3, False)
    assert after.trace.protocol_issues == ("unknown_type: unknown event type 'future'",)


def test_skipped_frame_without_seq_only_records_the_issue() -> None:
    frame = SkippedFrame("invalid_json", None, None, None, "expected value")
    after = the_run(reduce(state_with(run(last_seq=2)), FrameSkipped("r1", 5.0, frame)))
    assert (after.last_seq, after.trace.protocol_issues) == (2, ("invalid_json: expected value",))


def test_skipped_frame_of_another_run_is_foreign() -> None:
    frame = SkippedFrame("unknown_type", "future", "other", 3, "unknown")
    after = the_run(reduce(state_with(run(last_seq=2)), FrameSkipped("r1", 5.0, frame)))
    assert (after.last_seq, after.trace.foreign_dropped) == (2, 1)


# --- gap replay ---------------------------------------------------------------------------------


def gapped(status: RunStatus = "receiving", **fields: Any) -> RunState:
    """Run ``r1`` with text "ac" from seqs 1 and 3: seq 2 went missing on the live stream."""
    state = state_with(run())
    for action in (event("text", 1, text="a"), event("text", 3, text="c")):
        state = reduce(state, action)
    return replace(the_run(state), status=status, **fields)


def phase_view(phase: Phase) -> tuple[object, ...]:
    """A phase as a comparable tuple (a replay's parts as their text)."""
    match phase:
        case Live(contiguous=contiguous):
            return ("live", contiguous)
        case Resuming(after_seq=after):
            return ("resuming", after)
        case GapHeld():
            return ("held",)
        case Replaying(parts=parts, last_seq=last_seq):
            return ("replaying", answer_text(parts), last_seq)
    return ("restored",)


def replay_view(current: RunState) -> dict[str, Any]:
    """What a gap replay changes, in one comparable dict."""
    return {
        "status": current.status,
        "reason": current.reason,
        "text": current.text,
        "last_seq": current.last_seq,
        "has_gap": current.has_gap,
        "phase": phase_view(current.phase),
        "outcomes": [r.outcome for r in current.trace.replays],
    }


def unknown(seq: int) -> FrameSkipped:
    frame = SkippedFrame("unknown_type", "future", "r1", seq, "unknown event type 'future'")
    return FrameSkipped("r1", 5.0, frame)


def replayed(*seqs: int) -> list[Action]:
    """``text`` events of the whole answer "abcde": seq n carries its n-th letter."""
    return [event("text", n, text="abcde"[n - 1]) for n in seqs]


def done_at(seq: int) -> EventReceived:
    return event("done", seq, messageId="m9", stopReason="stop")


HELD = [done_at(4), ReplayStarted("r1", 5.0)]
RESUMED = [ResumeStarted("r1", 5.0)]
REPLAY = [
    pytest.param(
        gapped(),
        [done_at(4)],
        {"status": "receiving", "phase": ("held",), "last_seq": 4, "text": "ac"},
        id="terminal-after-a-gap-is-held",
    ),
    pytest.param(
        gapped(),
        HELD,
        {"status": "connecting", "phase": ("replaying", "", 0), "outcomes": [None]},
        id="replay-started-keeps-the-gapped-copy",
    ),
    pytest.param(
        gapped(),
        [*HELD, *replayed(1, 2)],
        {"status": "connecting", "text": "ac", "phase": ("replaying", "ab", 2), "has_gap": True},
        id="replayed-events-build-aside",
    ),
    pytest.param(
        gapped(),
        [*HELD, *replayed(1, 1), unknown(2)],
        {"phase": ("replaying", "a", 2)},
        id="replay-drops-duplicates-and-counts-unknown-types",
    ),
    pytest.param(
        gapped(),
        [*HELD, *replayed(1, 2, 3), done_at(4)],
        {"status": "completed", "text": "abc", "has_gap": False, "outcomes": ["filled"]},
        id="replay-terminal-swaps-and-completes",
    ),
    pytest.param(
        gapped(),
        [*HELD, *replayed(1, 3)],
        {
            "status": "interrupted",
            "reason": "gap",
            "text": "ac",
            "has_gap": True,
            "phase": ("live", False),
        },
        id="replay-gap-interrupts-keeping-the-live-copy",
    ),
    pytest.param(
        gapped(),
        [*HELD, ResumeFailed("r1", 5.0, "expired", ERR)],
        {"status": "interrupted", "reason": "expired", "text": "ac", "outcomes": ["expired"]},
        id="replay-410-expired",
    ),
    pytest.param(
        gapped(),
        [*HELD, ResumeFailed("r1", 5.0, "resume_failed", ERR)],
        {"status": "interrupted", "reason": "gap", "outcomes": ["failed"]},
        id="replay-request-failure-is-a-gap",
    ),
    pytest.param(
        gapped(),
        [*HELD, *replayed(1), StreamEnded("r1", 5.0, "eof")],
        {"status": "interrupted", "reason": "gap", "text": "ac", "outcomes": ["failed"]},
        id="replay-eof-before-catching-up-is-a-gap",
    ),
    pytest.param(
        gapped(),
        [*HELD, StreamFailed("r1", 5.0, "timeout", ERR, timeout="first_event")],
        {"status": "failed", "reason": "timeout", "text": "ac", "outcomes": ["failed"]},
        id="replay-timeout-fails",
    ),
    pytest.param(
        gapped(),
        [*HELD, *replayed(1), StopRequested("r1", 5.0)],
        {"status": "cancelling", "text": "ac", "has_gap": True, "phase": ("live", False)},
        id="stop-during-replay",
    ),
    pytest.param(
        gapped(),
        [done_at(4), StopRequested("r1", 5.0)],
        {"status": "cancelling", "phase": ("live", False), "outcomes": []},
        id="stop-while-the-terminal-is-held",
    ),
    pytest.param(
        gapped("interrupted", reason="eof"),
        RESUMED,
        {"status": "connecting", "reason": None, "phase": ("replaying", "", 0), "text": "ac"},
        id="resume-of-a-gapped-answer-replays-it-all",
    ),
    pytest.param(
        gapped("interrupted", reason="eof"),
        [*RESUMED, *replayed(1, 2)],
        {"status": "connecting", "text": "ac", "phase": ("replaying", "ab", 2)},
        id="replay-behind-the-live-copy-stays-aside",
    ),
    pytest.param(
        gapped("interrupted", reason="eof"),
        [*RESUMED, *replayed(1, 2, 3)],
        {"status": "receiving", "text": "abc", "has_gap": False, "phase": ("live", True)},
        id="replay-reaching-the-live-copy-swaps-and-goes-on",
    ),
    pytest.param(
        gapped("interrupted", reason="eof"),
        [*RESUMED, *replayed(1, 2, 3, 5)],
        {"status": "interrupted", "reason": "gap", "text": "abc", "has_gap": False},
        id="gap-after-catching-up-interrupts",
    ),
    pytest.param(
        gapped("interrupted", reason="eof"),
        [*RESUMED, *replayed(1, 2, 3, 4), done_at(5)],
        {"status": "completed", "text": "abcd", "has_gap": False, "phase": ("live", False)},
        id="caught-up-replay-continues-the-answer",
    ),
]


@pytest.mark.parametrize(("start", "actions", "expected"), REPLAY)
def test_gap_replay(start: RunState, actions: list[Action], expected: dict[str, Any]) -> None:
    state = state_with(start, live=True)
    for action in actions:
        state = reduce(state, action)
    view = replay_view(the_run(state))
    assert {name: view[name] for name in expected} == expected


UNCHANGED = [
    pytest.param(run("completed"), event("text", 9, text="late"), id="event-after-completed"),
    pytest.param(run("cancelling"), event("text", 9, text="late"), id="event-while-cancelling"),
    pytest.param(run("completed"), StopRequested("r1", 5.0), id="stop-after-completed"),
    pytest.param(
        run("receiving"), CancelSettled("r1", 5.0, "confirmed"), id="cancel-settled-without-stop"
    ),
    pytest.param(
        run("interrupted", reason="expired"), ResumeStarted("r1", 5.0), id="resume-of-expired-run"
    ),
    pytest.param(run("completed"), ResumeStarted("r1", 5.0), id="resume-of-completed-run"),
    pytest.param(
        run("receiving"), ResumeStarted("r1", 5.0, recovering=True), id="recover-without-stop"
    ),
    pytest.param(
        run("receiving"),
        ResumeFailed("r1", 5.0, "expired", ERR),
        id="resume-failed-when-not-resuming",
    ),
    pytest.param(
        run("receiving", trace=RunTrace("r1", first_byte=1.0)),
        BytesReceived("r1", 5.0),
        id="bytes-after-the-first",
    ),
    pytest.param(run("completed"), StreamEnded("r1", 5.0, "eof"), id="eof-after-terminal"),
    pytest.param(run("failed"), StreamFailed("r1", 5.0, "timeout", ERR), id="timeout-after-fail"),
    pytest.param(run("receiving"), IssuesRecorded("r1", 5.0, ()), id="no-issues"),
    pytest.param(
        run("receiving"), RunRestored("r1", 5.0, run("completed")), id="restore-of-a-live-run"
    ),
    pytest.param(
        run("receiving"),
        EventReceived("zz", 5.0, event("text", 1, text="a").event),
        id="action-for-unknown-run",
    ),
    pytest.param(
        run("receiving", last_seq=4),
        PreStreamFailed("r1", 5.0, ERR),
        id="pre-stream-error-after-events",
    ),
    pytest.param(
        run("cancelling"), StreamEnded("r1", 5.0, "eof"), id="aborted-reader-eof-while-cancelling"
    ),
    pytest.param(
        run("cancelling"),
        StreamEnded("r1", 5.0, "network", "abort"),
        id="aborted-reader-error-while-cancelling",
    ),
    pytest.param(
        run("cancelling"), StreamFailed("r1", 5.0, "timeout", ERR), id="timeout-while-cancelling"
    ),
    pytest.param(run("cancelling"), BytesReceived("r1", 5.0), id="bytes-while-cancelling"),
    pytest.param(
        run("cancelling"), IssuesRecorded("r1", 5.0, ("x",)), id="issues-while-cancelling"
    ),
    pytest.param(
        run("cancelling"),
        FrameSkipped("r1", 5.0, SkippedFrame("invalid_json", None, None, None, "x")),
        id="skipped-frame-while-cancelling",
    ),
    pytest.param(run("cancelling"), StopRequested("r1", 5.0), id="second-stop"),
    pytest.param(run("receiving"), RunStarted("r1", 1.0, "c1", "a9", "p"), id="run-started-twice"),
    pytest.param(
        run("receiving"),
        RunStarted("r9", 1.0, "nochat", "a9", "p"),
        id="run-started-in-unknown-chat",
    ),
    pytest.param(run("receiving"), ResumeStarted("r9", 1.0), id="resume-unknown-run"),
    pytest.param(run("receiving"), ReplayStarted("r1", 1.0), id="replay-without-a-held-terminal"),
    pytest.param(
        run("completed", phase=GapHeld()), ReplayStarted("r1", 1.0), id="replay-of-a-settled-run"
    ),
    pytest.param(
        run("receiving"), RunRestored("r9", 1.0, run("completed")), id="restore-unknown-run"
    ),
    pytest.param(run("receiving"), ChatSelected("c1"), id="select-the-active-chat"),
    pytest.param(run("receiving"), AttemptShown("a1", 0), id="show-the-shown-attempt"),
    pytest.param(run("receiving"), AttemptShown("nope", 1), id="show-attempt-unknown-message"),
    pytest.param(run("receiving"), ErrorDismissed(), id="dismiss-without-error"),
    pytest.param(run("receiving"), NoticeDismissed(), id="dismiss-without-notice"),
    pytest.param(run("receiving"), ChatsListed(()), id="empty-chat-list"),
]


@pytest.mark.parametrize(("start", "action"), UNCHANGED)
def test_action_that_changes_nothing_returns_the_same_state(
    start: RunState, action: Action
) -> None:
    state = state_with(start)
    assert reduce(state, action) is state


def test_action_for_a_settled_run_is_dropped_even_if_it_would_apply() -> None:
    state = state_with(run("receiving"), live=False)  # not current in its chat
    assert reduce(state, event("text", 1, text="a")) is state


def test_run_started_for_a_send_adds_a_turn_and_clears_the_composer() -> None:
    state = replace(
        State(chats={"c1": ChatState("c1", loaded=True)}, active_chat_id="c1"),
        composer_draft="old",
        last_error=ERR,
    )
    after = reduce(state, RunStarted("r1", 1.0, "c1", "a1", "hello", user_message_id="u1"))
    chat = after.chats["c1"]
    assert [(m.id, m.role, m.text, m.run_ids) for m in chat.messages] == [
        ("u1", "user", "hello", ()),
        ("a1", "assistant", "", ("r1",)),
    ]
    assert chat.live_runs == ("r1",) and after.is_generating
    assert (after.composer_draft, after.last_error) == ("", None)
    assert chat.runs["r1"].trace.request_start == 1.0


def test_run_started_for_a_regenerate_adds_an_attempt() -> None:
    state = state_with(run("completed"))
    after = reduce(
        state, RunStarted("r2", 1.0, "c1", "a1", "question", attempt=2, retry_of_run_id="r1")
    )
    answer = after.messages[1]
    assert (answer.run_ids, answer.shown) == (("r1", "r2"), 1)
    assert after.runs["r2"].attempt == 2 and after.runs["r2"].retry_of_run_id == "r1"


def test_pre_stream_failure_withdraws_the_turn_and_gives_the_prompt_back() -> None:
    state = state_with(run("connecting"))
    after = reduce(state, PreStreamFailed("r1", 5.0, ERR))
    assert (after.messages, after.composer_draft, after.last_error) == ((), "question", ERR)
    assert after.chats["c1"].live_runs == ()


def test_events_update_chat_and_store_level_state() -> None:
    state = state_with(run(last_seq=0))
    state = reduce(state, event("user_message_id", 1, messageId="srv_u1"))
    state = reduce(
        state,
        event(
            "context_info",
            2,
            usedTokens=50,
            maxTokens=100,
            ratio=0.5,
            severity="warning",
            compactionRecommended=True,
        ),
    )
    state = reduce(state, event("fallback_notice", 3, reason="cursor_expired", message="m"))
    assert state.messages[0].server_id == "srv_u1"
    assert state.context_info is not None and state.context_info.severity == "warning"
    assert state.fallback_notice is not None
    assert (state.fallback_notice.reason, state.fallback_notice.seq) == ("cursor_expired", 3)
    assert reduce(state, NoticeDismissed()).fallback_notice is None


def test_repeated_user_message_id_changes_nothing() -> None:
    state = reduce(state_with(run(last_seq=0)), event("user_message_id", 1, messageId="u"))
    again = reduce(state, event("user_message_id", 2, messageId="u"))
    assert again.messages == state.messages
    assert the_run(again).last_seq == 2


def test_bytes_received_records_first_byte_and_keepalives() -> None:
    state = reduce(state_with(run()), BytesReceived("r1", 3.0))
    state = reduce(state, BytesReceived("r1", 4.0, keepalives=2))
    state = reduce(state, IssuesRecorded("r1", 4.0, ("invalid-utf8: bytes",)))
    trace = the_run(state).trace
    assert (trace.first_byte, trace.keepalives, trace.protocol_issues) == (
        3.0,
        2,
        ("invalid-utf8: bytes",),
    )


def test_chat_list_updates_titles_and_times_and_keeps_a_made_chat_loaded() -> None:
    state = reduce(State(), ChatCreated("new"))
    assert (state.active_chat_id, state.chat_order) == ("new", ())
    listed = (ChatListing("a", "A", 2.0), ChatListing("new", "Renamed", 1.0))
    state = reduce(state, ChatsListed(listed))
    assert state.chat_order == ("a", "new")
    assert state.chats["new"].title == "Renamed" and state.chats["new"].loaded
    assert state.chats["a"].updated_at == 2.0
    assert reduce(state, ChatsListed(listed)) is state


def test_a_chat_the_list_no_longer_has_leaves_it_unless_it_is_answering() -> None:
    state = state_with(run("receiving"))
    state = replace(
        state, chat_order=("c1", "gone"), chats={**state.chats, "gone": ChatState("gone")}
    )
    state = reduce(state, ChatsListed((ChatListing("other", "O"),)))
    assert state.chat_order == ("c1", "other")


def test_loaded_history_never_replaces_what_was_streamed_here() -> None:
    state = state_with(run("receiving"))
    stale = ChatState("c1", "Title", messages=(), loaded=True)
    after = reduce(
        replace(state, chats={"c1": replace(state.chats["c1"], loaded=False)}), ChatLoaded(stale)
    )
    assert after.chats["c1"].messages == state.chats["c1"].messages
    assert after.chats["c1"].loaded
    assert reduce(state, ChatLoaded(stale)) is state


def test_loaded_history_keeps_the_cached_context_ring() -> None:
    cached = State(chats={"c1": ChatState("c1", context_info=None)})
    with_info = reduce(
        state_with(run(last_seq=0)),
        event(
            "context_info",
            1,
            usedTokens=1,
            maxTokens=2,
            ratio=0.5,
            severity="ok",
            compactionRecommended=False,
        ),
    )
    info = with_info.chats["c1"].context_info
    cached = State(chats={"c1": ChatState("c1", context_info=info)})
    after = reduce(cached, ChatLoaded(ChatState("c1", "T", loaded=True)))
    assert after.chats["c1"].context_info == info and after.chats["c1"].title == "T"


def test_error_raised_keeps_or_sets_the_draft() -> None:
    state = reduce(State(composer_draft="typed"), ErrorRaised(ERR))
    assert (state.last_error, state.composer_draft) == (ERR, "typed")
    assert reduce(state, ErrorRaised(ERR, draft="prompt")).composer_draft == "prompt"


# --- one network read, one action ----------------------------------------------------------------

SEQS = st.integers(1, 12)
CONTEXT = {
    "usedTokens": 1,
    "maxTokens": 9,
    "ratio": 0.1,
    "severity": "ok",
    "compactionRecommended": False,
}
_BATCH_EVENTS = st.one_of(
    st.tuples(st.just("text"), SEQS, st.fixed_dictionaries({"text": st.text("ab ", max_size=3)})),
    st.tuples(st.just("thinking_start"), SEQS, st.just({})),
    st.tuples(st.just("thinking"), SEQS, st.just({"text": "hm"})),
    st.tuples(st.just("text"), SEQS, st.just({"text": "x", "runId": "other"})),
    st.tuples(st.just("done"), SEQS, st.just({"messageId": "m1", "stopReason": "stop"})),
    st.tuples(st.just("context_info"), SEQS, st.just(CONTEXT)),
)


def _parsed(kind: str, seq: int, fields: dict[str, Any]) -> StreamEvent:
    payload = {"type": kind, "runId": "r1", "seq": seq, "done": kind == "done", **fields}
    parsed = parse_event(json.dumps(payload))
    assert isinstance(parsed, ParsedEvent)
    return parsed.event


@settings(max_examples=300, deadline=None)
@given(st.lists(_BATCH_EVENTS, max_size=14), st.booleans())
def test_a_read_applied_at_once_equals_its_events_one_by_one(
    drafts: list[tuple[str, int, dict[str, Any]]], started: bool
) -> None:
    """What the runner did per event (stop once the run no longer reads) is what one
    EventsReceived does, text stretches joined or not."""
    events = tuple(_parsed(*draft) for draft in drafts)
    first = (TextPart(Text("a")),) if started else ()
    trace = RunTrace("r1", first_content=1.0 if started else None)
    begin = state_with(run("receiving", parts=first, last_seq=1 if started else 0, trace=trace))
    one_by_one = begin
    for item in events:
        chat = one_by_one.chats["c1"]
        current = chat.runs["r1"]
        reading = current.is_live and not isinstance(current.phase, GapHeld)
        if "r1" not in chat.live_runs or not reading:  # NOTE: the runner's own check
            break
        one_by_one = reduce(one_by_one, EventReceived("r1", 5.0, item))
    at_once = reduce(begin, EventsReceived("r1", 5.0, events))
    assert the_run(at_once) == the_run(one_by_one)
    assert at_once.chats["c1"].context_info == one_by_one.chats["c1"].context_info
    assert at_once.chat_order == one_by_one.chat_order
