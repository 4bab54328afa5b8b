"""Chats on the server: the list, a search, a chat's history (fetched once), rename, delete.

A chat's history is fetched the first time it is shown; after that the store's own state is
the truth (a run streamed here is fresher than any history). A run the history reports still
running is handed to ``reattach`` so the store resumes it (SPEC §5, page reload). A new chat is
named here and made on the server by its first answer, so nothing is created for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol

from app.run.runner import error_info
from app.run.transport import ChatApi
from app.state.actions import (
    Action,
    ChatDeleted,
    ChatListing,
    ChatLoaded,
    ChatRenamed,
    ChatsListed,
    ErrorRaised,
    SearchFound,
)
from app.state.history import ChatView, chat_from_detail, detached_runs, with_view
from app.state.state import ErrorInfo, State
from app.state.store import Store
from app.wire.api import ChatDetail, ChatSummary
from app.wire.errors import ChatError, HttpStatusError

NOT_LOADED = ErrorInfo("chat_not_loaded", "The chat could not be loaded.")


def listing(summary: ChatSummary) -> ChatListing:
    """A chat of the server's list as the store keeps it."""
    return ChatListing(
        summary.id,
        summary.title,
        summary.updated_at.timestamp(),
        pinned=summary.pinned_at is not None,
        snippet=summary.snippet,
    )


class ViewMemory(Protocol):
    """Where a chat's view (what was on screen) is kept between page loads."""

    def load(self, chat_id: str) -> ChatView | None:
        """The view kept for ``chat_id``, if any."""
        ...


class NoMemory:
    """Keeps nothing: a chat is shown as read."""

    def load(self, chat_id: str) -> ChatView | None:
        return None


class ChatLoader:
    """Fetches chats into the store; one history request per chat at a time."""

    def __init__(
        self,
        store: Store[State, Action],
        api: ChatApi,
        track: Callable[[asyncio.Task[Any]], None],
        reattach: Callable[[str], object],
        views: ViewMemory | None = None,
    ) -> None:
        self._store, self._api = store, api
        self._track, self._reattach = track, reattach
        self._views = views or NoMemory()
        self._loads: dict[str, asyncio.Task[bool]] = {}

    def load(self, chat_id: str) -> asyncio.Task[bool]:
        """Fetch the chat's history (the pending request if one is already running)."""
        task = self._loads.get(chat_id)
        if task is None:
            task = self._loads[chat_id] = asyncio.ensure_future(self._fetch(chat_id))
            self._track(task)
            task.add_done_callback(lambda _: self._loads.pop(chat_id, None))
        return task

    async def ensure_loaded(self, chat_id: str, prompt: str) -> str | None:
        """The chat id once its history is in; else None, with the prompt given back."""
        if await self.load(chat_id):
            return chat_id
        error = self._store.get_state().last_error or NOT_LOADED
        self._store.dispatch(ErrorRaised(error, draft=prompt))
        return None

    async def search(self, query: str) -> None:
        """The chats whose title or messages contain ``query`` (the server searches)."""
        try:
            summaries = await self._api.list_chats(query)
        except ChatError as error:
            self._store.dispatch(ErrorRaised(error_info(error)))
            return
        self._store.dispatch(SearchFound(query, tuple(listing(s) for s in summaries)))

    async def rename(self, chat_id: str, title: str, old_title: str) -> None:
        """Rename on the server (the new title is shown already); put it back if refused."""
        try:
            summary = await self._api.rename_chat(chat_id, title)
        except ChatError as error:
            self._store.dispatch(ChatRenamed(chat_id, old_title))
            self._store.dispatch(ErrorRaised(error_info(error)))
            return
        self._store.dispatch(ChatRenamed(chat_id, summary.title))

    async def delete(self, chat_id: str, on_server: bool) -> None:
        """Delete the chat (on the server too, unless it never reached it)."""
        if on_server:
            try:
                await self._api.delete_chat(chat_id)
            except HttpStatusError as error:
                if error.status != 404:  # NOTE: already gone is what was asked for
                    self._store.dispatch(ErrorRaised(error_info(error)))
                    return
            except ChatError as error:
                self._store.dispatch(ErrorRaised(error_info(error)))
                return
        self._store.dispatch(ChatDeleted(chat_id))

    async def refresh(self) -> None:
        """Fetch the chat list."""
        try:
            summaries = await self._api.list_chats()
        except ChatError as error:
            self._store.dispatch(ErrorRaised(error_info(error)))
            return
        self._store.dispatch(ChatsListed(tuple(listing(s) for s in summaries)))

    async def load_fresher(self, chat_id: str) -> None:
        """The chat as the server has it now, in place of a copy shown offline (a failure
        keeps what is shown, quietly: the page is offline again)."""
        try:
            detail = await self._api.get_chat(chat_id)
        except ChatError:
            return
        self._show(chat_id, detail, fresher=True)

    async def _fetch(self, chat_id: str) -> bool:
        try:
            detail = await self._api.get_chat(chat_id)
        except ChatError as error:
            self._store.dispatch(ErrorRaised(error_info(error)))
            return False
        self._show(chat_id, detail)
        return True

    def _show(self, chat_id: str, detail: ChatDetail, *, fresher: bool = False) -> None:
        chat = chat_from_detail(detail)
        view = self._views.load(chat_id)
        loaded = chat if view is None else with_view(chat, view)
        self._store.dispatch(ChatLoaded(loaded, fresher=fresher))
        for run_id in detached_runs(self._store.get_state().chats[chat_id]):
            self._reattach(run_id)
