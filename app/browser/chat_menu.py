"""The chat list's menu (Rename, Pin/Unpin, Delete) and its dialogs, and the list's keys.

The menu is one element of the page (``#chat-menu``, ``role=menu``) opened under the ``⋯``
button of an entry (app/ui/chat_menu.py renders the buttons): it survives the list being
rendered again. Keys follow the menu-button pattern: Enter, Space or ArrowDown on the button
open it on its first item; ArrowDown/ArrowUp/Home/End move; Escape closes it and returns to the
button; Tab closes it. Delete asks first in a dialog of the page, and the chat stays listed
until the server confirms. In the list, ArrowDown/ArrowUp move between the chats (from the
search box too), Enter opens one, and Escape ends a search.
"""

from __future__ import annotations

import asyncio

import js

from app.browser.edge import JsValue, Listeners, present, query, spawn, text_or_none
from app.browser.net import Backend, fetch_json
from app.run.chat_stream import ChatStream
from app.wire.errors import ChatError

ITEMS = "#chat-menu [role=menuitem]"
CHAT_ITEMS = "#chat-list .chat-item"


def _button_for(chat_id: str) -> JsValue:
    """The entry's menu button (a JS null once the chat is gone: test with ``present``)."""
    return js.document.querySelector(f'[data-action=chat-menu][data-menu-for="{chat_id}"]')


class ChatMenus:
    """Binds the menu, its two dialogs and the list's keys; torn down with the page."""

    def __init__(self, stream: ChatStream, backend: Backend) -> None:
        self._stream = stream
        self._backend = backend
        self._listeners = Listeners()
        self._chat_id: str | None = None  # whose menu (or dialog) is open

    def bind(self) -> None:
        on = self._listeners.on
        on(query("#chat-list"), "click", self._on_list_click)
        on(query("#chat-list"), "keydown", self._on_list_key)
        on(query("input[name=chat-search]"), "keydown", self._on_search_key)
        on(query("#chat-menu"), "click", self._on_item)
        on(query("#chat-menu"), "keydown", self._on_menu_key)
        on(query("body"), "click", self._on_outside_click)
        for selector in ("#chat-rename-dialog", "#chat-delete-dialog"):
            js_dialog = query(selector)
            on(js_dialog, "keydown", _keep_escape_in)
            on(js_dialog, "click", self._on_dialog_click)
            on(js_dialog, "close", self._on_dialog_closed)
        on(query("form[name=chat-rename]"), "submit", self._on_rename)

    def teardown(self) -> None:
        self._listeners.teardown()

    # --- the menu ---------------------------------------------------------------------------------

    def _on_list_click(self, js_event: JsValue) -> None:
        js_button = js_event.target.closest("[data-action=chat-menu]")
        if not present(js_button):
            return
        chat_id = text_or_none(js_button.getAttribute("data-menu-for"))
        if chat_id is None:
            return
        if self._chat_id == chat_id and not bool(query("#chat-menu").hidden):
            self._close_menu(refocus=True)
        else:
            self._open_menu(js_button, chat_id)

    def _open_menu(self, js_button: JsValue, chat_id: str) -> None:
        self._close_menu(refocus=False)
        self._chat_id = chat_id
        pinned = str(js_button.getAttribute("data-pinned")) == "true"
        query("#chat-menu [data-action=chat-pin]").textContent = "Unpin" if pinned else "Pin"
        js_menu = query("#chat-menu")
        js_menu.hidden = False
        _place(js_menu, js_button)
        js_button.setAttribute("aria-expanded", "true")
        _focus_item(0)

    def _close_menu(self, *, refocus: bool) -> None:
        js_menu = query("#chat-menu")
        if bool(js_menu.hidden):
            return
        js_menu.hidden = True
        if self._chat_id is None:
            return
        js_button = _button_for(self._chat_id)
        if present(js_button):
            js_button.setAttribute("aria-expanded", "false")
            if refocus:
                js_button.focus()

    def _on_outside_click(self, js_event: JsValue) -> None:
        inside = "#chat-menu, [data-action=chat-menu]"
        if not present(js_event.target.closest(inside)):
            self._close_menu(refocus=False)

    def _on_menu_key(self, js_event: JsValue) -> None:
        key = str(js_event.key)
        items = list(js.document.querySelectorAll(ITEMS))
        at = next((i for i, item in enumerate(items) if item == js.document.activeElement), 0)
        moves = {"ArrowDown": at + 1, "ArrowUp": at - 1, "Home": 0, "End": len(items) - 1}
        if key in moves:
            js_event.preventDefault()
            _focus_item(moves[key] % len(items))
        elif key == "Escape":
            js_event.preventDefault()
            js_event.stopPropagation()  # NOTE: never reaches the page's Escape (Stop)
            self._close_menu(refocus=True)
        elif key == "Tab":
            self._close_menu(refocus=False)

    def _on_item(self, js_event: JsValue) -> None:
        js_item = js_event.target.closest("[role=menuitem]")
        chat_id = self._chat_id
        if not present(js_item) or chat_id is None:
            return
        action = str(js_item.getAttribute("data-action"))
        pinned = str(js_item.textContent) == "Unpin"
        self._close_menu(refocus=action == "chat-pin")
        if action == "chat-rename":
            self._open_rename(chat_id)
        elif action == "chat-pin":
            spawn(self._pin(chat_id, not pinned))
        elif action == "chat-delete":
            self._open_delete(chat_id)

    async def _pin(self, chat_id: str, pinned: bool) -> None:
        url = self._backend.url(f"/api/chats/{chat_id}")
        try:
            await fetch_json(url, method="PATCH", payload={"pinned": pinned})
        except ChatError as error:
            self._stream.report_error(error)
            return
        await self._stream.refresh_chats()
        js_button = _button_for(chat_id)
        if present(js_button):
            js_button.focus()

    # --- rename and delete ---------------------------------------------------------------------

    def _title_of(self, chat_id: str) -> str:
        chat = self._stream.get_state().chats.get(chat_id)
        return (chat.title if chat is not None else "") or "New chat"

    def _open_rename(self, chat_id: str) -> None:
        self._chat_id = chat_id
        js_dialog = query("#chat-rename-dialog")
        js_input = query("input[name=chat-new-title]")
        js_input.value = self._title_of(chat_id)
        js_dialog.querySelector("[data-dialog-note]").textContent = ""
        js_dialog.showModal()
        js_input.select()

    def _on_rename(self, js_event: JsValue) -> None:
        js_event.preventDefault()
        chat_id = self._chat_id
        title = " ".join(str(query("input[name=chat-new-title]").value).split())
        js_dialog = query("#chat-rename-dialog")
        if not title:
            js_dialog.querySelector("[data-dialog-note]").textContent = "A chat needs a title."
            return
        if chat_id is not None:
            self._stream.rename_chat(chat_id, title)
        js_dialog.close()

    def _open_delete(self, chat_id: str) -> None:
        self._chat_id = chat_id
        js_dialog = query("#chat-delete-dialog")
        js_dialog.querySelector(
            "[data-delete-words]"
        ).textContent = f"“{self._title_of(chat_id)}” and all its messages will be deleted."
        js_dialog.querySelector("[data-dialog-note]").textContent = ""
        query("[data-action=confirm-chat-delete]").disabled = False
        js_dialog.showModal()
        js_dialog.querySelector("[data-action=close-dialog]").focus()

    def _on_dialog_click(self, js_event: JsValue) -> None:
        js_target = js_event.target.closest("[data-action]")
        if not present(js_target):
            return
        action = str(js_target.getAttribute("data-action"))
        if action == "close-dialog":
            js_target.closest("dialog").close()
        elif action == "confirm-chat-delete" and self._chat_id is not None:
            spawn(self._delete(self._chat_id, js_target))

    async def _delete(self, chat_id: str, js_confirm: JsValue) -> None:
        js_dialog = query("#chat-delete-dialog")
        js_note = js_dialog.querySelector("[data-dialog-note]")
        js_confirm.disabled = True
        js_note.textContent = "Deleting…"
        task = self._stream.delete_chat(chat_id)
        if task is not None:
            await asyncio.wait({task})
        if chat_id in self._stream.get_state().chats:
            js_note.textContent = "The chat could not be deleted; it is still here."
            js_confirm.disabled = False
            return
        js_dialog.close()

    def _on_dialog_closed(self, _js_event: JsValue) -> None:
        chat_id = self._chat_id
        js_button = None if chat_id is None else _button_for(chat_id)
        if js_button is not None and present(js_button):
            js_button.focus()
        else:
            query("input[name=chat-search]").focus()

    # --- the list's keys -----------------------------------------------------------------------

    def _on_search_key(self, js_event: JsValue) -> None:
        if str(js_event.key) == "ArrowDown":
            js_first = js.document.querySelector(CHAT_ITEMS)
            if present(js_first):
                js_event.preventDefault()
                js_first.focus()

    def _on_list_key(self, js_event: JsValue) -> None:
        js_target = js_event.target
        if not bool(js_target.classList.contains("chat-item")):
            return
        key = str(js_event.key)
        if key in ("ArrowDown", "ArrowUp"):
            js_event.preventDefault()
            items = list(js.document.querySelectorAll(CHAT_ITEMS))
            at = next(i for i, item in enumerate(items) if item == js_target)
            step = 1 if key == "ArrowDown" else -1
            if 0 <= at + step < len(items):
                items[at + step].focus()
            elif step < 0:
                query("input[name=chat-search]").focus()
        elif key == "Escape" and self._stream.get_state().search is not None:
            js_event.stopPropagation()  # NOTE: ends the search, never stops an answer
            js_search = query("input[name=chat-search]")
            js_search.value = ""
            self._stream.search("")
            js_search.focus()


def _focus_item(index: int) -> None:
    js_items = js.document.querySelectorAll(ITEMS)
    if int(js_items.length) > index:
        js_items.item(index).focus()


def _place(js_menu: JsValue, js_button: JsValue) -> None:
    """Under the button, its right edges aligned, inside the window."""
    js_menu.style.top = "0px"
    js_menu.style.left = "0px"
    origin, box = js_menu.getBoundingClientRect(), js_button.getBoundingClientRect()
    width, height = float(js_menu.offsetWidth), float(js_menu.offsetHeight)
    left = max(8.0, min(float(box.right) - width, float(js.innerWidth) - width - 8))
    top = float(box.bottom) + 4
    if top + height > float(js.innerHeight) - 8:
        top = max(8.0, float(box.top) - height - 4)
    js_menu.style.left = f"{left - float(origin.left):.0f}px"
    js_menu.style.top = f"{top - float(origin.top):.0f}px"


def _keep_escape_in(js_event: JsValue) -> None:
    """Escape closes the dialog (the browser's own) and nothing else."""
    if str(js_event.key) == "Escape":
        js_event.stopPropagation()
