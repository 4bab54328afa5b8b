"""The chat title's rename field: it saves when focus leaves it for elsewhere on the page."""

from __future__ import annotations

from app.browser.edge import JsValue, present
from app.ui.controller import Controller


def save_title_on_blur(js_event: JsValue, controller: Controller) -> None:
    """Clicking elsewhere saves the title being renamed (not a move to its own Save or Cancel;
    Escape and Cancel end the rename first, so their blur saves nothing)."""
    js_field = js_event.target
    if str(js_field.getAttribute("name") or "") != "chat-title":
        return
    js_next = js_event.relatedTarget
    if present(js_next) and present(js_next.closest("form[name=rename-chat]")):
        return
    controller.save_title(str(js_field.value))
