"""A chat as a file, in the browser (SPEC §14): Export downloads what the server answers, with
the session's credentials (so a page served from another origin than its API works too);
Import sends a chosen JSON file and opens the chat it made, or says in words why not.

The branch on screen is the one whose last answer the page shows: its run id goes as ``leaf``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from urllib.parse import quote

import js

from app.browser.edge import JsValue, log, present, query, spawn, text_or_none
from app.browser.net import Backend, fetch
from app.run.chat_stream import ChatStream
from app.ui.export_menu import (
    IMPORT_ERROR_SELECTOR,
    export_file_name,
    import_failed_words,
    import_refused_words,
)
from app.ui.render import ERROR_TEXT
from app.wire.api import parse_http_error
from app.wire.chat_file import EXPORT_FORMATS, MAX_IMPORT_BYTES, ExportFormat
from app.wire.errors import ChatError

IMPORT_INPUT = "input[type=file][name=import]"


class ChatFiles:
    """Export and Import; ``active`` names the chat on screen (and its title), ``opened`` is
    called with an imported chat's id once the list has it."""

    def __init__(
        self,
        backend: Backend,
        active: Callable[[], tuple[str, str] | None],
        opened: Callable[[str], Awaitable[None]],
    ) -> None:
        self._backend = backend
        self._active = active
        self._opened = opened

    def export(self, js_button: JsValue) -> None:
        """Download the active chat in the format of the button pressed."""
        kind = str(js_button.getAttribute("data-format") or "")
        active = self._active()
        if active is None or kind not in EXPORT_FORMATS:
            return
        js_menu = js_button.closest("details")
        if present(js_menu):
            js_menu.open = False
        spawn(self._download(active[0], active[1], kind))

    async def _download(self, chat_id: str, title: str, kind: ExportFormat) -> None:
        path = f"/api/chats/{quote(chat_id, safe='')}/export?format={kind}"
        leaf = _leaf_on_screen()
        if kind == "markdown" and leaf is not None:
            path += f"&leaf={quote(leaf, safe='')}"
        try:
            js_response = await fetch(self._backend.url(path), headers={"Accept": "*/*"})
            if not js_response.ok:
                raise parse_http_error(int(js_response.status), str(await js_response.text()))
            js_blob = await js_response.blob()
        except ChatError as error:
            _say(f"The chat could not be exported. {ERROR_TEXT.get(error.code, error.message)}")
            return
        disposition = text_or_none(js_response.headers.get("Content-Disposition"))
        _save(js_blob, export_file_name(disposition, title, kind))

    def on_file(self, js_event: JsValue) -> None:
        """A file was chosen in Import: send it."""
        js_input = js_event.target
        js_files = js_input.files
        if not present(js_files) or int(js_files.length) == 0:
            return
        js_file = js_files.item(0)
        js_input.value = ""  # NOTE: the same file chosen again is a new change
        spawn(self._import(js_file))

    async def _import(self, js_file: JsValue) -> None:
        name = str(js_file.name)
        _say("")
        if int(js_file.size) > MAX_IMPORT_BYTES:
            _say(import_refused_words(name, "a chat file is at most 8 MB"))
            return
        try:
            js_response = await fetch(
                self._backend.url("/api/chats/import"),
                method="POST",
                body=await js_file.text(),
                headers={"Content-Type": "application/json"},
            )
            text = str(await js_response.text())
            if not js_response.ok:
                raise parse_http_error(int(js_response.status), text)
        except ChatError as error:
            log(f"riacho import {name}: {error.code}: {error.message}")
            words = ERROR_TEXT.get(error.code, error.message)
            refused = error.code == "invalid_import"
            _say(
                import_refused_words(name, error.message)
                if refused
                else import_failed_words(name, words)
            )
            return
        await self._opened(str(json.loads(text)["id"]))


def _leaf_on_screen() -> str | None:
    """The run id of the last answer on screen (the server knows an answer by it too)."""
    js_shown = js.document.querySelectorAll("#message-column [data-role=assistant][data-run-id]")
    count = int(js_shown.length)
    if count == 0:
        return None
    return text_or_none(js_shown.item(count - 1).getAttribute("data-run-id"))


def _save(js_blob: JsValue, name: str) -> None:
    """Hand the browser a download of ``js_blob`` named ``name``."""
    js_url = js.URL.createObjectURL(js_blob)
    js_link = js.document.createElement("a")
    js_link.href = js_url
    js_link.download = name
    js_link.hidden = True
    js.document.body.appendChild(js_link)
    js_link.click()
    js_link.remove()
    js.setTimeout(js.URL.revokeObjectURL.bind(js.URL, js_url), 10_000)


def _say(words: str) -> None:
    """Show (or clear) the words under Import; a screen reader hears them (``role=alert``)."""
    js_note = query(IMPORT_ERROR_SELECTOR)
    js_note.textContent = words
    js_note.hidden = not words


def for_stream(backend: Backend, stream: ChatStream) -> ChatFiles:
    """Export and Import for the page's chats: the active chat is exported; an imported chat
    joins the list and opens."""

    def active() -> tuple[str, str] | None:
        chat = stream.get_state().active_chat
        return None if chat is None else (chat.chat_id, chat.title)

    async def opened(chat_id: str) -> None:
        await stream.refresh_chats()
        if chat_id in stream.get_state().chats:
            stream.select_chat(chat_id)

    return ChatFiles(backend, active, opened)
