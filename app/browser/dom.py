"""The view's :class:`~app.ui.view.Dom` over the page: keyed message elements, patched in place.

It also owns what only the page can know: whether the reader is at the bottom of the
transcript (the view follows the stream only then, through images and late layout too, and
offers "Jump to latest" otherwise), where keyboard focus was before an element it held was
replaced, and the finishing touches of finished blocks (:mod:`app.browser.enhance`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import js
from pyodide.ffi import create_once_callable, create_proxy

from app.browser.edge import JsValue, Listeners, js_object, present, query
from app.browser.enhance import Enhancer
from app.state.state import ComposerOptions
from app.ui.composer_hint import hint_words, options_on_words
from app.ui.render import EMPTY_STATE_HTML
from app.ui.view import Controls, MessagePatch

NEAR_BOTTOM_PX = 48
CLOCK_MARKS = ("data-since", "data-until")
TICK_MS = 500


class Clocks:
    """What only the page can count: the seconds an answer has been waited for
    (``[data-since]``: "12 s") and the seconds left before Retry makes sense (``[data-until]``:
    "Try again in 3 s.", then Retry is enabled). It ticks only while such an element is shown.
    """

    def __init__(self) -> None:
        self._timer: int | None = None
        self._tick_proxy = create_proxy(self.tick)

    def shown(self, *htmls: str) -> None:
        """New HTML is on the page: count at once (no stale second shows) and keep counting."""
        if any(mark in html for html in htmls for mark in CLOCK_MARKS):
            self.tick()

    def tick(self) -> None:
        now = float(js.performance.now())
        js_counting = js.document.querySelectorAll("[data-since], [data-until]")
        for js_element in js_counting:
            if js_element.hasAttribute("data-since"):
                waited = int((now - float(js_element.getAttribute("data-since"))) // 1000)
                js_element.textContent = f"{waited} s" if waited >= 1 else ""
            else:
                _count_down(js_element, float(js_element.getAttribute("data-until")) - now)
        if int(js_counting.length) and self._timer is None:
            self._timer = js.setInterval(self._tick_proxy, TICK_MS)
        elif not int(js_counting.length) and self._timer is not None:
            js.clearInterval(self._timer)
            self._timer = None

    def teardown(self) -> None:
        if self._timer is not None:
            js.clearInterval(self._timer)
        self._tick_proxy.destroy()


def _count_down(js_element: JsValue, left_ms: float) -> None:
    if left_ms > 0:
        js_element.textContent = f"Try again in {math.ceil(left_ms / 1000)} s."
        return
    js_element.removeAttribute("data-until")
    js_element.textContent = ""
    js_retry = js_element.parentElement.querySelector("[data-action=retry]")
    if present(js_retry):
        js_retry.disabled = False


class BrowserDom:
    """The view's :class:`~app.ui.view.Dom` over the real page."""

    def __init__(self, enhancer: Enhancer) -> None:
        self._js_scroller = query("#messages")
        self._js_column = query("#message-column")
        self._js_jump = query("[data-action=jump-to-latest]")
        self._js_nodes: dict[str, JsValue] = {}
        self._js_template = js.document.createElement("template")
        self._enhancer = enhancer
        self._following = True
        self._auto_top = 0.0  # where our own last scroll to the bottom left the view
        self._listeners = Listeners()
        self._clocks = Clocks()
        self._listeners.on(self._js_scroller, "scroll", self._on_scroll)
        # NOTE: no layout is read or forced while rendering: whether the reader is at the
        # bottom comes from an IntersectionObserver on a sentinel after the column, and the
        # view follows the stream from a ResizeObserver, which runs after layout.
        self._resize_proxy = create_proxy(self._on_resize)
        self._js_resizes = js.ResizeObserver.new(self._resize_proxy)
        self._js_resizes.observe(self._js_column)
        self._bottom_proxy = create_proxy(self._on_bottom)
        options = js_object(
            {"root": self._js_scroller, "rootMargin": f"0px 0px {NEAR_BOTTOM_PX}px 0px"}
        )
        self._js_bottom = js.IntersectionObserver.new(self._bottom_proxy, options)
        self._js_bottom.observe(query("#bottom-sentinel"))

    def teardown(self) -> None:
        self._listeners.teardown()
        self._clocks.teardown()
        self._js_resizes.disconnect()
        self._js_bottom.disconnect()
        self._resize_proxy.destroy()
        self._bottom_proxy.destroy()

    # --- following the stream ------------------------------------------------------------------

    def follow(self) -> None:
        """Go to the newest message and keep following it (a new prompt, Jump to latest)."""
        self._following = True
        self._to_bottom()

    def _to_bottom(self) -> None:
        self._js_scroller.scrollTop = self._js_scroller.scrollHeight
        self._auto_top = float(self._js_scroller.scrollTop)
        self._js_jump.hidden = True

    def _on_scroll(self, _js_event: JsValue) -> None:
        # NOTE: scroll events come before the observers in a frame: a reader who moved up from
        # where we left the view stops the following at once, before new text could pull the
        # view back down. Back at the bottom, the sentinel's observer resumes it.
        js_list = self._js_scroller
        top = float(js_list.scrollTop)
        gap = float(js_list.scrollHeight) - top - float(js_list.clientHeight)
        if top + 4 < self._auto_top and gap > NEAR_BOTTOM_PX:  # NOTE: not a clamp (shrink)
            self._following = False
            self._js_jump.hidden = False

    def _on_bottom(self, js_entries: JsValue, _js_observer: JsValue) -> None:
        # NOTE: the sentinel enters or leaves the view: the reader reached the bottom or left
        # it (our own scrolls always end there, so only the reader turns following off).
        self._following = bool(js_entries[js_entries.length - 1].isIntersecting)
        self._js_jump.hidden = self._following

    def _on_resize(self, _js_entries: JsValue, _js_observer: JsValue) -> None:
        # NOTE: the transcript grew or shrank (text, an image that loaded, a table laid out):
        # stay at the bottom if the reader was there. Layout is done here, so this is cheap.
        if self._following:
            self._to_bottom()

    # --- the view's Dom ------------------------------------------------------------------------

    def _node(self, html: str) -> JsValue:
        self._js_template.innerHTML = html
        return self._js_template.content.firstElementChild

    def _node_list(self, html: str) -> list[JsValue]:
        self._js_template.innerHTML = html
        return list(self._js_template.content.children)

    def set_html(self, slot: str, html: str) -> None:
        js_slot = query(slot)
        with _KeptFocus(js_slot):
            js_slot.innerHTML = html
        self._clocks.shown(html)

    def sync_messages(self, order: Sequence[str], changed: Mapping[str, str]) -> None:
        for key in set(self._js_nodes) - set(order):
            self._js_nodes.pop(key).remove()
        if not order:
            self._js_column.innerHTML = EMPTY_STATE_HTML
            self._following = True
        for key, html in changed.items():
            js_new = self._node(html)
            js_old = self._js_nodes.get(key)
            if js_old is not None:
                with _KeptFocus(js_old, js_new):
                    js_old.replaceWith(js_new)
            self._js_nodes[key] = js_new
            self._enhancer.enhance(js_new)
        self._place(order)
        self._clocks.shown(*changed.values())

    def _place(self, order: Sequence[str]) -> None:
        if order:
            for js_placeholder in self._js_column.querySelectorAll(".skeleton, .empty-state"):
                js_placeholder.remove()
        js_expected = self._js_column.firstElementChild
        for key in order:
            js_node = self._js_nodes[key]
            if present(js_expected) and js_node.isSameNode(js_expected):
                js_expected = js_expected.nextElementSibling
            else:
                self._js_column.insertBefore(js_node, js_expected)

    def patch_message(self, key: str, patch: MessagePatch) -> None:
        js_message = self._js_nodes[key]
        for name, value in patch.attributes or ():
            js_message.setAttribute(name, value)
        if patch.foot_html is not None:
            js_foot = js_message.querySelector(".message-foot")
            with _KeptFocus(js_foot, js_message):
                js_foot.outerHTML = patch.foot_html
            self._clocks.shown(patch.foot_html)
        if patch.append_html:
            js_done = js_message.querySelector(".md-done")
            js_added = self._node_list(patch.append_html)
            js_done.append(*js_added)
            for js_block in js_added:  # NOTE: only the new blocks: finished ones stay as they are
                self._enhancer.enhance(js_block)
        if patch.open_html is not None:
            js_message.querySelector(".md-open").innerHTML = patch.open_html

    def set_controls(self, controls: Controls) -> None:
        js_send = query("[data-action=send]")
        js_stop = query("[data-action=stop]")
        stop_had_focus = js_stop.isSameNode(js.document.activeElement)
        js_send.disabled = not controls.can_send
        js_stop.disabled = not controls.can_stop
        query("#composer-hint").textContent = hint_words(answering=controls.can_stop)
        if stop_had_focus and not controls.can_stop:
            query("textarea[name=prompt]").focus()  # NOTE: never let focus fall to <body>

    def set_draft(self, text: str) -> None:
        js_prompt = query("textarea[name=prompt]")
        if not str(js_prompt.value).strip():
            js_prompt.value = text

    def set_model(self, model_id: str) -> None:
        js_select = query("select[name=model]")
        offered = any(str(o.value) == model_id for o in js_select.options)
        if offered:
            js_select.value = model_id

    def set_options(self, options: ComposerOptions) -> None:
        for name, pressed in (("thinking", options.thinking), ("tools", options.tools)):
            query(f"[data-action={name}]").setAttribute("aria-pressed", str(pressed).lower())
        words = options_on_words(thinking=options.thinking, tools=options.tools)
        query("[data-options-on]").textContent = words
        query("select[name=reasoningEffort]").value = options.effort

    def announce(self, text: str) -> None:
        js_region = query("[data-announce]")
        # NOTE: the same words twice in a row must still be spoken: clear, then set.
        js_region.textContent = ""
        js.setTimeout(create_once_callable(lambda: _set_text(js_region, text)), 50)


def _set_text(js_element: JsValue, text: str) -> None:
    js_element.textContent = text


class _KeptFocus:
    """Keeps keyboard focus across a replaced element: the control with the same action (and
    message) in the new element, else the composer, never ``<body>``."""

    def __init__(self, js_old: JsValue, js_new: JsValue = None) -> None:
        self._js_old = js_old
        self._js_new = js_new
        self._selector: str | None = None

    def __enter__(self) -> None:
        js_active = js.document.activeElement
        if not present(js_active) or not present(self._js_old):
            return
        if not self._js_old.contains(js_active):
            return
        action = js_active.getAttribute("data-action")
        name = js_active.getAttribute("name")
        if present(action):
            self._selector = f'[data-action="{js.CSS.escape(action)}"]'
        elif present(name):
            self._selector = f'[name="{js.CSS.escape(name)}"]'
        else:
            self._selector = ""

    def __exit__(self, *_exc: object) -> None:
        if self._selector is None:
            return
        js_active = js.document.activeElement
        if present(js_active) and not js.document.body.isSameNode(js_active):
            return  # NOTE: focus survived (the element was not replaced after all)
        js_scope = self._js_new if present(self._js_new) else js.document
        js_target: JsValue = js_scope.querySelector(self._selector) if self._selector else None
        if present(js_target) and not js_target.disabled:
            js_target.focus()
        else:
            query("textarea[name=prompt]").focus()
