"""Prompts queued offline (app/state/outbox.py) and sent once, in order (ChatStream)."""

from __future__ import annotations

from typing import Any

import pytest

from app.run.chat_stream import ChatStream
from app.state.outbox import (
    Outbox,
    QueuedPrompt,
    find,
    kept_outbox,
    marked,
    next_to_send,
    queued,
    waiting_in,
    without,
)
from app.ui.render import queued_html
from app.wire.api import AttachmentInfo
from app.wire.errors import HttpStatusError, TransportError
from tests.unit.fakes import (
    FakeTransport,
    Script,
    detail,
    done,
    finish,
    make_stream,
    text,
    until,
)

NOTES = AttachmentInfo(attachment_id="att_1", name="a.txt", size=3, mime_type="text/plain")
A = QueuedPrompt("run_a", "c1", "first")
B = QueuedPrompt("run_b", "c1", "second")
C = QueuedPrompt("run_c", "c2", "elsewhere")


def test_prompts_wait_in_order_each_once_and_go_one_at_a_time() -> None:
    outbox = queued(queued(queued((), A), B), A)
    assert outbox == (A, B)
    assert next_to_send(outbox) == A
    going = marked(outbox, "run_a", sending=True)
    assert next_to_send(going) is None  # NOTE: B follows A's answer, never beside it
    assert next_to_send(marked(going, "run_a", sending=False)) == A
    assert next_to_send(without(going, "run_a")) == B
    assert without(outbox, "run_x") is outbox
    assert marked(outbox, "run_a", sending=False) is outbox
    assert waiting_in((A, C, B), "c1") == (A, B)
    assert find(outbox, "run_b") == B
    assert find(outbox, "run_x") is None


def test_the_kept_outbox_reads_back_as_queued_and_drops_what_is_not_a_prompt() -> None:
    full = QueuedPrompt(
        "run_f",
        "c3",
        "with everything",
        thinking_enabled=True,
        reasoning_effort="high",
        tool_intent=True,
        model_id="demo",
        attachments=(NOTES,),
        sending=True,
    )
    kept: list[object] = [
        A.to_json(),
        full.to_json(),
        {"runId": "", "chatId": "c1", "prompt": "no run id"},
        {"runId": "run_z", "prompt": "no chat"},
        {**B.to_json(), "attachments": [{"nonsense": True}]},
        "not an object",
        A.to_json(),  # NOTE: the same run id twice is one prompt
    ]
    restored = kept_outbox(kept)
    assert restored == (A, QueuedPrompt(**{**_fields(full), "sending": False}))
    assert kept_outbox({"not": "a list"}) == ()
    assert kept_outbox("[]") == ()


def _fields(item: QueuedPrompt) -> dict[str, Any]:
    return {name: getattr(item, name) for name in QueuedPrompt.__slots__}


def answer(run_id: str, words: str = "Hello") -> Script:
    return Script([text(1, words, run_id), done(2, run_id)])


async def offline_chat(fake: FakeTransport) -> ChatStream:
    chat = make_stream(fake)
    fake.chats["c1"] = detail("c1")
    await finish(chat.refresh_chats())
    assert await finish(chat.select_chat("c1"))
    chat.server_reached(False)
    return chat


async def test_a_prompt_sent_offline_waits_with_its_run_id_and_nothing_is_asked() -> None:
    fake = FakeTransport()
    chat = await offline_chat(fake)
    assert chat.send("Is the Douro long?") is not None  # NOTE: taken: the composer empties
    assert chat.send("And the Tejo?") is not None
    state = chat.get_state()
    assert [(q.chat_id, q.prompt) for q in state.outbox] == [
        ("c1", "Is the Douro long?"),
        ("c1", "And the Tejo?"),
    ]
    assert len({q.run_id for q in state.outbox}) == 2
    assert fake.opened == []
    html = queued_html(state)
    assert html.count("data-queued") == 2
    assert "Waiting for the connection" in html
    chat.close()


async def test_back_online_the_queue_goes_in_order_each_with_its_own_run_id_once() -> None:
    fake = FakeTransport()
    chat = await offline_chat(fake)
    chat.send("one")
    chat.send("two")
    run_ids = [q.run_id for q in chat.get_state().outbox]
    fake.runs.extend([answer(run_ids[0], "Um"), answer(run_ids[1], "Dois")])
    chat.server_reached(True)
    await chat.wait_idle()
    assert [(body.prompt, body.run_id) for body in fake.opened] == list(
        zip(["one", "two"], run_ids, strict=True)
    )
    assert fake.opened[1].after_run_id == run_ids[0]  # NOTE: the second follows the first
    state = chat.get_state()
    assert state.outbox == ()
    assert [state.chats["c1"].runs[r].status for r in run_ids] == ["completed", "completed"]
    assert [state.chats["c1"].runs[r].text for r in run_ids] == ["Um", "Dois"]


async def test_a_request_whose_answer_was_lost_is_attached_to_never_answered_twice() -> None:
    fake = FakeTransport()
    chat = await offline_chat(fake)
    chat.send("one")
    run_id = chat.get_state().outbox[0].run_id
    fake.runs.append(Script(error=HttpStatusError(409, "run_exists", "you already have a run")))
    fake.events.append(answer(run_id, "Answered once"))
    chat.server_reached(True)
    await chat.wait_idle()
    assert fake.resumed == [(run_id, 0)]
    run = chat.get_state().chats["c1"].runs[run_id]
    assert (run.status, run.text) == ("completed", "Answered once")


async def test_no_answer_again_puts_it_back_to_wait_and_the_page_offline() -> None:
    fake = FakeTransport()
    chat = await offline_chat(fake)
    chat.send("one")
    chat.send("two")
    fake.runs.append(Script(error=TransportError("Failed to fetch")))
    chat.server_reached(True)
    await until(chat, lambda state: state.offline and not any(q.sending for q in state.outbox))
    state = chat.get_state()
    assert state.offline
    assert [(q.prompt, q.sending) for q in state.outbox] == [("one", False), ("two", False)]
    assert len(fake.opened) == 1  # NOTE: the second never went past the first
    assert state.chats["c1"].runs == {}
    assert state.last_error is None
    chat.close()


async def test_a_prompt_the_server_refuses_leaves_the_queue_and_comes_back_with_why() -> None:
    fake = FakeTransport()
    chat = await offline_chat(fake)
    chat.send("too long")
    chat.send("fine")
    first, second = (q.run_id for q in chat.get_state().outbox)
    fake.runs.append(Script(error=HttpStatusError(400, "invalid_body", "prompt too long")))
    fake.runs.append(answer(second))
    chat.server_reached(True)
    await chat.wait_idle()
    state = chat.get_state()
    assert state.outbox == ()
    assert state.composer_draft == "too long"
    assert state.last_error is not None and state.last_error.code == "invalid_body"
    assert first not in state.chats["c1"].runs
    assert state.chats["c1"].runs[second].status == "completed"


async def test_a_waiting_prompt_can_be_taken_back_to_edit_or_removed_before_it_goes() -> None:
    fake = FakeTransport()
    chat = await offline_chat(fake)
    chat.send("typo here")
    chat.send("drop me")
    chat.send("keep me")
    edit, drop, keep = (q.run_id for q in chat.get_state().outbox)
    chat.edit_queued(edit)
    chat.remove_queued(drop)
    state = chat.get_state()
    assert [q.run_id for q in state.outbox] == [keep]
    assert state.composer_draft == "typo here"
    fake.runs.append(answer(keep))
    chat.server_reached(True)
    await chat.wait_idle()
    assert [body.run_id for body in fake.opened] == [keep]


async def test_a_prompt_on_its_way_can_be_neither_edited_nor_removed() -> None:
    fake = FakeTransport()
    chat = await offline_chat(fake)
    chat.send("one")
    run_id = chat.get_state().outbox[0].run_id
    going: Outbox = marked(chat.get_state().outbox, run_id, sending=True)
    chat.restore_outbox(going)
    chat.edit_queued(run_id)
    chat.remove_queued(run_id)
    assert chat.get_state().outbox == going
    assert "Sending" in queued_html(chat.get_state())
    assert "remove-queued" not in queued_html(chat.get_state())
    chat.close()


async def test_a_new_chat_made_offline_and_a_reloaded_queue_come_back_and_go() -> None:
    fake = FakeTransport()
    chat = await offline_chat(fake)
    chat.new_chat()
    chat.send("a new chat, offline")
    item = chat.get_state().outbox[0]
    assert item.chat_id != "c1" and chat.get_state().active_chat_id == item.chat_id
    kept = kept_outbox([q.to_json() for q in chat.get_state().outbox])
    chat.close()

    again = make_stream(fake)  # NOTE: the page reloaded, online
    again.restore_outbox(kept)
    assert item.chat_id in again.get_state().chats
    fake.runs.append(answer(item.run_id))
    await finish(again.send_queued())
    body = fake.opened[-1]
    assert (body.chat_id, body.run_id, body.at_top) == (item.chat_id, item.run_id, True)
    assert again.get_state().chats[item.chat_id].runs[item.run_id].status == "completed"


@pytest.mark.parametrize("offline", [True, False])
async def test_a_send_while_prompts_wait_goes_after_them(offline: bool) -> None:
    fake = FakeTransport()
    chat = await offline_chat(fake)
    chat.send("first")
    if not offline:
        chat.server_reached(True)  # NOTE: the first is on its way
        fake.runs.append(answer(chat.get_state().outbox[0].run_id))
    chat.send("second")
    assert [q.prompt for q in chat.get_state().outbox][-1] == "second"
    chat.close()
