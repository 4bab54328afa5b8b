"""Settings (SPEC §14, issue 37): the dialog ``#settings`` opened by ``[data-action=settings]``.

The theme is applied at once and kept twice: on the server (``PATCH /api/settings``, so every
device of the user has it) and in ``localStorage`` (``riacho.theme``), which static/theme.js
reads before the first paint of the next load: no flash of the other theme. The defaults of a
new chat (model, Thinking, Tools) are put in the composer each time a new chat starts, once the
user has chosen any (untouched settings leave the composer as it was).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import js
from pydantic import ValidationError

from app.browser.edge import JsValue, Listeners, present, query, spawn
from app.browser.net import Backend, fetch_json
from app.browser.page import keep_options
from app.state.actions import OptionsChanged
from app.state.state import ComposerOptions, State
from app.ui.controller import Controller
from app.wire.api import ModelInfo
from app.wire.errors import ChatError
from app.wire.settings import THEMES, Settings, Theme

THEME_KEY = "riacho.theme"


def apply_theme(theme: str) -> None:
    """Show ``theme`` now and keep it on the device for the next first paint."""
    js_root = js.document.documentElement
    if theme in ("light", "dark"):
        js_root.setAttribute("data-theme", theme)
    else:
        js_root.removeAttribute("data-theme")
    try:
        js.localStorage.setItem(THEME_KEY, theme)
    except Exception:  # NOTE: storage refused (private mode): this load only
        return


def device_theme() -> Theme:
    """The theme kept on the device (``system`` if none)."""
    try:
        kept = str(js.localStorage.getItem(THEME_KEY) or "system")
    except Exception:
        return "system"
    return next((theme for theme in THEMES if theme == kept), "system")


class SettingsPanel:
    """The settings dialog, the server's copy of the settings, and new chats' defaults."""

    def __init__(self, backend: Backend, controller: Controller) -> None:
        self._backend = backend
        self._controller = controller
        self._settings = Settings(theme=device_theme())
        self._listeners = Listeners()

    @property
    def settings(self) -> Settings:
        return self._settings

    def bind(self, models: Sequence[ModelInfo]) -> None:
        on = self._listeners.on
        js_open = query("[data-action=settings]")
        on(js_open, "click", lambda _e: self.open())
        js_dialog = query("#settings")
        on(js_dialog, "keydown", _keep_escape_in)
        on(js_dialog, "click", _on_dialog_click)
        on(js_dialog, "change", self._on_change)
        _fill_models(models)
        js_open.disabled = False

    def teardown(self) -> None:
        self._listeners.teardown()

    async def load(self, *, offline: bool = False) -> None:
        """The server's copy (it wins over the device's: set on another device, perhaps)."""
        if offline:
            return  # NOTE: the device's theme, as static/theme.js applied it
        try:
            answer = await fetch_json(self._backend.url("/api/settings"))
            settings = Settings.model_validate(answer)
        except (ChatError, ValidationError):
            return  # NOTE: the device's theme stays; the panel saves when the server answers
        self._settings = settings
        apply_theme(self._settings.theme)

    def open(self) -> None:
        settings = self._settings
        query("#settings select[name=theme]").value = settings.theme
        query("#settings select[name=default-model]").value = settings.default_model_id or ""
        query("#settings input[name=default-thinking]").checked = settings.default_thinking
        query("#settings input[name=default-tools]").checked = settings.default_tools
        _say("")
        query("#settings").showModal()
        query("#settings select[name=theme]").focus()

    def _on_change(self, js_event: JsValue) -> None:
        js_field = js_event.target
        name = str(js_field.getAttribute("name") or "")
        changes: dict[str, Any] = {}
        if name == "theme":
            changes["theme"] = str(js_field.value)
            apply_theme(changes["theme"])
        elif name == "default-model":
            changes["defaultModelId"] = str(js_field.value) or None
        elif name in ("default-thinking", "default-tools"):
            key = "defaultThinking" if name == "default-thinking" else "defaultTools"
            changes[key] = bool(js_field.checked)
        if changes:
            spawn(self._save(changes))

    async def _save(self, changes: dict[str, Any]) -> None:
        _say("Saving…")
        try:
            answer = await fetch_json(
                self._backend.url("/api/settings"), method="PATCH", payload=changes
            )
        except ChatError as error:
            _say(f"Not saved: {error}")
            return
        self._settings = Settings.model_validate(answer)
        _say("Saved")

    def on_change(self, state: State, previous: State) -> None:
        """A new chat starts with the defaults (once the user chose any)."""
        started = state.active_chat_id is None and previous.active_chat_id is not None
        settings = self._settings
        if not started or settings.model_copy(update={"theme": "system"}) == Settings():
            return
        options = ComposerOptions(
            thinking=settings.default_thinking,
            effort=self._controller.composer.options.effort,
            tools=settings.default_tools,
        )
        self._controller.compose(OptionsChanged(options))
        keep_options(options)
        _pick_model(settings.default_model_id)


def _fill_models(models: Sequence[ModelInfo]) -> None:
    js_select = query("#settings select[name=default-model]")
    for model in models:
        js_option = js.document.createElement("option")
        js_option.value = model.id
        js_option.textContent = model.label
        js_select.appendChild(js_option)


def _pick_model(model_id: str | None) -> None:
    if model_id is None:
        return
    js_picker = query("select[name=model]")
    js_option = js_picker.querySelector(f'option[value="{model_id}"]')
    if present(js_option) and not bool(js_option.disabled):
        js_picker.value = model_id


def _say(words: str) -> None:
    query("#settings [data-dialog-note]").textContent = words


def _on_dialog_click(js_event: JsValue) -> None:
    js_target = js_event.target.closest("[data-action=close-dialog]")
    if present(js_target):
        query("#settings").close()


def _keep_escape_in(js_event: JsValue) -> None:
    """Escape closes the dialog (the browser's own) and nothing else."""
    if str(js_event.key) == "Escape":
        js_event.stopPropagation()
