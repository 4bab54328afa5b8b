"""Run orchestration: sequence guards, resume, timeouts, protocol errors, live tool arguments."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from app.run.chat_stream import ChatStream, SendOptions
from app.state.state import Live, Replaying, State
from app.state.trace import Gap, format_trace
from app.ui.render import human_error
from app.wire.api import ModelInfo, ServerRunStatus
from app.wire.errors import HttpStatusError, TransportError
from app.wire.parts import ToolCallPart
from tests.unit.fakes import (
    KEEPALIVE,
    Drop,
    FakeTransport,
    Ids,
    Pause,
    Repeat,
    Script,
    StatusLog,
    Step,
    TextLog,
    TickClock,
    detail,
    done,
    finish,
    frame,
    run_of,
    started,
    text,
    until,
)

# --- stop ---------------------------------------------------------------------------------------


# --- sequence guards ----------------------------------------------------------------------------


async def test_duplicates_are_dropped_and_a_live_gap_is_filled_by_a_replay() -> None:
    fake = FakeTransport()
    chat = await started(
        fake, [text(1, "a"), text(2, "b"), text(2, "b"), text(1, "a"), text(4, "d"), done(5)]
    )
    fake.events.append(Script([text(1, "a"), text(2, "b"), text(3, "c"), text(4, "d"), done(5)]))
    log, texts = StatusLog(chat), TextLog(chat)

    await finish(chat.send("x"))

    run = run_of(chat)
    assert log.seen == ["connecting", "receiving", "connecting", "completed"]
    assert texts.seen == ["a", "ab", "abd", "abcd"]  # swapped at once: never joined, never doubled
    assert (run.text, run.has_gap, run.is_partial, run.stop_reason) == (
        "abcd",
        False,
        False,
        "stop",
    )
    assert fake.resumed == [("run_1", 0)]
    assert run.trace.duplicates_dropped == 2
    assert run.trace.gaps == (Gap(3, 4),)
    assert [r.outcome for r in run.trace.replays] == ["filled"]
    assert "gaps=3->4" in format_trace(run.trace) and "replays=filled" in format_trace(run.trace)


async def test_late_events_from_a_previous_run_are_dropped() -> None:
    fake = FakeTransport()
    chat = await started(fake, [text(1, "first"), done(2)])
    await finish(chat.send("one"))
    fake.runs.append(
        Script(
            [
                text(3, " LATE", run_id="run_1"),
                text(1, "second", run_id="run_2"),
                done(2, run_id="run_2"),
            ]
        )
    )

    await finish(chat.send("two"))

    state = chat.get_state()
    assert (state.runs["run_1"].text, state.runs["run_2"].text) == ("first", "second")
    assert state.runs["run_2"].trace.foreign_dropped == 1
    assert state.runs["run_1"].last_seq == 2


async def test_bad_json_frame_is_skipped_recorded_and_its_gap_filled_by_a_replay() -> None:
    fake = FakeTransport()
    chat = await started(fake, [text(1, "a"), b"id: 2\ndata: {not json\n\n", text(3, "c"), done(4)])
    fake.events.append(Script([text(1, "a"), text(2, "b"), text(3, "c"), done(4)]))

    await finish(chat.send("x"))

    run = run_of(chat)
    assert (run.status, run.text, run.has_gap) == ("completed", "abc", False)
    assert run.trace.gaps == (Gap(2, 3),)
    assert run.trace.protocol_issues[0].startswith("invalid_json")
    assert [r.outcome for r in run.trace.replays] == ["filled"]


async def test_events_after_the_terminal_event_in_the_same_read_are_ignored() -> None:
    fake = FakeTransport()
    chat = await started(fake, [text(1, "a") + done(2) + text(3, "ghost")])

    await finish(chat.send("x"))

    run = run_of(chat)
    assert (run.status, run.text, run.last_seq) == ("completed", "a", 2)
    assert "run_1" in fake.released  # the reader is released


async def test_decoder_issues_are_recorded_in_the_trace() -> None:
    fake = FakeTransport()
    chat = await started(fake, [b"colour: blue\n" + text(1, "a"), done(2)])

    await finish(chat.send("x"))

    run = run_of(chat)
    assert run.status == "completed"
    assert [i.split(":")[0] for i in run.trace.protocol_issues] == ["unknown-field"]


async def test_unknown_event_type_still_counts_its_seq_as_seen() -> None:
    fake = FakeTransport()
    chat = await started(fake, [text(1, "a"), frame("future_thing", 2), text(3, "c"), done(4)])

    await finish(chat.send("x"))

    run = run_of(chat)
    assert (run.status, run.text, run.has_gap, run.trace.gaps) == ("completed", "ac", False, ())
    assert run.trace.protocol_issues == ("unknown_type: unknown event type 'future_thing'",)
    assert fake.resumed == []  # no gap, no replay


# --- resume -------------------------------------------------------------------------------------


async def test_eof_without_terminal_is_interrupted_after_one_automatic_resume() -> None:
    fake = FakeTransport()
    chat = await started(fake, [text(1, "a"), text(2, "b")])
    fake.events.append(Script([]))
    log = StatusLog(chat)

    await finish(chat.send("x"))

    run = run_of(chat)
    assert log.seen == ["connecting", "receiving", "interrupted", "connecting", "interrupted"]
    assert (run.reason, run.text, run.can_resume) == ("eof", "ab", True)
    assert fake.resumed == [("run_1", 2)]
    assert run.trace.drops == ("eof", "eof")
    assert [r.automatic for r in run.trace.resumes] == [True]
    assert fake.polled == [], "an automatic resume does not ask whether the run is over"


async def test_dropped_connection_resumes_automatically_without_duplicating_text() -> None:
    fake = FakeTransport()
    chat = await started(fake, [text(1, "Hel"), text(2, "lo"), Drop()])
    fake.events.append(Script([text(2, "lo"), text(3, " world"), done(4)]))
    log = StatusLog(chat)

    await finish(chat.send("x"))

    run = run_of(chat)
    assert log.seen == [
        "connecting",
        "receiving",
        "interrupted",
        "connecting",
        "receiving",
        "completed",
    ]
    assert run.text == "Hello world"
    assert run.trace.drops == ("network: connection reset",)
    assert run.trace.duplicates_dropped == 1
    assert len(fake.opened) == 1  # never re-POSTed


async def test_a_drop_while_offline_waits_and_resumes_when_the_connection_is_back() -> None:
    fake, online = FakeTransport(), [False]
    chat = ChatStream(fake, fake, clock=TickClock(), make_id=Ids(), is_online=lambda: online[0])
    fake.chats["c1"] = detail("c1")
    await finish(chat.select_chat("c1"))
    fake.runs.append(Script([text(1, "a"), Drop()]))
    fake.events.append(Script([text(2, "b"), done(3)]))

    await finish(chat.send("x"))

    run = run_of(chat)
    assert (run.status, run.reason, run.can_resume, fake.resumed) == (
        "interrupted",
        "offline",
        True,
        [],
    )
    online[0] = True
    tasks = chat.resume_offline()
    assert len(tasks) == 1
    await finish(tasks[0])
    assert (run_of(chat).status, run_of(chat).text, fake.resumed) == (
        "completed",
        "ab",
        [("run_1", 1)],
    )
    assert [r.automatic for r in run_of(chat).trace.resumes] == [True]
    assert chat.resume_offline() == [], "nothing else was waiting"


async def test_a_stream_that_ends_while_offline_is_offline_too() -> None:
    fake = FakeTransport()
    chat = ChatStream(fake, fake, clock=TickClock(), make_id=Ids(), is_online=lambda: False)
    fake.chats["c1"] = detail("c1")
    await finish(chat.select_chat("c1"))
    fake.runs.append(Script([text(1, "a")]))

    await finish(chat.send("x"))

    assert (run_of(chat).reason, fake.resumed) == ("offline", [])


@pytest.mark.parametrize(
    ("server_status", "server_last_seq", "reason", "can_resume"),
    [
        pytest.param("interrupted", 1, "ended", False, id="over-and-all-seen"),
        pytest.param("failed", 0, "ended", False, id="over-with-fewer-events"),
        pytest.param("running", 1, "eof", True, id="still-running"),
        pytest.param("interrupted", 5, "eof", True, id="over-with-events-not-seen"),
    ],
)
async def test_a_resume_the_user_asked_for_that_brings_nothing_asks_if_more_can_come(
    server_status: ServerRunStatus, server_last_seq: int, reason: str, can_resume: bool
) -> None:
    fake = FakeTransport()
    chat = await started(fake, [text(1, "a")], auto_resume=False)
    await finish(chat.send("x"))
    fake.events.append(Script([]))
    fake.run_answers.append(server_status)
    fake.run_last_seq = server_last_seq

    task = chat.resume(chat.get_state().messages[1].id)
    assert task is not None
    await finish(task)

    run = run_of(chat)
    assert (run.status, run.reason, run.can_resume) == ("interrupted", reason, can_resume)
    assert fake.polled == ["run_1"]


async def test_a_run_found_over_offers_no_resume() -> None:
    fake = FakeTransport()
    chat = await started(fake, [text(1, "a")], auto_resume=False)
    await finish(chat.send("x"))
    fake.events.append(Script([]))
    fake.run_answers.append("interrupted")
    fake.run_last_seq = 1
    await finish(chat.resume(chat.get_state().messages[1].id))

    assert chat.resume(chat.get_state().messages[1].id) is None
    assert fake.resumed == [("run_1", 1)], "no second resume"


async def test_manual_resume_continues_after_the_last_seq() -> None:
    fake = FakeTransport()
    chat = await started(fake, [text(1, "a"), Drop()], auto_resume=False)
    fake.events.append(Script([text(2, "b"), done(3)]))
    await finish(chat.send("x"))
    answer = chat.get_state().messages[1]
    log = StatusLog(chat)

    task = chat.resume(answer.id)
    assert task is not None
    await finish(task)

    assert log.seen == ["connecting", "receiving", "completed"]
    assert run_of(chat).text == "ab"
    assert fake.resumed == [("run_1", 1)]
    assert [r.automatic for r in run_of(chat).trace.resumes] == [False]


async def test_resume_gap_interrupts_with_reason_gap() -> None:
    fake = FakeTransport()
    chat = await started(fake, [text(1, "a"), Drop()])
    fake.events.append(Script([text(3, "c"), done(4)]))

    await finish(chat.send("x"))

    run = run_of(chat)
    assert (run.status, run.reason, run.text) == ("interrupted", "gap", "a")
    assert run.trace.gaps == (Gap(2, 3),)
    assert "run_1" in fake.released


async def test_expired_event_log_offers_regenerate_only() -> None:
    fake = FakeTransport()
    chat = await started(fake, [text(1, "a"), Drop()])
    fake.events.append(Script(error=HttpStatusError(410, "events_expired", "Events expired")))

    await finish(chat.send("x"))

    run = run_of(chat)
    assert (run.status, run.reason, run.can_resume, run.can_regenerate) == (
        "interrupted",
        "expired",
        False,
        True,
    )
    assert run.error is not None and run.error.code == "events_expired"
    assert chat.resume("run_1") is None


async def test_resume_request_failure_stays_interrupted_and_resumable() -> None:
    fake = FakeTransport()
    chat = await started(fake, [text(1, "a"), Drop()])
    fake.events.append(Script(error=TransportError("offline")))

    await finish(chat.send("x"))

    run = run_of(chat)
    assert (run.status, run.reason, run.can_resume) == ("interrupted", "resume_failed", True)


async def test_a_resume_refused_for_too_many_readers_says_so_and_stays_resumable() -> None:
    fake = FakeTransport()
    chat = await started(fake, [text(1, "a"), Drop()])
    refused = HttpStatusError(429, "too_many_readers", "too many readers", retry_after=5)
    fake.events.append(Script(error=refused))

    await finish(chat.send("x"))

    run = run_of(chat)
    assert (run.status, run.reason, run.can_resume) == ("interrupted", "resume_failed", True)
    assert run.error is not None and run.error.code == "too_many_readers"
    assert human_error(run.error).startswith("This answer is open in too many places")


# --- gap replay ---------------------------------------------------------------------------------

GAPPED: list[Step] = [text(1, "a"), text(3, "c"), done(4)]  # seq 2 lost on the way
FULL: list[Step] = [text(1, "a"), text(2, "b"), text(3, "c"), done(4)]


async def test_replay_with_a_gap_too_interrupts_with_reason_gap_and_keeps_the_live_text() -> None:
    fake = FakeTransport()
    chat = await started(fake, GAPPED)
    fake.events.append(Script(GAPPED))
    log = StatusLog(chat)

    await finish(chat.send("x"))

    run = run_of(chat)
    assert log.seen == ["connecting", "receiving", "connecting", "interrupted"]
    assert (run.reason, run.text, run.has_gap, run.is_partial) == ("gap", "ac", True, True)
    assert (run.can_resume, run.can_regenerate, run.stop_reason) == (True, True, None)
    (replay,) = run.trace.replays
    assert (replay.outcome, replay.gap) == ("gap", Gap(2, 3))
    assert fake.released.count("run_1") == 2  # the live reader and the replay's are released


async def test_replay_410_interrupts_as_expired_regenerate_only() -> None:
    fake = FakeTransport()
    chat = await started(fake, GAPPED)
    fake.events.append(Script(error=HttpStatusError(410, "events_expired", "Events expired")))
    log = StatusLog(chat)

    await finish(chat.send("x"))

    run = run_of(chat)
    assert log.seen == ["connecting", "receiving", "connecting", "interrupted"]
    assert (run.reason, run.text, run.has_gap) == ("expired", "ac", True)
    assert (run.can_resume, run.can_regenerate) == (False, True)
    assert run.error is not None and run.error.code == "events_expired"
    assert [r.outcome for r in run.trace.replays] == ["expired"]


async def test_replay_request_failure_interrupts_with_gap_and_resume_replays_again() -> None:
    fake = FakeTransport()
    chat = await started(fake, GAPPED)
    fake.events.append(Script(error=TransportError("offline")))
    await finish(chat.send("x"))
    run = run_of(chat)
    assert (run.status, run.reason, run.text, run.can_resume) == ("interrupted", "gap", "ac", True)
    fake.events.append(Script(FULL))
    log = StatusLog(chat)

    await finish(chat.resume(chat.get_state().messages[1].id))

    run = run_of(chat)
    assert log.seen == ["connecting", "completed"]
    assert (run.text, run.has_gap, run.error) == ("abc", False, None)
    assert fake.resumed == [("run_1", 0), ("run_1", 0)]  # from seq 1 again, not after last_seq
    assert [r.outcome for r in run.trace.replays] == ["failed", "filled"]


async def test_replay_ending_without_a_terminal_event_interrupts_with_gap() -> None:
    fake = FakeTransport()
    chat = await started(fake, GAPPED)
    fake.events.append(Script(FULL[:-1]))
    texts = TextLog(chat)

    await finish(chat.send("x"))

    run = run_of(chat)
    assert (run.status, run.reason, run.text, run.has_gap) == ("interrupted", "gap", "ac", True)
    assert texts.seen == ["a", "ac"]  # the replayed copy stayed aside
    assert [r.outcome for r in run.trace.replays] == ["failed"]


async def test_replayed_error_event_fails_the_run_with_the_whole_partial_text() -> None:
    fake = FakeTransport()
    crash = frame("error", 4, error="boom", code="provider_error")
    chat = await started(fake, [*GAPPED[:2], crash])
    fake.events.append(Script([*FULL[:3], crash]))

    await finish(chat.send("x"))

    run = run_of(chat)
    assert (run.status, run.reason, run.text, run.has_gap) == ("failed", "error", "abc", False)
    assert run.error is not None and run.error.code == "provider_error"


async def test_drop_after_a_gap_resumes_by_replaying_from_the_first_seq() -> None:
    fake = FakeTransport()
    chat = await started(fake, [text(1, "a"), text(3, "c")])  # EOF: no terminal event
    fake.events.append(Script([*FULL[:3], text(4, "d"), done(5)]))
    log, texts = StatusLog(chat), TextLog(chat)

    await finish(chat.send("x"))

    run = run_of(chat)
    assert log.seen == [
        "connecting",
        "receiving",
        "interrupted",
        "connecting",
        "receiving",
        "completed",
    ]
    assert texts.seen == ["a", "ac", "abc", "abcd"]  # shown progressively once caught up
    assert (run.text, run.has_gap, fake.resumed) == ("abcd", False, [("run_1", 0)])
    assert [r.after_seq for r in run.trace.resumes] == [0]


async def test_gap_on_a_replay_after_it_caught_up_interrupts_without_a_hole() -> None:
    fake = FakeTransport()
    chat = await started(fake, [text(1, "a"), text(3, "c")])
    fake.events.append(Script([*FULL[:3], text(5, "e"), done(6)]))

    await finish(chat.send("x"))

    run = run_of(chat)
    assert (run.status, run.reason, run.text, run.has_gap) == ("interrupted", "gap", "abc", False)
    assert (run.last_seq, run.trace.gaps) == (3, (Gap(2, 3), Gap(4, 5)))


async def test_replay_applies_chat_effects_only_of_the_events_the_gap_lost() -> None:
    fake = FakeTransport()
    notice = frame("fallback_notice", 1, reason="model_changed", message="Other model")
    ring = frame(
        "context_info",
        2,
        usedTokens=50,
        maxTokens=100,
        ratio=0.5,
        severity="ok",
        compactionRecommended=False,
    )
    held = Pause()
    chat = await started(fake, [notice, text(3, "c"), held, done(4)])
    fake.events.append(Script([notice, ring, text(3, "c"), done(4)]))
    task = chat.send("x")
    await until(chat, lambda s: s.runs["run_1"].last_seq == 3)
    assert chat.get_state().fallback_notice is not None
    chat.dismiss_notice()
    held.gate.set()

    await finish(task)

    state = chat.get_state()
    assert state.fallback_notice is None  # seq 1 was seen live: replaying it raises no toast
    assert state.context_info is not None and state.context_info.ratio == 0.5  # seq 2: lost
    assert (run_of(chat).status, run_of(chat).text) == ("completed", "c")


async def test_stop_during_a_replay_is_cancelled_as_the_server_answers() -> None:
    fake = FakeTransport()
    chat = await started(fake, GAPPED, cancel_poll_ms=5)
    fake.events.append(Script([text(1, "a"), Pause()]))
    log = StatusLog(chat)
    chat.send("x")
    await until(
        chat, lambda s: isinstance(r := s.runs["run_1"].phase, Replaying) and r.last_seq == 1
    )

    await finish(chat.stop())

    run = run_of(chat)
    assert log.seen == [
        "connecting",
        "receiving",
        "connecting",
        "cancelling/pending",
        "cancelled/confirmed",
    ]
    assert (run.text, run.has_gap, run.is_partial, run.phase) == ("ac", True, True, Live())
    assert [r.outcome for r in run.trace.replays] == ["stopped"]
    assert fake.cancelled == ["run_1"]


async def test_stop_during_a_replay_of_a_finished_run_shows_the_server_result() -> None:
    fake = FakeTransport()
    chat = await started(fake, GAPPED, cancel_poll_ms=5)
    fake.events.extend([Script([text(1, "a"), Pause()]), Script(FULL)])
    fake.cancel_answers.append("completed")  # it ended before the cancel
    log = StatusLog(chat)
    chat.send("x")
    await until(
        chat, lambda s: isinstance(r := s.runs["run_1"].phase, Replaying) and r.last_seq == 1
    )

    await finish(chat.stop())

    run = run_of(chat)
    assert log.seen == [
        "connecting",
        "receiving",
        "connecting",
        "cancelling/pending",
        "connecting",
        "completed",
    ]
    assert (run.text, run.has_gap, run.trace.cancel_outcome) == ("abc", False, "completed_first")
    assert fake.resumed == [("run_1", 0), ("run_1", 0)]
    assert [r.outcome for r in run.trace.replays] == ["stopped", "filled"]


# --- timeouts -----------------------------------------------------------------------------------


async def test_first_event_timeout_fails_the_run() -> None:
    fake = FakeTransport()
    chat = await started(fake, [KEEPALIVE, Pause()], first_event_timeout_ms=30)
    log = StatusLog(chat)

    await finish(chat.send("x"))

    run = run_of(chat)
    assert log.seen == ["connecting", "failed"]
    assert (run.reason, run.trace.timeout_fired) == ("timeout", "first_event")
    assert run.error is not None and run.error.code == "first_event_timeout"
    assert run.trace.keepalives == 1
    assert fake.released == ["run_1"] and fake.cancelled == ["run_1"]  # best-effort server stop
    assert fake.cancel_reasons == ["first_event_timeout"], "the server is told why"


def slow_model(model_id: str, first_event_wait_ms: int | None) -> ModelInfo:
    return ModelInfo(
        id=model_id,
        label=model_id,
        available=True,
        supports_thinking=False,
        supports_tools=False,
        first_event_wait_ms=first_event_wait_ms,
    )


async def test_a_model_the_server_waits_longer_for_gets_a_longer_first_event_timeout() -> None:
    fake, pause = FakeTransport(), Pause()
    chat = await started(
        fake, [KEEPALIVE, pause, text(1, "late"), done(2)], first_event_timeout_ms=30
    )
    chat.set_models([slow_model("slow", 100), slow_model("quick", None)])

    task = chat.send("x", SendOptions(model_id="slow"))
    await asyncio.sleep(0.2)  # NOTE: far past the page's own 30 ms

    assert run_of(chat).status == "connecting"
    pause.gate.set()
    await finish(task)
    assert (run_of(chat).status, run_of(chat).text) == ("completed", "late")


async def test_a_model_the_server_says_nothing_of_keeps_the_page_s_timeout() -> None:
    fake = FakeTransport()
    chat = await started(fake, [KEEPALIVE, Pause()], first_event_timeout_ms=30)
    chat.set_models([slow_model("slow", 100), slow_model("quick", None)])

    await finish(chat.send("x", SendOptions(model_id="quick")))

    assert run_of(chat).trace.timeout_fired == "first_event"


async def test_first_event_timeout_covers_a_request_that_never_answers() -> None:
    fake = FakeTransport()
    chat = await started(fake, [], first_event_timeout_ms=30)
    fake.runs[0] = Script([text(1, "late")], gate=Pause().gate)  # no response headers, ever
    log = StatusLog(chat)

    await finish(chat.send("x"))

    run = run_of(chat)
    assert log.seen == ["connecting", "failed"]
    assert (run.reason, run.trace.timeout_fired) == ("timeout", "first_event")
    assert fake.cancelled == ["run_1"]


async def test_total_timeout_covers_a_resume_request_that_never_answers() -> None:
    fake = FakeTransport()
    chat = await started(fake, [text(1, "a"), Drop()], total_timeout_ms=80)
    fake.events.append(Script([], gate=Pause().gate))

    await finish(chat.send("x"))

    run = run_of(chat)
    assert (run.status, run.text, run.trace.timeout_fired) == ("failed", "a", "total")


async def test_idle_timeout_is_not_reset_by_keepalives_and_keeps_the_text() -> None:
    fake = FakeTransport()
    steps: list[Step] = [text(1, "partial"), Repeat(lambda _: KEEPALIVE)]
    chat = await started(fake, steps, idle_timeout_ms=40)
    loop = asyncio.get_running_loop()
    start = loop.time()

    await finish(chat.send("x"))

    assert loop.time() - start < 1.0  # promptly: the first event re-arms the watch
    run = run_of(chat)
    assert (run.status, run.text, run.trace.timeout_fired) == ("failed", "partial", "idle")
    assert run.error is not None and run.error.code == "idle_timeout"
    assert run.trace.keepalives >= 1
    assert fake.cancel_reasons == ["idle_timeout"]


async def test_total_timeout_fires_even_while_content_flows() -> None:
    fake = FakeTransport()
    steps = [Repeat(lambda i: text(i + 1, "x"))]
    chat = await started(fake, steps, total_timeout_ms=60, idle_timeout_ms=1000)

    await finish(chat.send("x"))

    run = run_of(chat)
    assert (run.status, run.trace.timeout_fired) == ("failed", "total")
    assert run.text and set(run.text) == {"x"}
    assert fake.cancel_reasons == ["total_timeout"]


# --- protocol errors and parts ------------------------------------------------------------------


async def test_event_too_large_fails_the_run_and_keeps_the_partial_answer() -> None:
    fake = FakeTransport()
    huge = b"data: " + b"x" * 500 + b"\n\n"
    chat = await started(fake, [text(1, "kept"), huge, text(2, "never")], max_event_bytes=200)

    await finish(chat.send("x"))

    run = run_of(chat)
    assert (run.status, run.reason, run.text) == ("failed", "protocol", "kept")
    assert run.error is not None and run.error.code == "event_too_large"
    assert "run_1" in fake.released


async def test_tool_call_arguments_grow_with_one_character_deltas() -> None:
    fake = FakeTransport()
    arguments = json.dumps({"query": "rio", "n": 12})
    deltas = [
        frame("tool_call_arguments_delta", i + 2, toolCallId="t1", delta=char)
        for i, char in enumerate(arguments)
    ]
    last = len(arguments) + 1
    steps = [
        frame("tool_call_started", 1, toolCallId="t1", toolName="search"),
        *deltas,
        frame(
            "tool_call_completed",
            last + 1,
            toolCallId="t1",
            toolName="search",
            arguments={"query": "rio", "n": 12, "lang": "pt"},
        ),
        frame("tool_result", last + 2, toolCallId="t1", result=["a", "b"], isError=False),
        done(last + 3),
    ]
    chat = await started(fake, steps)
    seen: list[dict[str, Any]] = []

    def watch(state: State, previous: State) -> None:
        run = state.runs.get("run_1")
        part = run.parts[0] if run is not None and run.parts else None
        if not isinstance(part, ToolCallPart) or part.status != "streaming":
            return
        if not seen or seen[-1] != part.arguments:
            seen.append(dict(part.arguments))

    chat.subscribe(watch)
    await finish(chat.send("x"))

    assert seen[0] == {}
    assert {"query": "r"} in seen and {"query": "ri"} in seen and {"query": "rio"} in seen
    assert {"query": "rio", "n": 1} in seen
    assert seen[-1] == {"query": "rio", "n": 12}
    (part,) = run_of(chat).parts
    assert isinstance(part, ToolCallPart)
    assert (part.status, part.arguments_text) == ("done", arguments)
    assert (part.arguments, part.result) == ({"query": "rio", "n": 12, "lang": "pt"}, ["a", "b"])


async def test_idle_timeout_waits_while_a_tool_awaits_the_users_decision() -> None:
    fake = FakeTransport()
    pause = Pause()
    asked = frame(
        "tool_approval_requested", 1, toolCallId="c", toolName="notes__save_note", arguments={}
    )
    decided = frame("tool_decided", 2, toolCallId="c", approved=True, by="user")
    result = frame("tool_result", 3, toolCallId="c", result={}, effect="done")
    chat = await started(fake, [asked, pause, decided, result, done(4)], idle_timeout_ms=40)
    sending = chat.send("save a note")
    await until(chat, lambda _state: bool(run_of(chat).parts))
    await asyncio.sleep(0.25)  # NOTE: several idle windows pass while the user decides
    assert run_of(chat).status == "receiving"
    pause.gate.set()

    await finish(sending)

    run = run_of(chat)
    assert (run.status, run.trace.timeout_fired) == ("completed", None)
    (part,) = run.parts
    assert isinstance(part, ToolCallPart) and part.effect == "done"
