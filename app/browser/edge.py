"""The JS edge: value conversion, element lookup, listeners, timers and page-level signals.

Raw JS handles are named ``js_*``; JS ``null`` arrives as ``jsnull`` and ``undefined`` as
``None``, so :func:`present` checks both. Every event-listener proxy is made through
:class:`Listeners`, which destroys them all on teardown.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Mapping
from datetime import datetime, timedelta, timezone
from typing import Any, Final

import js
from pyodide.ffi import create_once_callable, create_proxy, jsnull, to_js

JsValue = Any  # NOTE: the JS edge is the one place where ``Any`` is allowed.


def present(js_value: JsValue) -> bool:
    """Whether a JS value is neither ``null`` (``jsnull``) nor ``undefined`` (``None``)."""
    return js_value is not None and js_value is not jsnull


def text_or_none(js_value: JsValue) -> str | None:
    """A JS string as ``str``; ``null`` / ``undefined`` as ``None``."""
    return str(js_value) if present(js_value) else None


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
    if not present(js_element):
        raise LookupError(f"page shell has no element for {selector!r}")
    return js_element


def now_ms() -> float:
    """A monotonic clock in milliseconds (``performance.now()``)."""
    return float(js.performance.now())


def local_now() -> datetime:
    """Now, in the browser's time zone (Pyodide's own clock knows only UTC)."""
    offset = -int(js.Date.new().getTimezoneOffset())
    return datetime.now(timezone(timedelta(minutes=offset)))


def request_frame(callback: Callable[[], None]) -> None:
    """Run ``callback`` once before the next paint (``requestAnimationFrame``)."""

    def on_frame(_timestamp: float) -> None:
        proxy.destroy()
        callback()

    proxy = create_proxy(on_frame)
    js.requestAnimationFrame(proxy)


async def after_paint() -> None:
    """Return in a task after the browser's next frame: work done in steps, each resumed here,
    never holds a frame back (zero-delay tasks in a row can keep Chromium from painting for up
    to ~100 ms). Waits while the page is hidden, as frames do."""
    future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    request_frame(lambda: None if future.done() else future.set_result(None))
    await future


async def when_idle(timeout_ms: int = 1000) -> None:
    """Return when the browser is idle (``requestIdleCallback``; at most ``timeout_ms`` later),
    or after the next frame where there is no such call (Safari)."""
    if not present(getattr(js, "requestIdleCallback", None)):
        await after_paint()
        return
    future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def on_idle(_js_deadline: JsValue) -> None:
        proxy.destroy()
        if not future.done():
            future.set_result(None)

    proxy = create_proxy(on_idle)
    js.requestIdleCallback(proxy, js_object({"timeout": timeout_ms}))
    await future


def query_params() -> dict[str, str]:
    """The page URL's query string as a plain dict (last value wins)."""
    js_params = js.URLSearchParams.new(js.location.search)
    return {str(key): str(value) for key, value in js_params.entries()}


_background: set[asyncio.Task[object]] = set()


def spawn(coroutine: Coroutine[Any, Any, object]) -> None:
    """Run a coroutine in the background, keeping a reference until it ends."""
    task = asyncio.ensure_future(coroutine)
    _background.add(task)
    task.add_done_callback(_background.discard)


def log(message: str) -> None:
    """``console.log`` (run traces, config warnings)."""
    js.console.log(message)


def is_online() -> bool:
    """``navigator.onLine``."""
    return bool(js.navigator.onLine)


def active_chat_from_url() -> str | None:
    """The chat id kept in the URL fragment (``#chat_…``), so a reload returns to it."""
    fragment = str(js.location.hash).removeprefix("#")
    return fragment or None


def remember_chat(chat_id: str | None) -> None:
    """Keep the active chat in the URL fragment without adding history entries."""
    js.history.replaceState(
        None, "", f"#{chat_id}" if chat_id else js.location.pathname + js.location.search
    )


ONLINE_SETTLE_MS: Final = 1500
"""A connection that comes back is given this long to settle (they flap) before it is used."""


def on_back_online(callback: Callable[[], None]) -> Listeners:
    """Call ``callback`` when the device is back online and stayed so for a moment."""
    listeners = Listeners()

    def settled() -> None:
        if is_online():
            callback()

    def online(_js_event: JsValue) -> None:
        js.setTimeout(create_once_callable(settled), ONLINE_SETTLE_MS)

    listeners.on(js.window, "online", online)
    return listeners


def on_offline(callback: Callable[[], None]) -> Listeners:
    """Call ``callback`` when the browser says the device went offline."""
    listeners = Listeners()
    listeners.on(js.window, "offline", lambda _js_event: callback())
    return listeners


def on_page_hide(teardown: Callable[[], None]) -> None:
    """Run ``teardown`` when the page goes away (``pagehide``); a page restored from the
    back/forward cache after that is reloaded, since its listeners and tasks are gone."""
    listeners = Listeners()

    def hidden(_js_event: JsValue) -> None:
        teardown()

    def shown(js_event: JsValue) -> None:
        if bool(js_event.persisted):
            js.location.reload()

    listeners.on(js.window, "pagehide", hidden)
    listeners.on(js.window, "pageshow", shown)


def take_queued_prompts() -> list[str]:
    """The prompts sent before Python started (``static/boot.js``), whose listeners stop now."""
    js_boot: JsValue = getattr(js.window, "riachoBoot", None)
    if not present(js_boot):
        return []
    return [str(prompt) for prompt in js_boot.take()]


# The reads static/boot.js starts at first paint (its READS), each handed out once.
EARLY_READS = ("./config.json", "/api/session", "/api/models", "/api/chats")
_early_taken: set[str] = set()


async def early_response(url: str) -> JsValue | None:
    """The response ``static/boot.js`` already read for a GET of ``url`` (the first such read
    only), or None: not one of its reads, taken already, failed, or for another URL."""
    path = next((path for path in EARLY_READS if url.endswith(path)), None)
    js_boot: JsValue = getattr(js.window, "riachoBoot", None)
    if path is None or path in _early_taken or not present(js_boot):
        return None
    _early_taken.add(path)
    js_early = await js_boot.early(path)
    if not present(js_early) or str(js_early.url) != url:
        return None
    return js_early.response


def mark_ready() -> None:
    """``html[data-ready]``: Python has booted and the composer works."""
    query("#boot-text").textContent = "Ready"
    js_root = js.document.documentElement
    js_root.setAttribute("data-boot", "ready")
    js_root.setAttribute("data-ready", "")
    js.performance.mark("riacho:ready")  # NOTE: when, for tests and the page's own monitoring


def mark_boot_failed(message: str) -> None:
    """Say in the page that start-up failed, and why."""
    query("#boot-text").textContent = f"Riacho could not start: {message}"
    js.document.documentElement.setAttribute("data-boot", "failed")
