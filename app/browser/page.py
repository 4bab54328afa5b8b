"""The page's controls: the composer, clicks, keys, uploads, drafts, the drawer, bound to the
controller. What the user sees of them comes from the view; this module reads the DOM, keeps
what only the page holds (files being uploaded, unsent drafts) and calls the controller."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import js
from pyodide.ffi import create_once_callable

from app.browser import device, tool_decisions
from app.browser.chat_files import IMPORT_INPUT, ChatFiles
from app.browser.code_runner import CodeRunner
from app.browser.dom import BrowserDom
from app.browser.drawer import Drawer
from app.browser.edge import (
    JsValue,
    Listeners,
    present,
    query,
    request_frame,
    spawn,
    text_or_none,
)
from app.browser.sign_in import sign_in_form
from app.browser.title_field import save_title_on_blur
from app.run.transport import ChatApi
from app.state.actions import FileAdded, FileChanged, FileRemoved, OptionsChanged
from app.state.history import ChatView
from app.state.state import (
    ComposerFile,
    ComposerOptions,
    options_from_kept,
    options_to_keep,
    refusal,
)
from app.ui.composer_hint import WAIT_WORDS
from app.ui.controller import Composer, Controller, key_intent, shortcut_for
from app.ui.partial_copy import COPIED_PARTIAL_WORDS, COPY_PARTIAL_WORDS
from app.wire.api import ModelInfo, SessionInfo, UploadLimits
from app.wire.errors import HttpStatusError, TransportError
from app.wire.hooks import PageAction, is_page_action

SEARCH_DELAY_MS = 250
DRAFT_KEY = "riacho.draft."
NEW_CHAT_DRAFT = "new"


def picked_model() -> str | None:
    """The model picker's choice."""
    return str(query("select[name=model]").value) or None


OPTIONS_KEY = "riacho.options"
PROMPT = "textarea[name=prompt]"
TITLE_OR_PROMPT = "[data-action=rename-chat], textarea[name=prompt]"

Handler = Callable[[JsValue, str | None], None]
"""What a click does: given the element pressed and its message's id (if any)."""


@dataclass(frozen=True, slots=True)
class Act:
    """A ``[data-action]``'s row: what it does, and where focus goes after it (the first of
    ``focus``'s selectors on the page, once the view shows the result)."""

    run: Handler | None
    focus: str | None = None


def keep_options(options: ComposerOptions) -> None:
    """Remember Thinking, Tools and the effort in ``localStorage`` (a reload keeps them)."""
    try:
        js.localStorage.setItem(OPTIONS_KEY, json.dumps(options_to_keep(options)))
    except Exception:  # NOTE: storage refused (private mode, quota): options are a nicety
        return


def kept_options() -> ComposerOptions | None:
    """The options :func:`keep_options` remembered, if any."""
    try:
        return options_from_kept(json.loads(str(js.localStorage.getItem(OPTIONS_KEY) or "null")))
    except Exception:
        return None


async def signed_in(api: ChatApi) -> SessionInfo:
    """The session: at once where the server knows the user, else after the sign-in form."""
    try:
        return await api.start_session()
    except HttpStatusError as error:
        if error.status != 401:
            raise
    return await sign_in_form(api)


def show_account(session: SessionInfo) -> None:
    """Who is signed in, and the sign-out button where accounts exist."""
    if session.auth == "anonymous":
        return
    query("#account-name").textContent = session.name
    for action in ("sign-out", "sign-out-everywhere"):
        query(f"[data-action={action}]").hidden = session.auth != "password"
    query("#account").hidden = False


def _say_copied(js_button: JsValue, words: str) -> None:
    """'Copied' on the button for two seconds, then as it was: its ``words`` (a button of
    words), or its icon alone (an icon button gets the word beside its icon meanwhile)."""
    label = str(js_button.getAttribute("aria-label") or "")
    js_words = js.document.createElement("span")
    js_words.textContent = "Copied"
    if words:
        js_button.replaceChildren(js_words)
    else:
        js_button.append(js_words)
    js_button.setAttribute("aria-label", "Copied")
    js_button.setAttribute("data-copied", "")

    def restore() -> None:
        js_button.removeAttribute("data-copied")
        js_button.setAttribute("aria-label", label)
        if words:
            js_button.textContent = words
        else:
            js_words.remove()

    js.setTimeout(create_once_callable(restore), 2000)


def copy_to_clipboard(text: str) -> None:
    """Copy ``text``; a refused clipboard (no permission) is ignored, not an error."""
    js_promise = js.navigator.clipboard.writeText(text)
    js_promise.catch(create_once_callable(lambda _error: None))


def show_models(models: Sequence[ModelInfo]) -> None:
    """Fill the model picker; an unavailable model is listed, disabled, with the reason."""
    js_select = query("select[name=model]")
    js_select.innerHTML = ""
    for model in models:
        js_option = js.document.createElement("option")
        js_option.value = model.id
        if model.available:
            note = f" — tools: {model.tools_note}" if model.tools_note else ""
            js_option.textContent = model.label + note
            js_option.title = model.tools_note or ""
        else:
            reason = model.unavailable_reason or "unavailable right now"
            js_option.textContent = f"{model.label} — unavailable: {reason}"
            js_option.disabled = True
            js_option.title = reason
        js_select.appendChild(js_option)


def _is_typing(js_target: JsValue) -> bool:
    """Whether a key goes into a field (single-key shortcuts stay out of the way)."""
    if not present(js_target) or not present(getattr(js_target, "tagName", None)):
        return False
    tag = str(js_target.tagName).lower()
    return tag in ("input", "textarea", "select") or bool(js_target.isContentEditable)


class Drafts:
    """The unsent prompt of each chat, kept in ``localStorage`` so a reload keeps it."""

    def __init__(self) -> None:
        self._chat: str = NEW_CHAT_DRAFT

    def switch(self, chat_id: str | None, *, made_here: bool = False) -> None:
        """Keep the composer's text for the chat left; show the draft of ``chat_id``. A chat
        just made by a send takes the new chat's draft over (the send clears it)."""
        if made_here and chat_id is not None:
            self._save(self._chat, "")
            self._chat = chat_id
            return
        js_prompt = query("textarea[name=prompt]")
        self._save(self._chat, str(js_prompt.value))
        self._chat = chat_id or NEW_CHAT_DRAFT
        js_prompt.value = self._load(self._chat)
        js_prompt.dispatchEvent(js.Event.new("input"))

    def keep(self, text: str) -> None:
        self._save(self._chat, text)

    def restore(self) -> None:
        js_prompt = query("textarea[name=prompt]")
        if not str(js_prompt.value):
            js_prompt.value = self._load(self._chat)

    @staticmethod
    def _save(chat: str, text: str) -> None:
        try:
            if text.strip():
                js.localStorage.setItem(DRAFT_KEY + chat, text)
            else:
                js.localStorage.removeItem(DRAFT_KEY + chat)
        except Exception:  # NOTE: storage refused (private mode, quota): drafts are a nicety
            return

    @staticmethod
    def _load(chat: str) -> str:
        try:
            return text_or_none(js.localStorage.getItem(DRAFT_KEY + chat)) or ""
        except Exception:
            return ""


class LocalViews:
    """Each chat's view (the branch and the attempts on screen) in ``localStorage``."""

    KEY = "riacho.view."

    def load(self, chat_id: str) -> ChatView | None:
        try:
            return ChatView.from_json(json.loads(str(js.localStorage.getItem(self.KEY + chat_id))))
        except Exception:  # NOTE: none kept, storage refused, or not JSON: shown as read
            return None

    def save(self, chat_id: str, view: ChatView) -> None:
        try:
            js.localStorage.setItem(self.KEY + chat_id, json.dumps(view.to_json()))
        except Exception:  # NOTE: storage refused (private mode, quota): a nicety
            return


class Files:
    """The composer's uploads: each file checked against the server's limits, uploaded with
    progress, removable at any time (an upload in flight is aborted). The files themselves are
    in the store (``State.composer``); this holds what only the page can: the upload tasks."""

    def __init__(self, api: ChatApi, limits: UploadLimits | None, controller: Controller):
        self._api = api
        self._limits = limits
        self._controller = controller
        self._uploads: dict[str, asyncio.Task[None]] = {}
        self._count = 0

    def add(self, js_file: JsValue) -> None:
        self._count += 1
        key = f"file_{self._count}"
        name, size, mime = str(js_file.name), int(js_file.size), str(js_file.type or "")
        preview = str(js.URL.createObjectURL(js_file)) if mime.startswith("image/") else None
        item = ComposerFile(key, name, size, mime, preview_url=preview)
        files = self._controller.composer.files
        why = None if self._limits is None else refusal(item, files, self._limits)
        if why is not None:
            self._controller.compose(FileAdded(replace(item, error=why)))
            return
        self._controller.compose(FileAdded(replace(item, progress=0.0)))
        self._uploads[key] = asyncio.ensure_future(self._upload(key, js_file))

    async def _upload(self, key: str, js_file: JsValue) -> None:
        def progress(sent: int, total: int) -> None:
            self._controller.compose(FileChanged(key, progress=sent / total if total else 0.0))

        try:
            info = await self._api.upload_attachment(js_file, progress)
        except (HttpStatusError, TransportError) as error:
            self._controller.compose(FileChanged(key, error=error.message))
        else:
            self._controller.compose(FileChanged(key, attachment=info))
        finally:
            self._uploads.pop(key, None)

    def remove(self, key: str) -> None:
        upload = self._uploads.pop(key, None)
        if upload is not None:
            upload.cancel()
        for item in self._controller.composer.files:
            if item.key == key and item.preview_url:
                js.URL.revokeObjectURL(item.preview_url)
        self._controller.compose(FileRemoved(key))

    def clear(self) -> None:
        for item in self._controller.composer.files:
            self.remove(item.key)


class Page:
    """Binds the page's controls to the controller; every listener is torn down together."""

    def __init__(
        self,
        controller: Controller,
        api: ChatApi,
        dom: BrowserDom,
        limits: UploadLimits | None = None,
        code: CodeRunner | None = None,
        chat_files: ChatFiles | None = None,
    ) -> None:
        self._controller = controller
        self._api = api
        self._dom = dom
        self._listeners = Listeners()
        self.drafts = Drafts()
        self._files = Files(api, limits, controller)
        self._code = code or CodeRunner()
        self._chat_files = chat_files
        self._search_timer: int | None = None
        self._drawer = Drawer()

    def bind(self) -> None:
        on = self._listeners.on
        js_prompt = query("textarea[name=prompt]")
        on(query("#composer"), "submit", self._on_submit)
        on(js_prompt, "keydown", self._on_prompt_key)
        on(js_prompt, "input", self._on_prompt_input)
        on(js.document, "keydown", self._on_document_key)
        on(js.document, "submit", self._on_form_submit)
        on(js.document.body, "click", self._on_click)
        on(js.document.body, "keydown", self._on_edit_key)
        on(query("input[type=file][name=attachments]"), "change", self._on_files)
        if self._chat_files is not None:
            on(query(IMPORT_INPUT), "change", self._chat_files.on_file)
        on(js_prompt, "paste", self._on_paste)
        for kind in ("dragover", "dragleave", "drop"):
            on(js.document, kind, self._on_drag)
        on(query("input[name=chat-search]"), "input", self._on_search)
        for selector in ("[data-action=thinking]", "[data-action=tools]"):
            on(query(selector), "click", self._on_toggle)
        on(query("select[name=reasoningEffort]"), "change", self._on_effort)
        on(js.document, "focusout", lambda event: save_title_on_blur(event, self._controller))
        self._drawer.bind(self._listeners)

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
            "input[name=chat-search]",
            IMPORT_INPUT,
        ):
            query(selector).disabled = False
        kept = kept_options()
        if kept is not None:
            self._controller.compose(OptionsChanged(kept))
        self.drafts.restore()
        _autosize(query("textarea[name=prompt]"))

    # --- sending ---------------------------------------------------------------------------------

    def _submit(self) -> None:
        if self._controller.generating:
            self._dom.announce(WAIT_WORDS)  # NOTE: the hint says it too (app/ui/composer_hint.py)
            return
        composer = self._controller.composer
        if composer.uploading:
            self._dom.announce("Wait until the files have uploaded")
            return
        refused = composer.refused
        if refused:
            self._controller.refuse_send(", ".join(f"{i.name}: {i.error}" for i in refused))
            _focus_field(f'[data-file-key="{refused[0].key}"]')
            return
        js_prompt = query("textarea[name=prompt]")
        if self._controller.submit(self._composer()):
            self._close_options()
            js_prompt.value = ""
            _autosize(js_prompt)
            self.drafts.keep("")
            self._files.clear()
            self._dom.follow()

    def _retry(self) -> None:
        """The banner's Retry: send the prompt the failed request gave back to the composer."""
        js_prompt = query("textarea[name=prompt]")
        if str(js_prompt.value).strip():
            self._submit()
        else:
            self._controller.click("dismiss-error")
            js_prompt.focus()

    def send_queued(self, prompt: str) -> None:
        """Send a prompt typed before Python started, with the composer's options now."""
        options = replace(self._controller.options_now(), attachments=())
        if self._controller.submit(Composer(prompt, options)):
            self._dom.follow()

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

    def _on_prompt_input(self, js_event: JsValue) -> None:
        js_prompt = js_event.target
        _autosize(js_prompt)
        self.drafts.keep(str(js_prompt.value))

    # --- keys ------------------------------------------------------------------------------------

    def _on_document_key(self, js_event: JsValue) -> None:
        key = str(js_event.key)
        if key == "Escape":
            self._on_escape(js_event)
            return
        modified = bool(js_event.ctrlKey or js_event.altKey or js_event.metaKey)
        shortcut = shortcut_for(key, typing=_is_typing(js_event.target), modified=modified)
        if shortcut is None:
            return
        js_event.preventDefault()
        match shortcut:
            case "new-chat":
                self._act("new-chat", None)
            case "focus-composer":
                query("textarea[name=prompt]").focus()
            case "copy-last":
                copied = self._controller.copy_last_answer()
                self._dom.announce("Copied the last answer" if copied else "No answer to copy")
            case "show-shortcuts":
                query("#shortcuts").showModal()

    def _on_escape(self, js_event: JsValue) -> None:
        if bool(query("#shortcuts").open):
            return  # NOTE: the dialog closes itself
        js_search = query("input[name=chat-search]")
        if js_event.target == js_search and (str(js_search.value) or not self._drawer.is_open):
            # NOTE: Escape in the search box ends the search (the browser clears the box
            # without an input event) and never stops an answer; in the drawer, an empty
            # search box's Escape closes the drawer
            js_search.value = ""
            self._on_search(js_event)
            return
        if self._controller.cancel_editing():
            query("textarea[name=prompt]").focus()
            return
        if self._close_options():
            query("[data-action=composer-options]").focus()
            return
        if self._drawer.is_open:
            self._drawer.close()
            return
        if key_intent("Escape", shift=False) == "stop":
            self._act("stop", None)

    def _on_edit_key(self, js_event: JsValue) -> None:
        """Enter sends an edited prompt, Shift+Enter adds a line; Escape is the document's."""
        js_target = js_event.target
        if not present(js_target) or str(js_target.getAttribute("name") or "") != "edit-prompt":
            return
        intent = key_intent(
            str(js_event.key), shift=bool(js_event.shiftKey), composing=bool(js_event.isComposing)
        )
        if intent == "send":
            js_event.preventDefault()
            self._save_edit(js_target.closest("form"))

    # --- clicks ----------------------------------------------------------------------------------

    def _on_click(self, js_event: JsValue) -> None:
        inside = "#composer-options, [data-action=composer-options]"
        if not present(js_event.target.closest(inside)):
            self._close_options()  # NOTE: a tap anywhere else closes the options panel
        js_target = js_event.target.closest("[data-action], [data-chat-id]")
        if not present(js_target) or js_target.hasAttribute("disabled"):
            return
        chat_id = text_or_none(js_target.getAttribute("data-chat-id"))
        if chat_id is not None and present(js_target.closest("#chat-list")):
            self._controller.select_chat(chat_id)
            self._drawer.close()
            return
        action = str(js_target.getAttribute("data-action") or "")
        if is_page_action(action):
            self._act(action, js_target, text_or_none(js_target.getAttribute("data-message-id")))

    def _act(self, action: PageAction, js_target: JsValue, message_id: str | None = None) -> None:
        """Do ``action`` (a click, or the key that stands for it), then move the keyboard to
        where the table says, once the view shows the action's result."""
        act = self._actions()[action]
        if act.run is not None:
            act.run(js_target, message_id)
        focus = act.focus
        if focus is not None:
            request_frame(lambda: _focus_field(focus))

    def _actions(self) -> dict[PageAction, Act]:
        """Every ``[data-action]``: what it does, and where focus goes after it."""
        tell = self._tell_controller
        return {
            # NOTE: toggles have their own listener, submit buttons submit their form, the
            # dialog's form closes it, and boot.js moves focus for the skip link from the start
            # and loads a new version
            "thinking": Act(None),
            "tools": Act(None),
            "send": Act(None),
            "save-edit": Act(None),
            "save-title": Act(None),
            "close-shortcuts": Act(None),
            "skip-to-composer": Act(None),
            "update-app": Act(None),  # NOTE: boot.js's, with the service worker
            "import-chat": Act(None),  # NOTE: a label: the browser opens the file chooser
            # NOTE: the chat list's menu and dialogs, and Settings: their own listeners
            # (app/browser/chat_menu.py, app/browser/settings_panel.py)
            "chat-menu": Act(None),
            "chat-rename": Act(None),
            "chat-pin": Act(None),
            "chat-delete": Act(None),
            "confirm-chat-delete": Act(None),
            "close-dialog": Act(None),
            "settings": Act(None),
            # the controller's, on the chat
            "stop": Act(tell("stop"), PROMPT),  # NOTE: focus never falls to <body> after Stop
            "compact": Act(tell("compact")),
            "dismiss-error": Act(tell("dismiss-error")),
            "dismiss-toast": Act(tell("dismiss-toast")),
            "rename-chat": Act(tell("rename-chat"), "input[name=chat-title]"),
            "cancel-title": Act(tell("cancel-title"), TITLE_OR_PROMPT),
            "delete-chat": Act(tell("delete-chat"), "[data-action=cancel-delete]"),
            "cancel-delete": Act(tell("cancel-delete"), TITLE_OR_PROMPT),
            "confirm-delete": Act(tell("confirm-delete"), PROMPT),
            # the controller's, on one message
            "edit": Act(tell("edit"), "textarea[name=edit-prompt]"),
            "cancel-edit": Act(tell("cancel-edit"), PROMPT),
            "resume": Act(tell("resume")),
            "regenerate": Act(self._regenerate),
            "approve-tool": Act(lambda target, _m: tool_decisions.decide(self._api, target, True)),
            "deny-tool": Act(lambda target, _m: tool_decisions.decide(self._api, target, False)),
            "edit-queued": Act(tell("edit-queued"), PROMPT),
            "remove-queued": Act(tell("remove-queued"), PROMPT),
            "copy": Act(lambda target, _m: self._copy_answer(target)),
            "copy-partial": Act(lambda target, _m: self._copy_answer(target, partial=True)),
            # NOTE: the switchers keep focus themselves (on the switcher of the message shown)
            "attempt-prev": Act(self._switcher("attempt-prev")),
            "attempt-next": Act(self._switcher("attempt-next")),
            "branch-prev": Act(self._switcher("branch-prev")),
            "branch-next": Act(self._switcher("branch-next")),
            # the page's own
            "new-chat": Act(lambda _t, _m: self._new_chat(), PROMPT),
            "sign-out": Act(lambda _t, _m: spawn(self._sign_out())),
            "sign-out-everywhere": Act(lambda _t, _m: spawn(self._sign_out(everywhere=True))),
            "copy-code": Act(lambda target, _m: self._copy_code(target)),
            "run-code": Act(lambda target, _m: self._code.run(target)),
            "stop-code": Act(lambda target, _m: self._code.stop(target)),
            "retry": Act(lambda _t, _m: self._retry()),
            "suggest": Act(lambda target, _m: self._suggest(target)),
            "jump-to-latest": Act(lambda _t, _m: self._dom.follow(), PROMPT),
            "remove-attachment": Act(lambda target, _m: self._remove_file(target), PROMPT),
            "open-drawer": Act(lambda _t, _m: self._drawer.open()),
            "close-drawer": Act(lambda _t, _m: self._drawer.close()),
            "composer-options": Act(lambda target, _m: self._toggle_options(target)),
            "shortcuts": Act(lambda _t, _m: query("#shortcuts").showModal()),
            "export-chat": Act(self._export),
        }

    def _export(self, js_target: JsValue, _message_id: str | None) -> None:
        if self._chat_files is not None:
            self._chat_files.export(js_target)

    def _regenerate(self, _js_target: JsValue, message_id: str | None) -> None:
        if tool_decisions.confirm_regenerate(self._controller, message_id):
            self._controller.click("regenerate", message_id)

    def _tell_controller(self, action: PageAction) -> Handler:
        return lambda _js_target, message_id: self._controller.click(action, message_id)

    def _switcher(self, action: PageAction) -> Handler:
        return lambda js_target, message_id: self._switch(js_target, action, message_id)

    def _switch(self, js_target: JsValue, action: PageAction, message_id: str | None) -> None:
        """Previous or next attempt or branch; the keyboard stays on the switcher of the message now
        shown there (a branch shows another user message at the same place)."""
        kind = "attempt" if action.startswith("attempt") else "branch"
        role = "assistant" if kind == "attempt" else "user"
        js_messages = js.document.querySelectorAll(f"[data-role={role}]")
        js_message = js_target.closest(f"[data-role={role}]")
        place = next(
            (i for i in range(int(js_messages.length)) if js_messages.item(i) == js_message), -1
        )
        self._controller.click(action, message_id)
        order = (action, f"{kind}-next" if action.endswith("prev") else f"{kind}-prev")

        def refocus() -> None:
            js_now = js.document.querySelectorAll(f"[data-role={role}]")
            if 0 <= place < int(js_now.length):
                for wanted in order:
                    js_button = js_now.item(place).querySelector(f"[data-action={wanted}]")
                    if present(js_button) and not bool(js_button.disabled):
                        js_button.focus()
                        return
            query(PROMPT).focus()

        request_frame(refocus)

    def _new_chat(self) -> None:
        self._controller.click("new-chat")
        self._drawer.close()

    def _suggest(self, js_target: JsValue) -> None:
        prompt = str(js_target.getAttribute("data-prompt") or "")
        if self._controller.submit(replace(self._composer(), prompt=prompt)):
            self._files.clear()
            self._dom.follow()

    def _copy_code(self, js_button: JsValue) -> None:
        js_code = js_button.closest(".code-block").querySelector("code")
        copy_to_clipboard(str(js_code.textContent))
        _say_copied(js_button, "Copy")

    def _copy_answer(self, js_button: JsValue, *, partial: bool = False) -> None:
        message_id = text_or_none(js_button.getAttribute("data-message-id"))
        self._controller.click("copy-partial" if partial else "copy", message_id)
        _say_copied(js_button, COPY_PARTIAL_WORDS if partial else "")
        self._dom.announce(COPIED_PARTIAL_WORDS if partial else "Copied the answer")

    # --- forms: rename, edit ---------------------------------------------------------------------

    def _on_form_submit(self, js_event: JsValue) -> None:
        js_form = js_event.target
        name = str(js_form.getAttribute("name") or "")
        if name == "rename-chat":
            js_event.preventDefault()
            saved = self._controller.save_title(str(js_form.querySelector("input").value))
            after = TITLE_OR_PROMPT if saved else "input[name=chat-title]"
            request_frame(lambda: _focus_field(after))
        elif name == "edit-prompt":
            js_event.preventDefault()
            self._save_edit(js_form)

    def _save_edit(self, js_form: JsValue) -> None:
        message_id = str(js_form.getAttribute("data-message-id") or "")
        text = str(js_form.querySelector("textarea").value)
        if self._controller.save_edit(message_id, text):
            self._dom.follow()
            query("textarea[name=prompt]").focus()

    # --- search, drawer, options -----------------------------------------------------------------

    def _on_search(self, js_event: JsValue) -> None:
        query_text = str(js_event.target.value)
        if self._search_timer is not None:
            js.clearTimeout(self._search_timer)
        if not query_text.strip():
            self._search_timer = None
            self._controller.search("")
            return
        callback = create_once_callable(lambda: self._controller.search(query_text))
        self._search_timer = int(js.setTimeout(callback, SEARCH_DELAY_MS))

    def _toggle_options(self, js_button: JsValue) -> None:
        expanded = str(js_button.getAttribute("aria-expanded")) == "true"
        js_button.setAttribute("aria-expanded", "false" if expanded else "true")
        query("#composer").classList.toggle("options-open", not expanded)

    def _close_options(self) -> bool:
        """Close the composer's options panel (a phone's); ``True`` if it was open."""
        js_composer = query("#composer")
        if not bool(js_composer.classList.contains("options-open")):
            return False
        js_composer.classList.remove("options-open")
        query("[data-action=composer-options]").setAttribute("aria-expanded", "false")
        return True

    def _composer(self) -> Composer:
        """What Send takes now: the prompt, and the options and files the store holds."""
        prompt = str(query("textarea[name=prompt]").value)
        return Composer(prompt, self._controller.options_now())

    def _on_toggle(self, js_event: JsValue) -> None:
        options = self._controller.composer.options
        if str(js_event.currentTarget.getAttribute("data-action")) == "thinking":
            self._set_options(replace(options, thinking=not options.thinking))
        else:
            self._set_options(replace(options, tools=not options.tools))

    def _on_effort(self, js_event: JsValue) -> None:
        options = self._controller.composer.options
        match str(js_event.target.value):
            case "low" | "medium" | "high" as effort:
                self._set_options(replace(options, effort=effort))

    def _set_options(self, options: ComposerOptions) -> None:
        self._controller.compose(OptionsChanged(options))
        keep_options(options)

    # --- files -----------------------------------------------------------------------------------

    def _on_files(self, js_event: JsValue) -> None:
        self._add_files(js_event.target.files)
        js_event.target.value = ""

    def _on_paste(self, js_event: JsValue) -> None:
        """Files pasted into the message box (a screenshot, a copied image) are attached;
        pasted text is left to the box."""
        js_files = js_event.clipboardData.files if present(js_event.clipboardData) else None
        if js_files is not None and int(js_files.length):
            js_event.preventDefault()
            self._add_files(js_files)

    def _on_drag(self, js_event: JsValue) -> None:
        """Files dropped anywhere on the page are attached (never opened by the browser in
        place of the page); the composer shows where they go while they are dragged."""
        js_data = js_event.dataTransfer
        if not present(js_data) or "Files" not in [str(t) for t in js_data.types]:
            return
        js_event.preventDefault()
        js_composer = query("#composer")
        if str(js_event.type) == "dragover":
            js_data.dropEffect = "copy"
            js_composer.setAttribute("data-dropping", "")
            return
        js_composer.removeAttribute("data-dropping")
        if str(js_event.type) == "drop" and not bool(query("textarea[name=prompt]").disabled):
            self._add_files(js_data.files)
            query("textarea[name=prompt]").focus()

    def _add_files(self, js_files: JsValue) -> None:
        for index in range(int(js_files.length)):
            self._files.add(js_files.item(index))

    def _remove_file(self, js_target: JsValue) -> None:
        key = str(js_target.getAttribute("data-file-key") or "")
        self._files.remove(key)

    async def _sign_out(self, everywhere: bool = False) -> None:
        try:
            await self._api.sign_out(everywhere)
        finally:
            await device.forget()  # NOTE: nothing of this user stays on the device
            js.location.reload()


def _focus_field(selectors: str) -> None:
    """Focus the first of ``selectors`` that is on the page (selecting a text field's words; in a
    text area, the caret after its text, where one goes on writing)."""
    for selector in selectors.split(","):
        js_element = js.document.querySelector(selector.strip())
        if present(js_element):
            js_element.focus()
            if str(js_element.tagName).lower() == "input":
                js_element.select()
            elif str(js_element.tagName).lower() == "textarea":
                end = len(str(js_element.value).encode("utf-16-le")) // 2  # NOTE: JS counts UTF-16
                js_element.setSelectionRange(end, end)
            return


def _autosize(js_prompt: JsValue) -> None:
    """The composer grows with its text (up to the CSS max-height), then scrolls."""
    js_prompt.style.height = "auto"
    js_prompt.style.height = f"{int(js_prompt.scrollHeight) + 2}px"
