"""Where a new prompt goes (app/run/placement.py): the server's tree decides, not the page."""

from __future__ import annotations

from app.run.chat_stream import ChatStream
from app.wire.errors import HttpStatusError
from tests.unit.fakes import (
    FakeTransport,
    Pause,
    Script,
    done,
    finish,
    make_stream,
    open_chat,
    text,
    until,
)


async def _stopped_before_any_word(fake: FakeTransport) -> ChatStream:
    chat = make_stream(fake)
    await open_chat(fake, chat)
    fake.runs.append(Script([Pause()]))
    first = chat.send("never starts")
    await until(chat, lambda s: s.runs["run_1"].status == "connecting")
    await finish(chat.stop())
    await finish(first)
    await until(chat, lambda s: s.runs["run_1"].status == "cancelled")
    return chat


async def test_a_follow_up_after_a_stop_before_any_word_follows_that_answer() -> None:
    fake = FakeTransport()
    chat = await _stopped_before_any_word(fake)
    fake.runs.append(Script([text(1, "b", "run_2"), done(2, "run_2")]))

    await finish(chat.send("follow-up"))
    await until(chat, lambda s: "run_2" in s.runs)

    body = fake.opened[-1]
    assert (body.after_run_id, body.at_top) == ("run_1", False)
    assert "run_1" in fake.polled
    prompts = [m.text for m in chat.get_state().messages if m.role == "user"]
    assert prompts == ["never starts", "follow-up"]


async def test_an_answer_the_server_never_had_is_skipped() -> None:
    fake = FakeTransport()
    chat = await _stopped_before_any_word(fake)
    fake.run_answers.append(HttpStatusError(404, "run_not_found", "no such run"))
    fake.runs.append(Script([text(1, "b", "run_2"), done(2, "run_2")]))

    await finish(chat.send("follow-up"))
    await until(chat, lambda s: "run_2" in s.runs)

    body = fake.opened[-1]
    assert (body.after_run_id, body.at_top) == (None, True)
