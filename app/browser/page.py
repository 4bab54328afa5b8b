"""The page's controls: the composer, clicks, keys and uploads, bound to the controller."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import js
from pyodide.ffi import create_once_callable

from app.browser.edge import JsValue, Listeners, present, query, spawn, text_or_none
from app.run.chat_stream import SendOptions
from app.run.transport import ChatApi
from app.ui.controller import Composer, Controller, key_intent
from app.wire.api import AttachmentInfo, ModelInfo, SessionInfo
from app.wire.errors import HttpStatusError, TransportError


def read_composer(attachments: Sequence[AttachmentInfo]) -> Composer:
    """The composer's current values."""
    effort = str(query("select[name=reasoningEffort]").value)
    model = str(query("select[name=model]").value)
    options = SendOptions(
        thinking_enabled=_pressed("[data-action=thinking]"),
        reasoning_effort=effort if effort in ("low", "medium", "high") else None,  # type: ignore[arg-type]
        tool_intent=_pressed("[data-action=tools]"),
        model_id=model or None,
        attachments=tuple(attachments),
    )
    return Composer(str(query("textarea[name=prompt]").value), options)


def _pressed(selector: str) -> bool:
    return str(query(selector).getAttribute("aria-pressed")) == "true"


async def signed_in(api: ChatApi) -> SessionInfo:
    """The session: at once where the server knows the user, else after the sign-in form."""
    try:
        return await api.start_session()
    except HttpStatusError as error:
        if error.status != 401:
            raise
    return await _sign_in(api)


async def _sign_in(api: ChatApi) -> SessionInfo:
    """Show the sign-in form until a name and password match (the boot waits here)."""
    js_form, js_error = query("form[name=sign-in]"), query("#sign-in-error")
    query("#boot-text").textContent = "Sign in to continue"
    js_form.hidden = False
    query("input[name=username]").focus()
    listeners = Listeners()
    submitted: asyncio.Queue[tuple[str, str]] = asyncio.Queue()

    def on_submit(js_event: JsValue) -> None:
        js_event.preventDefault()
        name = str(query("input[name=username]").value).strip()
        submitted.put_nowait((name, str(query("input[name=password]").value)))

    listeners.on(js_form, "submit", on_submit)
    try:
        while True:
            name, password = await submitted.get()
            try:
                session = await api.sign_in(name, password)
            except (HttpStatusError, TransportError) as error:
                js_error.textContent = f"{error.message} ({error.code})"
                continue
            js_form.hidden = True
            return session
    finally:
        listeners.teardown()
        query("input[name=password]").value = ""


def show_account(session: SessionInfo) -> None:
    """Who is signed in, and the sign-out button where accounts exist."""
    if session.auth == "anonymous":
        return
    query("#account-name").textContent = session.name
    query("[data-action=sign-out]").hidden = session.auth != "password"
    query("#account").hidden = False


def copy_to_clipboard(text: str) -> None:
    """Copy ``text``; a refused clipboard (no permission) is ignored, not an error."""
    js_promise = js.navigator.clipboard.writeText(text)
    js_promise.catch(create_once_callable(lambda _error: None))


class Page:
    """Binds the page's controls to the controller; every listener is torn down together."""

    def __init__(self, controller: Controller, api: ChatApi) -> None:
        self._controller = controller
        self._api = api
        self._listeners = Listeners()
        self._attachments: list[AttachmentInfo] = []

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
        if action == "sign-out":
            spawn(self._sign_out())
            return
        self._controller.click(action, text_or_none(js_target.getAttribute("data-message-id")))

    async def _sign_out(self) -> None:
        try:
            await self._api.sign_out()
        finally:
            js.location.reload()

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
            try:
                info = await self._api.upload_attachment(js_file)
            except (HttpStatusError, TransportError) as error:
                js_note.textContent = f"{js_file.name}: {error.message} ({error.code})"
                continue
            self._attachments.append(info)
            js_note.textContent = f"Attached: {len(self._attachments)} file(s)"


def show_models(models: Sequence[ModelInfo]) -> None:
    """Fill the model picker (unavailable models stay visible)."""
    js_select = query("select[name=model]")
    js_select.innerHTML = ""
    for model in models:
        js_option = js.document.createElement("option")
        js_option.value = model.id
        js_option.textContent = model.label
        js_select.appendChild(js_option)
