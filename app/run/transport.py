"""The network behind the store: one interface, implemented with ``fetch`` in the browser.

A stream is opened in two steps so a pre-stream error is never confused with a broken stream:
``await open_run(body)`` sends the request and checks the answer (raises
:class:`~app.errors.HttpStatusError` for a JSON error answer, :class:`~app.errors.TransportError`
when no answer came); the iterator it returns yields the body's raw byte chunks, raises
``TransportError`` when the connection breaks, and simply ends at EOF. ``abort(run_id)`` makes
a pending open or read of that run end promptly (a user's abort is not an error: ending the
iteration quietly is fine).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

from app.wire.api import CancelResult, ChatDetail, ChatSummary, RespondStreamBody, RunInfo

ByteStream = AsyncIterator[bytes]


class Transport(Protocol):
    """What the chat store needs from the server (SPEC §4)."""

    async def open_run(self, body: RespondStreamBody) -> ByteStream:
        """``POST /api/respond/stream`` (header ``X-Run-Id``); the SSE body's chunks."""
        ...

    async def open_events(self, run_id: str, after_seq: int) -> ByteStream:
        """``GET /api/runs/{run_id}/events`` with ``Last-Event-ID: after_seq``; 410 if expired."""
        ...

    def abort(self, run_id: str) -> None:
        """Abort the run's pending request or read, synchronously (AbortController)."""
        ...

    async def cancel_run(self, run_id: str) -> CancelResult:
        """``POST /api/runs/{run_id}/cancel``: the run's persisted status after the request."""
        ...

    async def get_run(self, run_id: str) -> RunInfo:
        """``GET /api/runs/{run_id}``."""
        ...

    async def create_chat(self) -> ChatSummary:
        """``POST /api/chats``."""
        ...

    async def get_chat(self, chat_id: str) -> ChatDetail:
        """``GET /api/chats/{chat_id}``: the chat with its messages."""
        ...

    async def list_chats(self) -> list[ChatSummary]:
        """``GET /api/chats``, newest first."""
        ...
