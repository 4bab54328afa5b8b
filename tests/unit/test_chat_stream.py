"""The chat stream store driven end to end by a scripted transport (SPEC §5, §6)."""

from __future__ import annotations

from typing import Any

import pytest

from app.run.chat_stream import ChatStream, SendOptions, new_id
from app.state.state import State
from app.state.trace import RunTrace
from app.wire.api import MessageOut
from app.wire.errors import HttpStatusError, TransportError
from tests.unit.fakes import (
    FakeTransport,
    Ids,
    Pause,
    Script,
    StatusLog,
    TickClock,
    detail,
    done,
    finish,
    frame,
    make_stream,
    open_chat,
    run_of,
    text,
    until,
)


async def test_send_streams_text_until_done() -> None:
    fake = FakeTransport()
    chat = make_stream(fake)
    await open_chat(fake, chat)
    fake.runs.append(
        Script(
            [
                frame("user_message_id", 1, messageId="u_1"),
                text(2, "Olá"),
                text(3, ", mundo"),
                done(4),
            ]
        )
    )
    log = StatusLog(chat)

    task = chat.send("oi", SendOptions(model_id="demo", thinking_enabled=True))
    assert task is not None
    assert chat.get_state().is_generating
    await finish(task)

    run = run_of(chat)
    assert log.seen == ["connecting", "receiving", "completed"]
    assert run.text == "Olá, mundo"
    assert (run.stop_reason, run.message_id, run.last_seq, run.is_partial) == (
        "stop",
        "m_run_1",
        4,
        False,
    )
    assert not chat.get_state().is_generating
    body = fake.opened[0]
    assert (body.run_id, body.chat_id, body.prompt, body.model_id) == ("run_1", "c1", "oi", "demo")
    assert body.thinking_enabled and body.retry_of_run_id is None
    user, answer = chat.get_state().messages
    assert (user.role, user.text, user.server_id) == ("user", "oi", "u_1")
    assert (answer.role, answer.reply_to, answer.run_ids) == ("assistant", user.id, ("run_1",))
    trace = run.trace
    times = (trace.request_start, trace.first_byte, trace.first_content, trace.terminal)
    assert times == tuple(sorted(t for t in times if t is not None))  # all set, in this order
    assert trace.outcome == "completed"


async def test_send_is_refused_while_generating_and_for_an_empty_prompt() -> None:
    fake = FakeTransport()
    chat = make_stream(fake)
    await open_chat(fake, chat)
    gate = Pause()
    fake.runs.append(Script([text(1, "a"), gate, done(2)]))

    assert chat.send("   ") is None
    first = chat.send("one")
    assert first is not None
    assert chat.send("two") is None
    gate.gate.set()
    await first
    assert len(fake.opened) == 1


async def test_a_pre_stream_error_that_says_when_to_try_again_knows_the_moment() -> None:
    fake = FakeTransport()
    chat = ChatStream(fake, fake, clock=lambda: 1_000.0, make_id=Ids())
    await open_chat(fake, chat)
    error = HttpStatusError(503, "model_unavailable", "Model unavailable", retry_after=2.5)
    fake.runs.append(Script(error=error))

    await finish(chat.send("my prompt"))

    last_error = chat.get_state().last_error
    assert last_error is not None and last_error.retry_at == 3_500.0, "2.5 s after it failed"


async def test_pre_stream_error_keeps_the_prompt_in_the_composer() -> None:
    fake = FakeTransport()
    chat = make_stream(fake)
    await open_chat(fake, chat)
    error = HttpStatusError(503, "model_unavailable", "Model unavailable", retry_after=5)
    fake.runs.append(Script(error=error))
    log = StatusLog(chat)

    task = chat.send("my long prompt")
    assert task is not None
    await finish(task)

    state = chat.get_state()
    assert log.seen == ["connecting"]
    assert state.messages == ()
    assert state.composer_draft == "my long prompt"
    assert state.last_error is not None
    assert (state.last_error.code, state.last_error.status, state.last_error.retry_after) == (
        "model_unavailable",
        503,
        5,
    )
    assert not state.is_generating


async def test_a_send_that_gets_no_answer_at_all_waits_in_the_outbox_with_its_run_id() -> None:
    fake = FakeTransport()
    chat = make_stream(fake)
    await open_chat(fake, chat)
    fake.runs.append(Script(error=TransportError("offline")))

    task = chat.send("hello")
    assert task is not None
    await finish(task)

    state = chat.get_state()
    assert state.offline
    assert [(q.run_id, q.prompt) for q in state.outbox] == [("run_1", "hello")]
    assert state.chats["c1"].messages == ()  # NOTE: shown as waiting, not as a turn
    assert state.last_error is None and state.composer_draft == ""
    chat.close()


async def test_error_event_fails_the_run_with_its_code_and_keeps_the_text() -> None:
    fake = FakeTransport()
    chat = make_stream(fake)
    await open_chat(fake, chat)
    fake.runs.append(
        Script(
            [
                text(1, "partial"),
                frame("error", 2, error="provider exploded", code="provider_error"),
            ]
        )
    )
    log = StatusLog(chat)

    await finish(chat.send("x"))

    run = run_of(chat)
    assert log.seen == ["connecting", "receiving", "failed"]
    assert (run.reason, run.text) == ("error", "partial")
    assert run.error is not None and run.error.code == "provider_error"
    assert run.can_regenerate and not run.can_resume


async def test_regenerate_adds_an_attempt_and_never_joins_texts() -> None:
    fake = FakeTransport()
    chat = make_stream(fake)
    await open_chat(fake, chat)
    fake.runs.append(Script([text(1, "first answer"), done(2)]))
    await finish(chat.send("q", SendOptions(model_id="m1")))
    answer = chat.get_state().messages[1]
    fake.runs.append(Script([text(1, "second", run_id="run_2"), done(2, run_id="run_2")]))
    log = StatusLog(chat, "run_2")

    task = chat.regenerate(answer.id, SendOptions(model_id="m1", thinking_enabled=True))
    assert task is not None
    await finish(task)

    state = chat.get_state()
    (message,) = [m for m in state.messages if m.role == "assistant"]
    assert fake.opened[1].thinking_enabled is True
    assert len(state.messages) == 2
    assert (message.run_ids, message.shown) == (("run_1", "run_2"), 1)
    assert (state.runs["run_1"].text, state.runs["run_2"].text) == ("first answer", "second")
    assert (state.runs["run_2"].attempt, state.runs["run_2"].retry_of_run_id) == (2, "run_1")
    body = fake.opened[1]
    assert (body.retry_of_run_id, body.prompt, body.model_id) == ("run_1", "q", "m1")
    assert log.seen == ["connecting", "receiving", "completed"]

    chat.show_attempt(message.id, 0)
    assert chat.get_state().messages[1].shown == 0
    chat.show_attempt(message.id, 5)
    assert chat.get_state().messages[1].shown == 0


async def test_regenerate_pre_stream_error_withdraws_only_the_new_attempt() -> None:
    fake = FakeTransport()
    chat = make_stream(fake)
    await open_chat(fake, chat)
    fake.runs.append(Script([text(1, "kept"), done(2)]))
    await finish(chat.send("q"))
    fake.runs.append(Script(error=HttpStatusError(503, "model_unavailable", "down")))

    await finish(chat.regenerate("run_1"))

    state = chat.get_state()
    assert [(m.role, m.run_ids, m.shown) for m in state.messages] == [
        ("user", (), 0),
        ("assistant", ("run_1",), 0),
    ]
    assert state.composer_draft == ""
    assert state.last_error is not None and state.last_error.code == "model_unavailable"


async def test_regenerate_needs_the_prompt_it_answers() -> None:
    fake = FakeTransport()
    chat = make_stream(fake)
    fake.chats["c1"] = detail("c1", [MessageOut(id="a1", role="assistant", text="orphan")])
    await open_chat(fake, chat)

    assert chat.regenerate("a1") is None
    assert fake.opened == []


async def test_regenerate_is_refused_while_the_answer_is_streaming() -> None:
    fake = FakeTransport()
    chat = make_stream(fake)
    await open_chat(fake, chat)
    gate = Pause()
    fake.runs.append(Script([text(1, "a"), gate, done(2)]))
    task = chat.send("q")
    await until(chat, lambda s: s.runs["run_1"].status == "receiving")

    assert chat.regenerate("run_1") is None
    assert chat.resume("run_1") is None
    gate.gate.set()
    await finish(task)


async def test_switching_chats_never_mixes_streams_and_coming_back_shows_the_truth() -> None:
    fake = FakeTransport()
    chat = make_stream(fake)
    await open_chat(fake, chat, "A")
    gate = Pause()
    fake.runs.append(
        Script(
            [
                frame(
                    "context_info",
                    1,
                    usedTokens=10,
                    maxTokens=100,
                    ratio=0.1,
                    severity="ok",
                    compactionRecommended=False,
                ),
                text(2, "for A "),
                gate,
                text(3, "still A"),
                done(4),
            ]
        )
    )
    task_a = chat.send("in A")
    await until(chat, lambda s: s.runs["run_1"].text == "for A ")

    await open_chat(fake, chat, "B")
    assert chat.get_state().context_info is None  # B has no context info yet
    fake.runs.append(Script([text(1, "for B", run_id="run_2"), done(2, run_id="run_2")]))
    assert not chat.get_state().is_generating  # A's run does not block B's composer
    await finish(chat.send("in B"))
    gate.gate.set()
    await finish(task_a)

    state = chat.get_state()
    b_texts = [state.runs[r].text for m in state.messages for r in m.run_ids]
    assert b_texts == ["for B"]
    assert chat.select_chat("A") is None  # loaded already: the local truth is shown at once
    state = chat.get_state()
    assert state.context_info is not None and state.context_info.used_tokens == 10
    assert state.runs["run_1"].status == "completed"
    assert state.runs["run_1"].text == "for A still A"
    assert set(state.context_cache) == {"A"}


async def test_new_chat_shows_an_empty_composer() -> None:
    fake = FakeTransport()
    chat = make_stream(fake)
    await open_chat(fake, chat)

    chat.new_chat()

    state = chat.get_state()
    assert (state.active_chat_id, state.messages, state.is_generating) == (None, (), False)


async def test_fallback_notice_is_shown_and_dismissed() -> None:
    fake = FakeTransport()
    chat = make_stream(fake)
    await open_chat(fake, chat)
    fake.runs.append(
        Script(
            [
                frame("fallback_notice", 1, reason="model_changed", message="Switched model"),
                frame("continuation_transition", 2, mode="replay", recovered=False),
                text(3, "ok"),
                frame("continuation_transition", 4, mode="replay", recovered=True),
                done(5),
            ]
        )
    )

    await finish(chat.send("x"))

    notice = chat.get_state().fallback_notice
    assert notice is not None and (notice.reason, notice.chat_id) == ("model_changed", "c1")
    assert [type(p).__name__ for p in run_of(chat).parts] == ["ContinuationPart", "TextPart"]
    chat.dismiss_notice()
    assert chat.get_state().fallback_notice is None


async def test_trace_hook_is_called_when_a_run_settles() -> None:
    fake = FakeTransport()
    traces: list[RunTrace] = []
    chat = ChatStream(fake, fake, clock=TickClock(), make_id=Ids(), on_trace=traces.append)
    await open_chat(fake, chat)
    fake.runs.append(Script([text(1, "a"), text(1, "a"), done(2)]))

    await finish(chat.send("x"))

    assert [(t.run_id, t.outcome, t.duplicates_dropped) for t in traces] == [
        ("run_1", "completed", 1),
    ]


async def test_a_broken_listener_does_not_stop_the_stream() -> None:
    fake = FakeTransport()
    errors: list[BaseException] = []
    chat = ChatStream(fake, fake, clock=TickClock(), make_id=Ids(), on_error=errors.append)
    await open_chat(fake, chat)
    fake.runs.append(Script([text(1, "a"), done(2)]))

    def broken(state: State, previous: State) -> None:
        raise RuntimeError("view bug")

    chat.subscribe(broken)
    await finish(chat.send("x"))

    assert run_of(chat).status == "completed"
    assert errors and all(isinstance(e, RuntimeError) for e in errors)


async def test_close_aborts_readers_and_cancels_tasks() -> None:
    fake = FakeTransport()
    chat = make_stream(fake)
    await open_chat(fake, chat)
    fake.runs.append(Script([text(1, "a"), Pause()]))
    task = chat.send("x")
    await until(chat, lambda s: s.runs["run_1"].status == "receiving")

    chat.close()
    await chat.wait_idle()

    assert task is not None and task.cancelled()
    assert fake.released == ["run_1"]


async def test_commands_on_unknown_or_user_messages_do_nothing() -> None:
    fake = FakeTransport()
    chat = make_stream(fake)
    assert (chat.resume("x"), chat.regenerate("x"), chat.stop()) == (None, None, None)
    await open_chat(fake, chat)
    fake.runs.append(Script([text(1, "a"), done(2)]))
    await finish(chat.send("q"))
    user = chat.get_state().messages[0]

    assert chat.regenerate(user.id) is None
    assert chat.resume("run_1") is None  # completed: nothing to resume
    assert chat.stop() is None


async def test_a_bug_in_a_background_task_is_reported() -> None:
    fake = FakeTransport()
    errors: list[BaseException] = []
    chat = ChatStream(fake, fake, clock=TickClock(), make_id=Ids(), on_error=errors.append)
    await open_chat(fake, chat)

    async def broken_open(body: Any) -> Any:
        raise ValueError("bug")

    fake.open_run = broken_open  # type: ignore[method-assign]
    task = chat.send("x")
    await chat.wait_idle()

    assert task is not None and isinstance(task.exception(), ValueError)

    assert [type(e) for e in errors] == [ValueError]


@pytest.mark.parametrize("prefix", ["run", "msg"])
def test_new_id_is_prefixed_and_unique(prefix: str) -> None:
    first, second = new_id(prefix), new_id(prefix)
    assert first.startswith(f"{prefix}_") and len(first) == len(prefix) + 33
    assert first != second


def test_report_error_shows_a_request_error_in_the_banner() -> None:
    stream = ChatStream(FakeTransport(), FakeTransport())
    stream.report_error(HttpStatusError(404, "chat_not_found", "gone"))
    error = stream.get_state().last_error
    assert error is not None and (error.code, error.status) == ("chat_not_found", 404)


@pytest.mark.parametrize(
    ("options", "effort"),
    [
        pytest.param(
            SendOptions(thinking_enabled=True, reasoning_effort="high"), "high", id="kept"
        ),
        pytest.param(SendOptions(reasoning_effort="low"), None, id="dropped-without-thinking"),
    ],
)
def test_the_request_body_carries_an_effort_only_with_thinking(
    options: SendOptions, effort: str | None
) -> None:
    body = options.body("c1", "hi", "run_1")
    assert (body.thinking_enabled, body.reasoning_effort) == (options.thinking_enabled, effort)


async def test_compact_asks_the_api_and_a_failure_shows_in_the_banner() -> None:
    fake = FakeTransport()
    chat = make_stream(fake)
    await finish(chat.compact("c1"))
    assert fake.compacted == ["c1"] and chat.get_state().last_error is None

    async def refused(chat_id: str) -> Any:
        raise HttpStatusError(503, "model_unavailable", "busy")

    fake.compact_chat = refused  # type: ignore[method-assign]
    await finish(chat.compact("c1"))
    error = chat.get_state().last_error
    assert error is not None and error.code == "model_unavailable"


async def test_a_compacted_chat_shows_its_smaller_context_at_once() -> None:
    fake = FakeTransport()
    chat = make_stream(fake)
    await open_chat(fake, chat)
    chat_id = chat.get_state().active_chat_id
    assert chat_id is not None
    await finish(chat.compact(chat_id))
    info = chat.get_state().context_info
    assert info is not None
    assert (info.ratio, info.severity, info.compaction_recommended) == (0.1, "ok", False)
