"""The network behind the store: two seams, implemented with ``fetch`` in the browser.

:class:`StreamTransport` opens a run's event stream in two steps, so a pre-stream error is never
confused with a broken stream: ``await open_run(body)`` (or ``open_events``) sends the request
and checks the answer (raises :class:`~app.wire.errors.HttpStatusError` for a JSON error answer,
:class:`~app.wire.errors.TransportError` when no answer came); the async generator it returns
yields the body's raw byte chunks, raises ``TransportError`` when the connection breaks, and
simply ends at EOF.

Aborting is cancelling: cancelling the task that awaits an open or reads a stream, or closing
the stream (``aclose``), aborts the request underneath, the way Pyodide's own ``pyfetch``
aborts a fetch whose task is cancelled. There is no abort call and no table of open requests.

:class:`ChatApi` is everything else the page asks the server (JSON answers): chats, models,
compaction, attachments, a run's cancel and status (SPEC §4).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from typing import Protocol

from pydantic import JsonValue

from app.wire.api import (
    AttachmentInfo,
    CancelResult,
    ChatDetail,
    ChatSummary,
    CompactionResult,
    ModelInfo,
    RespondStreamBody,
    RunInfo,
    SessionInfo,
    ToolClientResultAnswer,
    ToolDecisionResult,
)
from app.wire.codes import ClientTimeoutCode

ByteStream = AsyncGenerator[bytes, None]
Progress = Callable[[int, int], None]


class StreamTransport(Protocol):
    """Opening a run's event stream (see the module docstring for aborting)."""

    async def open_run(self, body: RespondStreamBody) -> ByteStream:
        """``POST /api/respond/stream`` (header ``X-Run-Id``); the SSE body's chunks."""
        ...

    async def open_events(self, run_id: str, after_seq: int) -> ByteStream:
        """``GET /api/runs/{run_id}/events`` with ``Last-Event-ID: after_seq``; 410 if expired."""
        ...


class ChatApi(Protocol):
    """The server's JSON routes the page uses."""

    async def start_session(self) -> SessionInfo:
        """``GET /api/session``: who is signed in (an anonymous user is made where allowed);
        ``HttpStatusError(401)`` when the server wants a sign-in."""
        ...

    async def sign_in(self, name: str, password: str) -> SessionInfo:
        """``POST /api/session/sign-in``; 401 ``invalid_credentials`` when they do not match."""
        ...

    async def sign_out(self, everywhere: bool = False) -> None:
        """``POST /api/session/sign-out`` (``everywhere``: ``…/sign-out-everywhere``, every
        session of the user ends)."""
        ...

    async def cancel_run(
        self, run_id: str, reason: ClientTimeoutCode | None = None
    ) -> CancelResult:
        """``POST /api/runs/{run_id}/cancel``: the run's persisted status after the request
        (``reason``: the page's timeout, when it gave up waiting; else the user's Stop)."""
        ...

    async def get_run(self, run_id: str) -> RunInfo:
        """``GET /api/runs/{run_id}``."""
        ...

    async def decide_tool_call(
        self, run_id: str, tool_call_id: str, approved: bool
    ) -> ToolDecisionResult:
        """``POST /api/runs/{run_id}/tool-calls/{tool_call_id}/decision`` (SPEC §12): the
        decision that stands; 409 ``decision_taken`` when another one was taken first."""
        ...

    async def post_tool_result(
        self, run_id: str, tool_call_id: str, result: JsonValue, is_error: bool
    ) -> ToolClientResultAnswer:
        """``POST /api/runs/{run_id}/tool-calls/{tool_call_id}/result`` (SPEC §13): the result
        that stands; 409 ``result_taken`` when another one was posted first."""
        ...

    async def get_chat(self, chat_id: str) -> ChatDetail:
        """``GET /api/chats/{chat_id}``: the chat with its messages."""
        ...

    async def list_chats(self, query: str = "") -> list[ChatSummary]:
        """``GET /api/chats[?q=query]``, newest first (with ``query``: those that contain it)."""
        ...

    async def rename_chat(self, chat_id: str, title: str) -> ChatSummary:
        """``PATCH /api/chats/{chat_id}`` ``{"title"}``: the renamed chat."""
        ...

    async def delete_chat(self, chat_id: str) -> None:
        """``DELETE /api/chats/{chat_id}`` (its live runs are cancelled by the server)."""
        ...

    async def compact_chat(self, chat_id: str) -> CompactionResult:
        """``POST /api/chats/{chat_id}/compact``: the context usage before and after."""
        ...

    async def list_models(self) -> list[ModelInfo]:
        """``GET /api/models``."""
        ...

    async def upload_attachment(
        self, file: object, on_progress: Progress | None = None
    ) -> AttachmentInfo:
        """``POST /api/attachments`` with one file (the shell's own file object), reporting
        ``on_progress(bytes_sent, bytes_total)`` as it goes; cancelling aborts the upload."""
        ...
