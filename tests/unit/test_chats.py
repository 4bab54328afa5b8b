"""Chats on the server: list, history loaded once, creation, re-attaching a running run."""

from __future__ import annotations

import asyncio
from typing import Any

from app.wire.api import MessageOut
from app.wire.errors import HttpStatusError
from tests.unit.fakes import (
    FakeTransport,
    Pause,
    Script,
    detail,
    done,
    finish,
    make_stream,
    run_of,
    text,
    until,
)


async def test_select_chat_loads_history_with_attempts_once() -> None:
    fake = FakeTransport()
    chat = make_stream(fake)
    fake.chats["c1"] = detail(
        "c1",
        [
            MessageOut(id="u1", role="user", text="q"),
            MessageOut(
                id="a1",
                role="assistant",
                text="one",
                status="cancelled",
                run_id="r1",
                parent_id="u1",
                attempt=1,
            ),
            MessageOut(
                id="a2",
                role="assistant",
                text="two",
                status="completed",
                run_id="r2",
                parent_id="u1",
                attempt=2,
            ),
        ],
    )

    task = chat.select_chat("c1")
    assert task is not None
    assert chat.get_state().active_chat_id == "c1"
    assert await finish(task)
    assert chat.select_chat("c1") is None

    state = chat.get_state()
    answer = state.messages[1]
    assert (answer.run_ids, answer.shown) == (("r1", "r2"), 1)
    assert state.runs["r1"].cancel == "confirmed"
    assert state.runs["r2"].text == "two"


async def test_select_chat_failure_sets_the_error() -> None:
    fake = FakeTransport()
    chat = make_stream(fake)

    task = chat.select_chat("missing")
    assert task is not None
    assert not await finish(task)

    error = chat.get_state().last_error
    assert error is not None and error.code == "chat_not_found"
    chat.dismiss_error()
    assert chat.get_state().last_error is None


async def test_send_in_a_chat_still_loading_waits_for_its_history() -> None:
    fake = FakeTransport()
    chat = make_stream(fake)
    fake.chat_gate = asyncio.Event()
    fake.chats["c1"] = detail(
        "c1",
        [
            MessageOut(id="u0", role="user", text="earlier"),
            MessageOut(id="a0", role="assistant", text="ok", run_id="r0", parent_id="u0"),
        ],
    )
    fake.runs.append(Script([text(1, "hi"), done(2)]))
    chat.select_chat("c1")

    task = chat.send("now")
    assert task is not None
    assert chat.send("again") is None
    fake.chat_gate.set()
    await chat.wait_idle()

    assert [m.text for m in chat.get_state().messages if m.role == "user"] == ["earlier", "now"]
    assert fake.opened[0].after_run_id == "r0", "the prompt follows the answer loaded"


async def test_page_reload_reattaches_to_a_running_run() -> None:
    fake = FakeTransport()
    chat = make_stream(fake)
    fake.chats["c1"] = detail(
        "c1",
        [
            MessageOut(id="u1", role="user", text="q"),
            MessageOut(
                id="a1",
                role="assistant",
                text="Hel",
                status="running",
                run_id="r1",
                parent_id="u1",
                parts=[{"type": "text", "text": "Hel"}],
            ),
        ],
    )
    fake.events.append(Script([text(1, "Hel", "r1"), text(2, "lo", "r1"), done(3, "r1")]))

    chat.select_chat("c1")
    await chat.wait_idle()

    assert fake.resumed == [("r1", 0)]
    run = run_of(chat, "r1")
    assert (run.status, run.text, run.last_seq) == ("completed", "Hello", 3)


async def test_refresh_chats_lists_the_server_chats() -> None:
    fake = FakeTransport()
    chat = make_stream(fake)
    fake.chats["c1"] = detail("c1", title="First")
    fake.chats["c2"] = detail("c2", title="Second")

    await chat.refresh_chats()

    state = chat.get_state()
    assert state.chat_order == ("c1", "c2")
    assert [state.chats[c].title for c in state.chat_order] == ["First", "Second"]


async def test_a_new_chat_is_named_here_and_listed_with_its_first_event() -> None:
    fake = FakeTransport()
    chat = make_stream(fake)
    gate = asyncio.Event()
    fake.runs.append(Script([text(1, "hi"), Pause(gate), done(2)]))

    task = chat.send("hello")
    assert task is not None
    state = chat.get_state()
    chat_id = state.active_chat_id
    assert chat_id is not None and chat_id.startswith("chat_")
    assert state.chat_order == (), "not listed before the server has made it"
    await until(chat, lambda s: bool(s.chat_order))
    body = fake.opened[0]
    assert (body.chat_id, body.at_top, body.after_run_id) == (chat_id, True, None)
    assert chat.get_state().chat_order == (chat_id,), "listed once its answer streams"
    gate.set()
    await chat.wait_idle()


async def test_a_refused_first_send_lists_nothing_and_gives_the_prompt_back() -> None:
    fake = FakeTransport()
    chat = make_stream(fake)
    fake.runs.append(Script(error=HttpStatusError(503, "model_unavailable", "busy")))

    await finish(chat.send("hello"))

    state = chat.get_state()
    assert state.chat_order == () and state.messages == ()
    assert state.composer_draft == "hello"
    assert state.last_error is not None and state.last_error.code == "model_unavailable"
    fake.runs.append(Script([text(1, "ok"), done(2)]))
    assert chat.send("hello again") is not None  # not stuck
    await chat.wait_idle()
    assert fake.opened[-1].chat_id == state.active_chat_id, "the same chat, tried again"


async def test_send_into_a_chat_that_cannot_load_gives_the_prompt_back() -> None:
    fake = FakeTransport()
    chat = make_stream(fake)
    chat.select_chat("gone")
    await chat.wait_idle()

    await finish(chat.send("hello"))

    state = chat.get_state()
    assert state.composer_draft == "hello" and fake.opened == []
    assert state.last_error is not None and state.last_error.code == "chat_not_found"


async def test_chat_list_failure_sets_the_error() -> None:
    fake = FakeTransport()
    chat = make_stream(fake)

    async def refuse() -> Any:
        raise HttpStatusError(401, "unauthenticated", "Log in")

    fake.list_chats = refuse  # type: ignore[method-assign]
    await chat.refresh_chats()

    error = chat.get_state().last_error
    assert error is not None and (error.code, error.status) == ("unauthenticated", 401)


async def test_send_without_a_chat_creates_one_first() -> None:
    fake = FakeTransport()
    chat = make_stream(fake)
    fake.runs.append(Script([text(1, "hi"), done(2)]))

    task = chat.send("hello")
    assert task is not None
    await chat.wait_idle()

    state = chat.get_state()
    assert state.active_chat_id == "chat_1"
    assert state.chat_order == ("chat_1",)
    assert fake.opened[0].chat_id == "chat_1"
    assert run_of(chat).status == "completed"
