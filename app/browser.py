"""The browser adapter: the only module that touches ``js`` and ``pyodide``.

It turns JS values into Python ones at the edge (bytes via ``to_bytes()``, JSON via
``JSON.stringify`` → ``str``), so no JsProxy leaks into the core. Raw JS handles are named
``js_*``. Every event-listener proxy is created through :class:`Listeners`, which keeps them in
one place and destroys them on teardown.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

import js
from pyodide.ffi import (
    JsException,
    create_once_callable,
    create_proxy,
    jsnull,
    to_js,
)

from app.api import (
    AttachmentInfo,
    CancelResult,
    ChatDetail,
    ChatSummary,
    ModelInfo,
    RespondStreamBody,
    RunInfo,
    encode_payload,
    parse_http_error,
)
from app.controller import Composer, Controller, key_intent
from app.errors import HttpStatusError, TransportError
from app.view import Controls, MessagePatch

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


EMPTY_CHAT_HTML = (
    '<div class="empty-state">Ask anything. Answers stream in as they are written; '
    "you can stop, resume or regenerate them.</div>"
)


class BrowserDom:
    """The view's :class:`~app.view.Dom` over the real page."""

    def __init__(self) -> None:
        self._js_messages = query("#messages")
        self._js_nodes: dict[str, JsValue] = {}
        self._js_template = js.document.createElement("template")

    def _node(self, html: str) -> JsValue:
        self._js_template.innerHTML = html
        return self._js_template.content.firstElementChild

    def set_html(self, slot: str, html: str) -> None:
        query(slot).innerHTML = html

    def sync_messages(self, order: Sequence[str], changed: Mapping[str, str]) -> None:
        follow = self._near_bottom()
        for key in set(self._js_nodes) - set(order):
            self._js_nodes.pop(key).remove()
        if not order:
            self._js_messages.innerHTML = EMPTY_CHAT_HTML
        for key, html in changed.items():
            js_new = self._node(html)
            js_old = self._js_nodes.get(key)
            if js_old is not None:
                js_old.replaceWith(js_new)
            self._js_nodes[key] = js_new
        self._place(order)
        if follow and changed:
            self._js_messages.scrollTop = self._js_messages.scrollHeight

    def _place(self, order: Sequence[str]) -> None:
        for js_placeholder in self._js_messages.querySelectorAll(".skeleton, .empty-state"):
            js_placeholder.remove()
        js_expected = self._js_messages.firstElementChild
        for key in order:
            js_node = self._js_nodes[key]
            if present(js_expected) and js_node.isSameNode(js_expected):
                js_expected = js_expected.nextElementSibling
            else:
                self._js_messages.insertBefore(js_node, js_expected)

    def patch_message(self, key: str, patch: MessagePatch) -> None:
        js_message = self._js_nodes[key]
        follow = self._near_bottom()
        for name, value in patch.attributes or ():
            js_message.setAttribute(name, value)
        if patch.foot_html is not None:
            js_message.querySelector(".message-foot").outerHTML = patch.foot_html
        if patch.append_html:
            js_message.querySelector(".md-done").insertAdjacentHTML("beforeend", patch.append_html)
        if patch.open_html is not None:
            js_message.querySelector(".md-open").innerHTML = patch.open_html
        if follow:
            self._js_messages.scrollTop = self._js_messages.scrollHeight

    def _near_bottom(self) -> bool:
        js_list = self._js_messages
        return bool(js_list.scrollHeight - js_list.scrollTop - js_list.clientHeight < 80)

    def set_controls(self, controls: Controls) -> None:
        query("[data-action=send]").disabled = not controls.can_send
        query("[data-action=stop]").disabled = not controls.can_stop

    def set_draft(self, text: str) -> None:
        js_prompt = query("textarea[name=prompt]")
        if not str(js_prompt.value).strip():
            js_prompt.value = text


def read_composer(attachment_ids: Sequence[str]) -> Composer:
    """The composer's current values."""
    effort = str(query("select[name=reasoningEffort]").value)
    model = str(query("select[name=model]").value)
    return Composer(
        prompt=str(query("textarea[name=prompt]").value),
        thinking=str(query("[data-action=thinking]").getAttribute("aria-pressed")) == "true",
        reasoning_effort=effort if effort in ("low", "medium", "high") else None,  # type: ignore[arg-type]
        tools=str(query("[data-action=tools]").getAttribute("aria-pressed")) == "true",
        model_id=model or None,
        attachment_ids=tuple(attachment_ids),
    )


def copy_to_clipboard(text: str) -> None:
    """Copy ``text``; a refused clipboard (no permission) is ignored, not an error."""
    js_promise = js.navigator.clipboard.writeText(text)
    js_promise.catch(create_once_callable(lambda _error: None))


class Page:
    """Binds the page's controls to the controller; every listener is torn down together."""

    def __init__(self, controller: Controller, api_base: str = "") -> None:
        self._controller = controller
        self._api = api_base.rstrip("/")
        self._listeners = Listeners()
        self._attachments: list[str] = []

    def bind(self) -> None:
        on = self._listeners.on
        on(query("#composer"), "submit", self._on_submit)
        on(query("textarea[name=prompt]"), "keydown", self._on_prompt_key)
        on(js.document, "keydown", self._on_document_key)
        on(js.document.body, "click", self._on_click)
        on(query("input[type=file][name=attachments]"), "change", self._on_files)
        for selector in ("[data-action=thinking]", "[data-action=tools]"):
            on(query(selector), "click", self._on_toggle)

    def teardown(self) -> None:
        self._listeners.teardown()

    def enable(self) -> None:
        for selector in (
            "textarea[name=prompt]",
            "[data-action=thinking]",
            "select[name=reasoningEffort]",
            "[data-action=tools]",
            "select[name=model]",
            "input[type=file][name=attachments]",
            "[data-action=new-chat]",
        ):
            query(selector).disabled = False

    def _submit(self) -> None:
        js_prompt = query("textarea[name=prompt]")
        if self._controller.submit(read_composer(self._attachments)):
            js_prompt.value = ""
            self._attachments.clear()
            query("#attachment-list").textContent = ""

    def _on_submit(self, js_event: JsValue) -> None:
        js_event.preventDefault()
        self._submit()

    def _on_prompt_key(self, js_event: JsValue) -> None:
        intent = key_intent(
            str(js_event.key), shift=bool(js_event.shiftKey), composing=bool(js_event.isComposing)
        )
        if intent == "send":
            js_event.preventDefault()
            self._submit()

    def _on_document_key(self, js_event: JsValue) -> None:
        if key_intent(str(js_event.key), shift=bool(js_event.shiftKey)) == "stop":
            self._controller.click("stop")

    def _on_click(self, js_event: JsValue) -> None:
        js_target = js_event.target.closest("[data-action], [data-chat-id]")
        if not present(js_target) or js_target.disabled:
            return
        chat_id = text_or_none(js_target.getAttribute("data-chat-id"))
        if chat_id is not None and present(js_target.closest("#chat-list")):
            self._controller.select_chat(chat_id)
            return
        action = str(js_target.getAttribute("data-action") or "")
        if action in ("thinking", "tools", "send"):
            return  # NOTE: toggles have their own listener; Send submits the form.
        self._controller.click(action, text_or_none(js_target.getAttribute("data-message-id")))

    def _on_toggle(self, js_event: JsValue) -> None:
        js_button = js_event.currentTarget
        pressed = str(js_button.getAttribute("aria-pressed")) == "true"
        js_button.setAttribute("aria-pressed", "false" if pressed else "true")

    def _on_files(self, js_event: JsValue) -> None:
        js_files = js_event.target.files
        files = [js_files.item(i) for i in range(int(js_files.length))]
        js_event.target.value = ""
        spawn(self._upload(files))

    async def _upload(self, js_files: list[JsValue]) -> None:
        js_note = query("#attachment-list")
        for js_file in js_files:
            js_form = js.FormData.new()
            js_form.append("file", js_file, js_file.name)
            try:
                info = await upload_form(f"{self._api}/api/attachments", js_form)
            except (HttpStatusError, TransportError) as error:
                js_note.textContent = f"{js_file.name}: {error.message} ({error.code})"
                continue
            self._attachments.append(info.attachment_id)
            js_note.textContent = f"Attached: {len(self._attachments)} file(s)"


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


_background: set[Any] = set()


def spawn(coroutine: Any) -> None:
    """Run a coroutine in the background, keeping a reference until it ends."""
    task = asyncio.ensure_future(coroutine)
    _background.add(task)
    task.add_done_callback(_background.discard)


async def load_models(api_base: str = "") -> None:
    """Fill the model picker from ``GET /api/models`` (unavailable models stay visible)."""
    models = [ModelInfo.model_validate(item) for item in await fetch_json(f"{api_base}/api/models")]
    js_select = query("select[name=model]")
    js_select.innerHTML = ""
    for model in models:
        js_option = js.document.createElement("option")
        js_option.value = model.id
        js_option.textContent = model.label
        js_select.appendChild(js_option)


def mark_ready() -> None:
    """``html[data-ready]``: Python has booted and the composer works."""
    query("#boot-text").textContent = "Ready"
    js_root = js.document.documentElement
    js_root.setAttribute("data-boot", "ready")
    js_root.setAttribute("data-ready", "")


def mark_boot_failed(message: str) -> None:
    """Say in the page that start-up failed, and why."""
    query("#boot-text").textContent = f"Riacho could not start: {message}"
    js.document.documentElement.setAttribute("data-boot", "failed")


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
