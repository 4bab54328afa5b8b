"""The device's copies (app/run/kept.py) and the page going offline and back (ChatStream)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from app.run.chat_stream import ChatStream
from app.run.config import ClientConfig
from app.run.kept import CHAT_LIST, MODELS, KeptApi, chat_key
from app.state.state import State
from app.ui.render import banner_html
from app.wire.api import ChatDetail, MessageOut
from app.wire.errors import HttpStatusError, TransportError
from tests.unit.fakes import FakeTransport, Ids, TickClock, detail, finish, until


class MemoryShelf:
    def __init__(self) -> None:
        self.kept: dict[str, str] = {}

    async def read(self, key: str) -> str | None:
        return self.kept.get(key)

    async def write(self, key: str, text: str) -> None:
        self.kept[key] = text

    async def remove(self, key: str) -> None:
        self.kept.pop(key, None)


class Unreachable:
    """Wraps the fake server: while ``down``, every request fails as with no network."""

    def __init__(self, fake: FakeTransport) -> None:
        self.fake, self.down, self.asked = fake, False, 0

    def __getattr__(self, name: str) -> Callable[..., Awaitable[Any]]:
        method = getattr(self.fake, name)

        async def call(*args: Any) -> Any:
            self.asked += 1
            if self.down:
                raise TransportError("Failed to fetch")
            return await method(*args)

        return call


def chat_with_answer(chat_id: str, title: str = "Rivers") -> ChatDetail:
    messages = [
        MessageOut(id="u1", role="user", text="Which river?"),
        MessageOut(
            id="a1",
            role="assistant",
            text="The Douro.",
            status="completed",
            run_id="r1",
            parent_id="u1",
            attempt=1,
        ),
    ]
    return detail(chat_id, messages, title)


def with_follow_up(chat: ChatDetail) -> ChatDetail:
    """``chat`` with one more prompt, sent from another device."""
    follow_up = MessageOut(id="u2", role="user", text="And the Tejo?", parent_id="a1")
    return chat.model_copy(update={"messages": [*chat.messages, follow_up]})


def kept_api(fake: FakeTransport) -> tuple[KeptApi, Unreachable, MemoryShelf, list[bool]]:
    server, shelf, reached = Unreachable(fake), MemoryShelf(), []
    return KeptApi(server, shelf, reached.append), server, shelf, reached  # type: ignore[arg-type]


async def test_reads_are_kept_as_answered_and_given_back_when_the_server_is_out_of_reach() -> None:
    fake = FakeTransport()
    fake.chats["c1"] = chat_with_answer("c1")
    api, server, shelf, reached = kept_api(fake)
    online = (await api.list_chats(), await api.get_chat("c1"), await api.list_models())
    assert set(shelf.kept) == {CHAT_LIST, chat_key("c1"), MODELS}
    server.down = True
    offline = (await api.list_chats(), await api.get_chat("c1"), await api.list_models())
    assert offline == online
    assert reached == [True, True, True, False, False, False]


@pytest.mark.parametrize(
    "read",
    [
        pytest.param(lambda api: api.get_chat("never-opened"), id="chat never opened"),
        pytest.param(lambda api: api.list_chats("douro"), id="a search"),
        pytest.param(lambda api: api.rename_chat("c1", "x"), id="a change"),
    ],
)
async def test_what_was_never_kept_or_is_not_a_read_fails_offline_as_it_would(
    read: Callable[[KeptApi], Awaitable[object]],
) -> None:
    fake = FakeTransport()
    fake.chats["c1"] = chat_with_answer("c1")
    api, server, _, reached = kept_api(fake)
    await api.list_chats("douro")
    server.down = True
    with pytest.raises(TransportError):
        await read(api)
    assert reached[-1] is False


async def test_an_error_the_server_sent_is_an_answer_never_replaced_by_a_copy() -> None:
    fake = FakeTransport()
    fake.chats["c1"] = chat_with_answer("c1")
    api, _, _, reached = kept_api(fake)
    await api.get_chat("c1")
    del fake.chats["c1"]
    with pytest.raises(HttpStatusError):
        await api.get_chat("c1")
    assert reached == [True, True]


async def test_a_deleted_chat_leaves_no_copy_and_a_refreshed_copy_is_the_latest() -> None:
    fake = FakeTransport()
    fake.chats["c1"] = chat_with_answer("c1")
    fake.chats["c2"] = chat_with_answer("c2", "Lakes")
    api, server, shelf, _ = kept_api(fake)
    await api.get_chat("c1")
    await api.get_chat("c2")
    await api.delete_chat("c1")
    assert chat_key("c1") not in shelf.kept
    fake.chats["c2"] = chat_with_answer("c2", "Lakes and rivers")
    await api.refresh_copy("c2")
    server.down = True
    await api.refresh_copy("c2")  # NOTE: out of reach: the copy stays
    assert (await api.get_chat("c2")).title == "Lakes and rivers"


def offline_stream(fake: FakeTransport) -> tuple[ChatStream, Unreachable]:
    holder: list[ChatStream] = []
    server = Unreachable(fake)
    api = KeptApi(
        server,  # type: ignore[arg-type]
        MemoryShelf(),
        lambda answered: holder[0].server_reached(answered),
    )
    config = ClientConfig(total_timeout_ms=3000, reach_probe_ms=10)
    holder.append(ChatStream(fake, api, config=config, clock=TickClock(), make_id=Ids()))
    return holder[0], server


async def test_out_of_reach_the_page_is_offline_asks_again_and_back_fetches_what_it_showed() -> (
    None
):
    fake = FakeTransport()
    fake.chats["c1"] = chat_with_answer("c1")
    chat, server = offline_stream(fake)
    await finish(chat.refresh_chats())
    assert await finish(chat.select_chat("c1"))
    server.down = True
    await finish(chat.refresh_chats())
    assert chat.get_state().offline
    assert chat.get_state().chat_order == ("c1",)  # NOTE: from the copy
    fake.chats["c1"] = with_follow_up(chat_with_answer("c1", "Rivers, renamed elsewhere"))
    asked = server.asked
    await asyncio.sleep(0.05)
    assert server.asked > asked  # NOTE: asked again while out of reach
    server.down = False
    await until(chat, lambda state: not state.offline)
    await until(chat, lambda state: len(state.chats["c1"].messages) == 3)
    assert chat.get_state().chats["c1"].title == "Rivers, renamed elsewhere"
    await chat.wait_idle()
    chat.close()


def test_the_offline_notice_says_what_works_and_what_waits() -> None:
    assert banner_html(State()) == ""
    notice = banner_html(State(offline=True))
    assert "data-offline" in notice
    assert "Offline" in notice
    assert "wait" in notice
