"""What the page keeps on the device so that it opens and reads with no server (SPEC §11).

:class:`KeptApi` is a :class:`~app.run.transport.ChatApi` in front of the real one. Each read
a page needs to start and show chats (the chat list, a chat's history, the models) is kept on a
:class:`Shelf` as the server answered it; when the server cannot be reached (a
:class:`~app.wire.errors.TransportError`: no answer at all) the kept copy is returned instead,
and the failure is raised only where nothing was kept. Every request also tells
``on_reach(True|False)`` whether the server answered, which is how the page learns that it is
offline and that it is back. An error the server sent (``HttpStatusError``) is an answer: it
is raised as it is and never replaced by a copy.

The shelf belongs to one signed-in user (the browser's is a cache named after the user; see
app/browser/device.py); it holds nothing shared between users.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import cache
from typing import Protocol, TypeVar

from pydantic import JsonValue, TypeAdapter

from app.run.transport import ChatApi, Progress
from app.wire.api import (
    AttachmentInfo,
    CancelResult,
    ChatDetail,
    ChatSummary,
    CompactionResult,
    ModelInfo,
    RunInfo,
    SessionInfo,
    ToolClientResultAnswer,
    ToolDecisionResult,
)
from app.wire.codes import ClientTimeoutCode
from app.wire.errors import ChatError, TransportError

T = TypeVar("T")
CHAT_LIST = "chats"
MODELS = "models"


# NOTE: made on first use, not at import (each is a validator built: boot time in the browser)
@cache
def _detail() -> TypeAdapter[ChatDetail]:
    return TypeAdapter(ChatDetail)


@cache
def _summaries() -> TypeAdapter[list[ChatSummary]]:
    return TypeAdapter(list[ChatSummary])


@cache
def _models() -> TypeAdapter[list[ModelInfo]]:
    return TypeAdapter(list[ModelInfo])


def chat_key(chat_id: str) -> str:
    return f"chat/{chat_id}"


class Shelf(Protocol):
    """Text kept under a key on the device."""

    async def read(self, key: str) -> str | None:
        """What is kept under ``key``, if anything."""
        ...

    async def write(self, key: str, text: str) -> None:
        """Keep ``text`` under ``key`` (replacing what was there)."""
        ...

    async def remove(self, key: str) -> None:
        """Keep nothing under ``key``."""
        ...


class KeptApi:
    """The server's API, with the reads a page starts from kept and given back offline."""

    def __init__(self, api: ChatApi, shelf: Shelf, on_reach: Callable[[bool], None]) -> None:
        self._api, self._shelf, self._on_reach = api, shelf, on_reach

    async def _asked(self, request: Awaitable[T]) -> T:
        """``request``'s answer; the server's reachability reported either way."""
        try:
            answer = await request
        except TransportError:
            self._on_reach(False)
            raise
        except ChatError:
            self._on_reach(True)  # NOTE: an error answer is an answer: the server is there
            raise
        self._on_reach(True)
        return answer

    async def _kept(self, key: str, request: Awaitable[T], adapter: TypeAdapter[T]) -> T:
        """``request``'s answer, kept under ``key``; the kept copy when the server is out of
        reach (the ``TransportError`` raised again when nothing is kept)."""
        try:
            answer = await self._asked(request)
        except TransportError:
            kept = await self._shelf.read(key)
            if kept is None:
                raise
            return adapter.validate_json(kept)
        await self._shelf.write(key, adapter.dump_json(answer, by_alias=True).decode())
        return answer

    async def refresh_copy(self, chat_id: str) -> None:
        """Keep the chat as the server has it now (after an answer settled); a failure keeps
        the older copy."""
        try:
            await self.get_chat(chat_id)
        except ChatError:
            return

    # --- kept reads ---

    async def get_chat(self, chat_id: str) -> ChatDetail:
        return await self._kept(chat_key(chat_id), self._api.get_chat(chat_id), _detail())

    async def list_chats(self, query: str = "") -> list[ChatSummary]:
        if query:  # NOTE: a search is the server's: never answered from a copy
            return await self._asked(self._api.list_chats(query))
        return await self._kept(CHAT_LIST, self._api.list_chats(), _summaries())

    async def list_models(self) -> list[ModelInfo]:
        return await self._kept(MODELS, self._api.list_models(), _models())

    # --- the rest, as the server answers ---

    async def start_session(self) -> SessionInfo:
        return await self._asked(self._api.start_session())

    async def sign_in(self, name: str, password: str) -> SessionInfo:
        return await self._asked(self._api.sign_in(name, password))

    async def sign_out(self, everywhere: bool = False) -> None:
        await self._asked(self._api.sign_out(everywhere))

    async def cancel_run(
        self, run_id: str, reason: ClientTimeoutCode | None = None
    ) -> CancelResult:
        return await self._asked(self._api.cancel_run(run_id, reason))

    async def get_run(self, run_id: str) -> RunInfo:
        return await self._asked(self._api.get_run(run_id))

    async def decide_tool_call(
        self, run_id: str, tool_call_id: str, approved: bool
    ) -> ToolDecisionResult:
        return await self._asked(self._api.decide_tool_call(run_id, tool_call_id, approved))

    async def post_tool_result(
        self, run_id: str, tool_call_id: str, result: JsonValue, is_error: bool
    ) -> ToolClientResultAnswer:
        return await self._asked(self._api.post_tool_result(run_id, tool_call_id, result, is_error))

    async def rename_chat(self, chat_id: str, title: str) -> ChatSummary:
        return await self._asked(self._api.rename_chat(chat_id, title))

    async def delete_chat(self, chat_id: str) -> None:
        await self._asked(self._api.delete_chat(chat_id))
        await self._shelf.remove(chat_key(chat_id))

    async def compact_chat(self, chat_id: str) -> CompactionResult:
        return await self._asked(self._api.compact_chat(chat_id))

    async def upload_attachment(
        self, file: object, on_progress: Progress | None = None
    ) -> AttachmentInfo:
        return await self._asked(self._api.upload_attachment(file, on_progress))
