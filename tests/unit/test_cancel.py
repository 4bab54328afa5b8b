"""Stop end to end: cancelling at once, confirmation by the server, the completion race."""

from __future__ import annotations

from app.run.chat_stream import ChatStream
from app.wire.api import MessageOut
from app.wire.errors import HttpStatusError, TransportError
from tests.unit.fakes import (
    FakeTransport,
    Ids,
    Pause,
    Script,
    StatusLog,
    Step,
    TickClock,
    detail,
    done,
    finish,
    run_of,
    started,
    text,
    until,
)

FAST_CANCEL = {"cancel_deadline_ms": 60, "cancel_poll_ms": 5}


async def test_stop_before_the_first_byte_cancels_on_the_server() -> None:
    fake = FakeTransport()
    chat = ChatStream(fake, fake, clock=TickClock(), make_id=Ids())
    fake.chats["c1"] = detail("c1")
    await finish(chat.select_chat("c1"))
    fake.runs.append(Script([text(1, "never")], gate=Pause().gate))  # the POST is still pending
    log = StatusLog(chat)
    chat.send("x")
    await until(chat, lambda _: bool(fake.opened))

    stopping = chat.stop()
    assert run_of(chat).status == "cancelling"  # at once, before any network answer
    assert stopping is not None
    await finish(stopping)
    await chat.wait_idle()

    run = run_of(chat)
    assert log.seen == ["connecting", "cancelling/pending", "cancelled/confirmed"]
    assert (fake.released, fake.cancelled) == (["run_1"], ["run_1"])  # the pending POST aborted
    assert run.text == "" and run.trace.cancel_outcome == "confirmed"
    assert run.trace.cancel_latency is not None and run.trace.cancel_latency > 0
    assert not chat.get_state().is_generating


async def test_stop_mid_stream_keeps_partial_text_and_waits_for_confirmation() -> None:
    fake = FakeTransport()
    steps: list[Step] = [text(1, "Hello "), text(2, "wor"), Pause(), text(3, "ld")]
    chat = await started(fake, steps, cancel_poll_ms=5)
    fake.cancel_answers.append("running")
    fake.run_answers.extend(["running", "cancelled"])
    log = StatusLog(chat)
    chat.send("x")
    await until(chat, lambda s: s.runs["run_1"].last_seq == 2)

    await finish(chat.stop())

    run = run_of(chat)
    assert log.seen == ["connecting", "receiving", "cancelling/pending", "cancelled/confirmed"]
    assert (run.text, run.is_partial, run.can_regenerate) == ("Hello wor", True, True)
    assert fake.polled == ["run_1", "run_1"]


async def test_cancel_not_confirmed_before_the_deadline_is_unconfirmed() -> None:
    fake = FakeTransport()
    chat = await started(fake, [text(1, "a"), Pause()], **FAST_CANCEL)
    fake.cancel_answers.append("running")
    log = StatusLog(chat)
    chat.send("x")
    await until(chat, lambda s: s.runs["run_1"].status == "receiving")

    await finish(chat.stop())

    assert log.seen == ["connecting", "receiving", "cancelling/pending", "cancelled/unconfirmed"]
    assert len(fake.polled) >= 1
    assert run_of(chat).trace.cancel_outcome == "unconfirmed"


async def test_cancel_requests_failing_end_unconfirmed() -> None:
    fake = FakeTransport()
    chat = await started(fake, [text(1, "a"), Pause()], **FAST_CANCEL)
    fake.cancel_answers.append(TransportError("offline"))
    fake.run_answers.extend([HttpStatusError(404, "run_not_found", "no")] * 100)
    chat.send("x")
    await until(chat, lambda s: s.runs["run_1"].status == "receiving")

    await finish(chat.stop())

    assert run_of(chat).cancel == "unconfirmed"


async def test_stop_racing_completion_shows_the_complete_answer() -> None:
    fake = FakeTransport()
    chat = await started(fake, [text(1, "The answer "), Pause()])
    fake.cancel_answers.append("completed")
    fake.events.append(Script([text(1, "The answer "), text(2, "is 42."), done(3)]))
    log = StatusLog(chat)
    chat.send("x")
    await until(chat, lambda s: s.runs["run_1"].status == "receiving")

    await finish(chat.stop())

    run = run_of(chat)
    assert log.seen == [
        "connecting",
        "receiving",
        "cancelling/pending",
        "connecting",
        "receiving",
        "completed",
    ]
    assert (run.text, run.cancel, run.is_partial) == ("The answer is 42.", None, False)
    assert fake.resumed == [("run_1", 1)]
    assert run.trace.cancel_outcome == "completed_first"
    assert run.trace.resumes[-1].recovering


async def test_stop_racing_completion_falls_back_to_the_chat_history() -> None:
    fake = FakeTransport()
    chat = await started(fake, [text(1, "The answer "), Pause()])
    fake.cancel_answers.append("completed")
    fake.events.append(Script(error=HttpStatusError(410, "events_expired", "gone")))
    chat.send("x")
    await until(chat, lambda s: s.runs["run_1"].status == "receiving")
    fake.chats["c1"] = detail(
        "c1",
        [
            MessageOut(id="u1", role="user", text="x"),
            MessageOut(
                id="a1",
                role="assistant",
                text="The answer is 42.",
                status="completed",
                run_id="run_1",
                parent_id="u1",
            ),
        ],
    )

    await finish(chat.stop())

    run = run_of(chat)
    assert (run.status, run.text, run.cancel, run.attempt) == (
        "completed",
        "The answer is 42.",
        None,
        1,
    )
    assert run.message_id == "a1"
    assert chat.get_state().messages[1].run_ids == ("run_1",)


async def test_failed_recovery_keeps_the_run_interrupted() -> None:
    fake = FakeTransport()
    chat = await started(fake, [text(1, "The answer "), Pause()])
    fake.cancel_answers.append("completed")
    fake.events.append(Script(error=HttpStatusError(410, "events_expired", "gone")))
    chat.send("x")
    await until(chat, lambda s: s.runs["run_1"].status == "receiving")
    del fake.chats["c1"]

    await finish(chat.stop())

    run = run_of(chat)
    assert (run.status, run.reason, run.cancel, run.text) == (
        "interrupted",
        "expired",
        None,
        "The answer ",
    )


async def test_done_with_cancelled_ends_cancelled_and_confirmed() -> None:
    fake = FakeTransport()
    chat = await started(fake, [text(1, "a"), done(2, stop_reason="cancelled")])
    log = StatusLog(chat)

    await finish(chat.send("x"))

    assert log.seen == ["connecting", "receiving", "cancelled/confirmed"]
    assert fake.cancelled == []
