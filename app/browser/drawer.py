"""The phone's chat drawer as a modal dialog: while it is open the sidebar is
``role=dialog aria-modal=true``, everything else on the page is ``inert``, focus moves in and
Tab / Shift+Tab cycle through what is visible in it; closing it (Escape, the scrim, a chat
picked) gives focus back to the button that opened it. A wider window closes it."""

from __future__ import annotations

import js

from app.browser.edge import JsValue, Listeners, present, query

WIDE = "(min-width: 769px)"  # NOTE: the CSS drawer is (max-width: 768px)
OUTSIDE = "main.conversation, .skip-link, #toasts"
FOCUSABLE = "a[href], button, input, select, textarea, summary, [tabindex]:not([tabindex='-1'])"


class Drawer:
    """Opens, closes and traps focus in ``#sidebar`` on narrow screens."""

    def bind(self, listeners: Listeners) -> None:
        """Listen for Tab (the trap) and for the window growing wide (the drawer closes)."""
        listeners.on(js.document, "keydown", self._on_key)
        listeners.on(js.matchMedia(WIDE), "change", self._on_width)

    def _on_width(self, js_event: JsValue) -> None:
        if bool(js_event.matches):
            self.close()

    @property
    def is_open(self) -> bool:
        return bool(query("#app").classList.contains("drawer-open"))

    def open(self) -> None:
        query("#app").classList.add("drawer-open")
        query("[data-action=open-drawer]").setAttribute("aria-expanded", "true")
        js_sidebar = query("#sidebar")
        js_sidebar.setAttribute("role", "dialog")
        js_sidebar.setAttribute("aria-modal", "true")
        for js_element in js.document.querySelectorAll(OUTSIDE):
            js_element.inert = True
        query("input[name=chat-search]").focus()  # NOTE: the CSS shows the drawer at once

    def close(self) -> None:
        if not self.is_open:
            return
        query("#app").classList.remove("drawer-open")
        js_sidebar = query("#sidebar")
        js_sidebar.removeAttribute("role")
        js_sidebar.removeAttribute("aria-modal")
        for js_element in js.document.querySelectorAll(OUTSIDE):
            js_element.inert = False
        js_open = query("[data-action=open-drawer]")
        js_open.setAttribute("aria-expanded", "false")
        if bool(js.getComputedStyle(js_open).display != "none"):
            js_open.focus()

    def _on_key(self, js_event: JsValue) -> None:
        """Tab and Shift+Tab stay in the drawer, on what a user can see there."""
        if str(js_event.key) != "Tab" or not self.is_open:
            return
        if present(js.document.querySelector("dialog:modal")):
            return  # NOTE: a dialog opened from the drawer (Rename, Delete) traps Tab itself
        stops = _visible_focusables(query("#sidebar"))
        if not stops:
            js_event.preventDefault()
            return
        js_active = js.document.activeElement
        place = next((i for i, el in enumerate(stops) if el.isSameNode(js_active)), None)
        backwards = bool(js_event.shiftKey)
        if place is None:
            target = stops[-1] if backwards else stops[0]
        elif backwards and place == 0:
            target = stops[-1]
        elif not backwards and place == len(stops) - 1:
            target = stops[0]
        else:
            return  # NOTE: the browser's own order between two stops inside
        js_event.preventDefault()
        target.focus()


def _visible_focusables(js_root: JsValue) -> list[JsValue]:
    """What Tab can reach in ``js_root`` and a user can see: enabled, rendered, not inside a
    closed ``<details>`` (except its summary) nor an ``inert`` subtree."""
    found = []
    for js_element in js_root.querySelectorAll(FOCUSABLE):
        if bool(js_element.matches(":disabled")) or int(js_element.getClientRects().length) == 0:
            continue
        if present(js_element.closest("[inert]")):
            continue
        js_details = js_element.closest("details:not([open])")
        if present(js_details) and not _is_summary_of(js_element, js_details):
            continue
        if str(js.getComputedStyle(js_element).visibility) != "visible":
            continue
        found.append(js_element)
    return found


def _is_summary_of(js_element: JsValue, js_details: JsValue) -> bool:
    js_summary = js_element.closest("summary")
    return present(js_summary) and js_summary.parentElement.isSameNode(js_details)
