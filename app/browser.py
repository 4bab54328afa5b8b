"""The browser adapter: the only module that touches ``js`` and ``pyodide``.

It turns JS values into Python ones at the edge (bytes via ``to_bytes()``, JSON via
``JSON.stringify`` → ``str``), so no JsProxy leaks into the core. Raw JS handles are named
``js_*``. Every event-listener proxy is created through :class:`Listeners`, which keeps them in
one place and destroys them on teardown.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import js  # type: ignore[import-not-found]
from pyodide.ffi import JsException, create_proxy, to_js  # type: ignore[import-not-found]

from app.errors import HttpStatusError, TransportError
from app.protocol import parse_http_error

JsValue = Any  # NOTE: the JS edge is the one place where ``Any`` is allowed.


def js_object(value: Mapping[str, Any]) -> JsValue:
    """A plain JS object (not a Map) from a Python mapping."""
    return to_js(dict(value), dict_converter=js.Object.fromEntries)


class Listeners:
    """Owns every event-listener proxy so that teardown can destroy them all."""

    def __init__(self) -> None:
        self._bound: list[tuple[JsValue, str, JsValue]] = []

    def on(self, js_target: JsValue, event: str, handler: Callable[[JsValue], object]) -> None:
        proxy = create_proxy(handler)
        js_target.addEventListener(event, proxy)
        self._bound.append((js_target, event, proxy))

    def teardown(self) -> None:
        for js_target, event, proxy in self._bound:
            js_target.removeEventListener(event, proxy)
            proxy.destroy()
        self._bound.clear()


def query(selector: str) -> JsValue:
    """The first element matching ``selector``; raises if the page shell lacks it."""
    js_element = js.document.querySelector(selector)
    if js_element is None:
        raise LookupError(f"page shell has no element for {selector!r}")
    return js_element


def now_ms() -> float:
    """A monotonic clock in milliseconds (``performance.now()``)."""
    return float(js.performance.now())


def request_frame(callback: Callable[[], None]) -> None:
    """Run ``callback`` once before the next paint (``requestAnimationFrame``)."""

    def on_frame(_timestamp: float) -> None:
        proxy.destroy()
        callback()

    proxy = create_proxy(on_frame)
    js.requestAnimationFrame(proxy)


def query_params() -> dict[str, str]:
    """The page URL's query string as a plain dict (last value wins)."""
    js_params = js.URLSearchParams.new(js.location.search)
    return {str(key): str(value) for key, value in js_params.entries()}


async def _js_error_body(js_response: JsValue) -> HttpStatusError:
    """Turn a pre-stream error response into a typed error, whatever its body."""
    text = str(await js_response.text())
    retry_after = js_response.headers.get("Retry-After")
    return parse_http_error(int(js_response.status), text, None if retry_after is None else str(retry_after))


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
    js_response = await fetch(url, method=method, body=body, headers=headers, js_signal=js_signal)
    if not js_response.ok:
        raise await _js_error_body(js_response)
    content_type = str(js_response.headers.get("Content-Type") or "")
    if not content_type.startswith("text/event-stream"):
        raise HttpStatusError(
            int(js_response.status), "not_event_stream", f"expected text/event-stream, got {content_type!r}"
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
