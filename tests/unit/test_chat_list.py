"""Managing chats from the page: rename, delete, search (store commands over a fake server)."""

from __future__ import annotations

from app.state.state import EditingTitle, NotEditing
from app.wire.errors import HttpStatusError, TransportError
from tests.unit.fakes import (
    FakeTransport,
    Script,
    detail,
    done,
    finish,
    make_stream,
    open_chat,
    text,
)


async def _listed(*titles: str) -> tuple[FakeTransport, object]:
    fake = FakeTransport()
    for number, title in enumerate(titles, start=1):
        fake.chats[f"c{number}"] = detail(f"c{number}", title=title)
    chat = make_stream(fake)
    await finish(chat.refresh_chats())
    return fake, chat


async def test_rename_shows_at_once_and_asks_the_server() -> None:
    fake = FakeTransport()
    chat = make_stream(fake)
    await open_chat(fake, chat)
    await finish(chat.refresh_chats())
    chat.set_editing(EditingTitle())
    task = chat.rename_chat("c1", "  Trip   to Rio ")
    assert chat.get_state().chats["c1"].title == "Trip to Rio"
    assert chat.get_state().editing == NotEditing()
    await finish(task)
    assert fake.renamed == [("c1", "Trip to Rio")]


async def test_a_refused_rename_puts_the_old_title_back_and_says_why() -> None:
    fake = FakeTransport()
    chat = make_stream(fake)
    await open_chat(fake, chat)
    await finish(chat.refresh_chats())
    fake.change_error = TransportError("offline")
    await finish(chat.rename_chat("c1", "New name"))
    state = chat.get_state()
    assert state.chats["c1"].title == "Chat"
    assert state.last_error is not None and state.last_error.code == "network_error"


async def test_a_blank_or_unchanged_title_asks_nothing() -> None:
    fake = FakeTransport()
    chat = make_stream(fake)
    await open_chat(fake, chat)
    assert chat.rename_chat("c1", "   ") is None
    assert chat.rename_chat("c1", "Chat") is None
    assert fake.renamed == []


async def test_delete_removes_the_chat_and_shows_a_new_one() -> None:
    fake = FakeTransport()
    chat = make_stream(fake)
    await open_chat(fake, chat)
    await finish(chat.refresh_chats())
    await finish(chat.delete_chat("c1"))
    state = chat.get_state()
    assert fake.deleted == ["c1"]
    assert (state.active_chat_id, state.chat_order, "c1" in state.chats) == (None, (), False)


async def test_a_refused_delete_keeps_the_chat_and_says_why() -> None:
    fake = FakeTransport()
    chat = make_stream(fake)
    await open_chat(fake, chat)
    await finish(chat.refresh_chats())
    fake.change_error = HttpStatusError(500, "internal", "boom")
    await finish(chat.delete_chat("c1"))
    state = chat.get_state()
    assert state.chat_order == ("c1",) and state.active_chat_id == "c1"
    assert state.last_error is not None and state.last_error.code == "internal"


async def test_deleting_a_chat_already_gone_on_the_server_removes_it_here() -> None:
    fake = FakeTransport()
    chat = make_stream(fake)
    await open_chat(fake, chat)
    await finish(chat.refresh_chats())
    del fake.chats["c1"]
    await finish(chat.delete_chat("c1"))
    assert chat.get_state().chat_order == () and chat.get_state().last_error is None


async def test_deleting_a_chat_while_it_answers_closes_its_stream() -> None:
    from tests.unit.fakes import Pause

    fake = FakeTransport()
    chat = make_stream(fake)
    await open_chat(fake, chat)
    fake.runs.append(Script([text(1, "a"), Pause(), done(2)]))
    chat.send("q")
    from tests.unit.fakes import until

    await until(chat, lambda s: s.is_generating and s.runs["run_1"].last_seq == 1)
    await finish(chat.delete_chat("c1"))
    await chat.wait_idle()
    assert "run_1" in fake.released
    assert "c1" not in chat.get_state().chats


async def test_search_lists_what_the_server_found_and_ignores_stale_answers() -> None:
    fake = FakeTransport()
    for chat_id, title in (("c1", "Rivers"), ("c2", "Music"), ("c3", "River trips")):
        fake.chats[chat_id] = detail(chat_id, title=title)
    chat = make_stream(fake)
    await finish(chat.refresh_chats())
    stale = chat.search("mus")
    fresh = chat.search("river")
    await finish(stale)
    await finish(fresh)
    search = chat.get_state().search
    assert search is not None and (search.query, search.chat_ids) == ("river", ("c1", "c3"))
    assert fake.searched[-2:] == ["mus", "river"]
    assert chat.search("  river ") is None, "the same words ask nothing again"
    chat.search("")
    assert chat.get_state().search is None
