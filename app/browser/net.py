"""The network over ``fetch``: the stream transport and the chat API of :mod:`app.run.transport`.

The HTTP status and content type are checked before any of a body is read; a pre-stream JSON
error becomes :class:`~app.wire.errors.HttpStatusError`, a failed fetch or read
:class:`~app.wire.errors.TransportError`. Chunks leave as ``bytes`` (``to_bytes()``): no JsProxy
reaches the core.

Every fetch has its own AbortController, held by the coroutine that awaits it: when that
coroutine's task is cancelled, or the stream it returned is closed, the fetch is aborted (as
Pyodide's ``pyfetch`` does). :class:`Backend` is the one place the API's base URL lives.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass
from typing import Any

import js
from pydantic import JsonValue
from pyodide.ffi import JsException

from app.browser.edge import JsValue, Listeners, early_response, js_object, text_or_none
from app.run.transport import Progress
from app.wire.api import (
    AttachmentInfo,
    CancelBody,
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
    encode_payload,
    parse_http_error,
)
from app.wire.codes import ClientTimeoutCode
from app.wire.errors import HttpStatusError, TransportError


@dataclass(frozen=True, slots=True)
class Backend:
    """Where the API is: ``""`` for the page's own origin, else ``https://host`` (config.json)."""

    base: str = ""

    def url(self, path: str) -> str:
        return self.base.rstrip("/") + path


async def _js_error_body(js_response: JsValue) -> HttpStatusError:
    """Turn a pre-stream error response into a typed error, whatever its body."""
    text = str(await js_response.text())
    retry_after = text_or_none(js_response.headers.get("Retry-After"))
    return parse_http_error(int(js_response.status), text, retry_after)


async def fetch(
    url: str,
    *,
    method: str = "GET",
    body: str | JsValue | None = None,
    headers: Mapping[str, str] | None = None,
    js_controller: JsValue = None,
) -> JsValue:
    """``fetch`` with the session cookie; a network failure is :class:`TransportError`, and a
    cancelled caller aborts the request."""
    if method == "GET" and body is None and not headers:
        js_early = await early_response(url)  # NOTE: boot.js's reads, begun at first paint
        if js_early is not None:
            return js_early
    js_controller = js_controller if js_controller is not None else js.AbortController.new()
    options: dict[str, Any] = {"method": method, "credentials": "include", "cache": "no-store"}
    options["headers"] = js_object(headers or {})
    options["signal"] = js_controller.signal
    if body is not None:
        options["body"] = body
    try:
        return await js.fetch(url, js_object(options))
    except JsException as error:
        raise TransportError(str(error)) from None
    except asyncio.CancelledError:
        js_controller.abort()
        raise


async def fetch_json(url: str, *, method: str = "GET", payload: object = None) -> Any:
    """Fetch a JSON route; an error status raises :class:`HttpStatusError`."""
    body = None if payload is None else json.dumps(payload)
    headers = {"Content-Type": "application/json"} if body is not None else {}
    js_response = await fetch(url, method=method, body=body, headers=headers)
    if not js_response.ok:
        raise await _js_error_body(js_response)
    return json.loads(str(await js_response.text()))


async def open_event_stream(
    url: str, *, method: str, body: str | None, headers: Mapping[str, str]
) -> AsyncGenerator[bytes, None]:
    """Open an SSE response; check status and content type before reading any of the body."""
    js_controller = js.AbortController.new()
    js_response = await fetch(
        url, method=method, body=body, headers=headers, js_controller=js_controller
    )
    if not js_response.ok:
        raise await _js_error_body(js_response)
    content_type = str(js_response.headers.get("Content-Type") or "")
    if not content_type.startswith("text/event-stream"):
        js_controller.abort()
        raise HttpStatusError(
            int(js_response.status),
            "not_event_stream",
            f"expected text/event-stream, got {content_type!r}",
        )
    return iter_body(js_response.body.getReader(), js_controller)


async def iter_body(js_reader: JsValue, js_controller: JsValue) -> AsyncGenerator[bytes, None]:
    """Yield the body's chunks as bytes; a broken read becomes :class:`TransportError`.

    NOTE: leaving early — the reading task cancelled, or the generator closed — aborts the
    fetch, so the connection is released at once.
    """
    finished = False
    try:
        while True:
            try:
                js_result = await js_reader.read()
            except JsException as error:
                raise TransportError(str(error)) from None
            if js_result.done:
                finished = True
                return
            yield js_result.value.to_bytes()
    finally:
        if not finished:
            js_controller.abort()


class BrowserStreams:
    """The :class:`~app.run.transport.StreamTransport` over ``fetch``."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend

    async def open_run(self, body: RespondStreamBody) -> AsyncGenerator[bytes, None]:
        headers = {"Content-Type": "application/json", "X-Run-Id": body.run_id or ""}
        return await open_event_stream(
            self._backend.url("/api/respond/stream"),
            method="POST",
            body=encode_payload(body),
            headers=headers,
        )

    async def open_events(self, run_id: str, after_seq: int) -> AsyncGenerator[bytes, None]:
        return await open_event_stream(
            self._backend.url(f"/api/runs/{run_id}/events"),
            method="GET",
            body=None,
            headers={"Last-Event-ID": str(after_seq)},
        )


class BrowserApi:
    """The :class:`~app.run.transport.ChatApi` over ``fetch``."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend

    async def _json(self, path: str, method: str = "GET", payload: object = None) -> Any:
        return await fetch_json(self._backend.url(path), method=method, payload=payload)

    async def start_session(self) -> SessionInfo:
        return SessionInfo.model_validate(await self._json("/api/session"))

    async def sign_in(self, name: str, password: str) -> SessionInfo:
        answer = await self._json(
            "/api/session/sign-in", "POST", {"name": name, "password": password}
        )
        return SessionInfo.model_validate(answer)

    async def sign_out(self, everywhere: bool = False) -> None:
        path = "/api/session/sign-out-everywhere" if everywhere else "/api/session/sign-out"
        js_response = await fetch(self._backend.url(path), method="POST")
        if not js_response.ok:
            raise await _js_error_body(js_response)

    async def cancel_run(
        self, run_id: str, reason: ClientTimeoutCode | None = None
    ) -> CancelResult:
        body = CancelBody(reason=reason).model_dump(by_alias=True, exclude_none=True)
        answer = await self._json(f"/api/runs/{run_id}/cancel", "POST", body)
        return CancelResult.model_validate(answer)

    async def get_run(self, run_id: str) -> RunInfo:
        return RunInfo.model_validate(await self._json(f"/api/runs/{run_id}"))

    async def decide_tool_call(
        self, run_id: str, tool_call_id: str, approved: bool
    ) -> ToolDecisionResult:
        path = f"/api/runs/{run_id}/tool-calls/{tool_call_id}/decision"
        answer = await self._json(path, "POST", {"approved": approved})
        return ToolDecisionResult.model_validate(answer)

    async def post_tool_result(
        self, run_id: str, tool_call_id: str, result: JsonValue, is_error: bool
    ) -> ToolClientResultAnswer:
        path = f"/api/runs/{run_id}/tool-calls/{tool_call_id}/result"
        answer = await self._json(path, "POST", {"result": result, "isError": is_error})
        return ToolClientResultAnswer.model_validate(answer)

    async def get_chat(self, chat_id: str) -> ChatDetail:
        return ChatDetail.model_validate(await self._json(f"/api/chats/{chat_id}"))

    async def list_chats(self, query: str = "") -> list[ChatSummary]:
        path = "/api/chats" + (f"?q={js.encodeURIComponent(query)}" if query else "")
        return [ChatSummary.model_validate(item) for item in await self._json(path)]

    async def rename_chat(self, chat_id: str, title: str) -> ChatSummary:
        answer = await self._json(f"/api/chats/{chat_id}", "PATCH", {"title": title})
        return ChatSummary.model_validate(answer)

    async def delete_chat(self, chat_id: str) -> None:
        js_response = await fetch(self._backend.url(f"/api/chats/{chat_id}"), method="DELETE")
        if not js_response.ok:
            raise await _js_error_body(js_response)

    async def compact_chat(self, chat_id: str) -> CompactionResult:
        answer = await self._json(f"/api/chats/{chat_id}/compact", "POST", {})
        return CompactionResult.model_validate(answer)

    async def list_models(self) -> list[ModelInfo]:
        return [ModelInfo.model_validate(item) for item in await self._json("/api/models")]

    async def upload_attachment(
        self, file: object, on_progress: Progress | None = None
    ) -> AttachmentInfo:
        # NOTE: XMLHttpRequest, not fetch: only it reports upload progress.
        js_file: JsValue = file
        js_form = js.FormData.new()
        js_form.append("file", js_file, js_file.name)
        js_request = js.XMLHttpRequest.new()
        js_request.open("POST", self._backend.url("/api/attachments"))
        js_request.withCredentials = True
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def progressed(js_event: JsValue) -> None:
            if on_progress is not None and bool(js_event.lengthComputable):
                on_progress(int(js_event.loaded), int(js_event.total))

        def ended(js_event: JsValue) -> None:
            if done.done():
                return
            if str(js_event.type) == "load":
                done.set_result(None)
            else:
                done.set_exception(TransportError(f"the upload failed ({js_event.type})"))

        listeners = Listeners()
        listeners.on(js_request.upload, "progress", progressed)
        for event in ("load", "error", "timeout"):
            listeners.on(js_request, event, ended)
        js_request.send(js_form)
        try:
            await done
        except asyncio.CancelledError:
            js_request.abort()
            raise
        finally:
            listeners.teardown()
        status, text = int(js_request.status), str(js_request.responseText)
        if not 200 <= status < 300:
            retry_after = text_or_none(js_request.getResponseHeader("Retry-After"))
            raise parse_http_error(status, text, retry_after)
        return AttachmentInfo.model_validate_json(text)
