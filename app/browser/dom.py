"""The view's :class:`~app.ui.view.Dom` over the page: keyed message elements, patched in place."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import js

from app.browser.edge import JsValue, present, query
from app.ui.view import Controls, MessagePatch

EMPTY_CHAT_HTML = (
    '<div class="empty-state">Ask anything. Answers stream in as they are written; '
    "you can stop, resume or regenerate them.</div>"
)


class BrowserDom:
    """The view's :class:`~app.ui.view.Dom` over the real page."""

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
