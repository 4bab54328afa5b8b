"""The network over ``fetch``: JSON routes, SSE bodies read chunk by chunk, the transport.

The HTTP status and content type are checked before any of a body is read; a pre-stream JSON
error becomes :class:`~app.errors.HttpStatusError`, a failed fetch or read
:class:`~app.errors.TransportError`. Chunks leave as ``bytes`` (``to_bytes()``): no JsProxy
reaches the core.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

import js
from pyodide.ffi import JsException

from app.browser.edge import JsValue, js_object, text_or_none
from app.wire.api import (
    AttachmentInfo,
    CancelResult,
    ChatDetail,
    ChatSummary,
    RespondStreamBody,
    RunInfo,
    encode_payload,
    parse_http_error,
)
from app.wire.errors import HttpStatusError, TransportError


async def _js_error_body(js_response: JsValue) -> HttpStatusError:
    """Turn a pre-stream error response into a typed error, whatever its body."""
    text = str(await js_response.text())
    retry_after = text_or_none(js_response.headers.get("Retry-After"))
    return parse_http_error(int(js_response.status), text, retry_after)


async def fetch(
    url: str,
    *,
    method: str = "GET",
    body: str | None = None,
    headers: Mapping[str, str] | None = None,
    js_signal: JsValue = None,
) -> JsValue:
    """``fetch`` with the session cookie; network failures become :class:`TransportError`."""
    options: dict[str, Any] = {"method": method, "credentials": "include", "cache": "no-store"}
    options["headers"] = js_object(headers or {})
    if body is not None:
        options["body"] = body
    if js_signal is not None:
        options["signal"] = js_signal
    try:
        return await js.fetch(url, js_object(options))
    except JsException as error:
        raise TransportError(str(error)) from None


async def fetch_json(url: str, *, method: str = "GET", payload: object = None) -> Any:
    """Fetch a JSON API route; an error status raises :class:`HttpStatusError`."""
    body = None if payload is None else json.dumps(payload)
    headers = {"Content-Type": "application/json"} if body is not None else {}
    js_response = await fetch(url, method=method, body=body, headers=headers)
    if not js_response.ok:
        raise await _js_error_body(js_response)
    return json.loads(str(await js_response.text()))


async def open_event_stream(
    url: str,
    *,
    method: str,
    body: str | None,
    headers: Mapping[str, str],
    js_signal: JsValue,
) -> AsyncIterator[bytes]:
    """Open an SSE response; check status and content type before reading any of the body."""
    try:
        js_response = await fetch(
            url, method=method, body=body, headers=headers, js_signal=js_signal
        )
    except TransportError:
        if js_signal is not None and js_signal.aborted:
            return _no_chunks()  # NOTE: aborted by Stop before the answer: not an error.
        raise
    if not js_response.ok:
        raise await _js_error_body(js_response)
    content_type = str(js_response.headers.get("Content-Type") or "")
    if not content_type.startswith("text/event-stream"):
        raise HttpStatusError(
            int(js_response.status),
            "not_event_stream",
            f"expected text/event-stream, got {content_type!r}",
        )
    return iter_body(js_response.body.getReader())


async def iter_body(js_reader: JsValue) -> AsyncIterator[bytes]:
    """Yield the body's chunks as bytes; a broken read becomes :class:`TransportError`.

    NOTE: an abort through the request's AbortController (Stop) ends the iteration quietly:
    a user's abort is not an error.
    """
    while True:
        try:
            js_result = await js_reader.read()
        except JsException as error:
            if str(getattr(error, "name", "")) == "AbortError":
                return
            raise TransportError(str(error)) from None
        if js_result.done:
            return
        yield js_result.value.to_bytes()


async def _no_chunks() -> AsyncIterator[bytes]:
    return
    yield b""  # pragma: no cover - makes this an async generator


class BrowserTransport:
    """The store's :class:`~app.transport.Transport` over ``fetch``, one AbortController per run."""

    def __init__(self, api_base: str = "") -> None:
        self._api = api_base.rstrip("/")
        self._controllers: dict[str, JsValue] = {}

    def _signal(self, run_id: str) -> JsValue:
        js_controller = js.AbortController.new()
        self._controllers[run_id] = js_controller
        return js_controller.signal

    async def open_run(self, body: RespondStreamBody) -> AsyncIterator[bytes]:
        run_id = body.run_id or ""
        headers = {"Content-Type": "application/json", "X-Run-Id": run_id}
        return await open_event_stream(
            f"{self._api}/api/respond/stream",
            method="POST",
            body=encode_payload(body),
            headers=headers,
            js_signal=self._signal(run_id),
        )

    async def open_events(self, run_id: str, after_seq: int) -> AsyncIterator[bytes]:
        return await open_event_stream(
            f"{self._api}/api/runs/{run_id}/events",
            method="GET",
            body=None,
            headers={"Last-Event-ID": str(after_seq)},
            js_signal=self._signal(run_id),
        )

    def abort(self, run_id: str) -> None:
        js_controller = self._controllers.pop(run_id, None)
        if js_controller is not None:
            js_controller.abort()

    async def cancel_run(self, run_id: str) -> CancelResult:
        return CancelResult.model_validate(
            await fetch_json(f"{self._api}/api/runs/{run_id}/cancel", method="POST", payload={})
        )

    async def get_run(self, run_id: str) -> RunInfo:
        return RunInfo.model_validate(await fetch_json(f"{self._api}/api/runs/{run_id}"))

    async def create_chat(self) -> ChatSummary:
        return ChatSummary.model_validate(
            await fetch_json(f"{self._api}/api/chats", method="POST", payload={})
        )

    async def get_chat(self, chat_id: str) -> ChatDetail:
        return ChatDetail.model_validate(await fetch_json(f"{self._api}/api/chats/{chat_id}"))

    async def list_chats(self) -> list[ChatSummary]:
        payload = await fetch_json(f"{self._api}/api/chats")
        items = payload["chats"] if isinstance(payload, dict) else payload
        return [ChatSummary.model_validate(item) for item in items]


async def upload_form(url: str, js_form: JsValue) -> AttachmentInfo:
    """``POST`` a multipart form; an error status raises :class:`HttpStatusError`."""
    options = js_object({"method": "POST", "credentials": "include", "body": js_form})
    try:
        js_response = await js.fetch(url, options)
    except JsException as error:
        raise TransportError(str(error)) from None
    if not js_response.ok:
        raise await _js_error_body(js_response)
    return AttachmentInfo.model_validate_json(str(await js_response.text()))
