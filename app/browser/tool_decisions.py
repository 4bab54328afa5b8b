"""The tool card's Approve / Deny and the Regenerate confirm, in the browser (SPEC §12).

A decision is sent once: the card's buttons are disabled at the click and the server's
``tool_decided`` event, read by the run's stream in every tab, updates the card. A refusal
(``409 decision_taken``: another tab decided first) leaves that decision standing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import js

from app.browser.edge import log, present, spawn
from app.run.transport import ChatApi
from app.ui.controller import Controller
from app.wire.errors import ChatError

JsValue = Any
ClientDecision = Callable[[JsValue, str, str, bool], None]
_client: list[ClientDecision] = []  # NOTE: app.browser.client_tool's, once wired


def hand_client_calls_to(handler: ClientDecision) -> None:
    """Run / Don't run on a card of a call the page runs (SPEC §13) go to ``handler``."""
    _client[:] = [handler]


def decide(api: ChatApi, js_button: JsValue, approved: bool) -> None:
    """Send the decision of the card ``js_button`` is on."""
    js_card = js_button.closest("[data-tool-call-id]")
    js_run = js_button.closest("[data-run-id]")
    if js_card is None or js_run is None:
        return
    call_id = str(js_card.getAttribute("data-tool-call-id"))
    run_id = str(js_run.getAttribute("data-run-id"))
    js_client_card = js_button.closest('[data-runs-in="client"]')
    if present(js_client_card):
        for handler in _client:
            handler(js_client_card, run_id, call_id, approved)
        return
    js_buttons = js_card.querySelectorAll(".tool-decision button")
    for index in range(int(js_buttons.length)):
        js_buttons.item(index).disabled = True
    spawn(_send(api, run_id, call_id, approved, js_buttons))


async def _send(
    api: ChatApi, run_id: str, call_id: str, approved: bool, js_buttons: JsValue
) -> None:
    try:
        await api.decide_tool_call(run_id, call_id, approved)
    except ChatError as error:
        log(f"riacho tool decision {run_id}/{call_id}: {error}")
        if error.code != "decision_taken":
            for index in range(int(js_buttons.length)):
                js_buttons.item(index).disabled = False


def confirm_regenerate(controller: Controller, message_id: str | None) -> bool:
    """Whether to regenerate: yes, unless actions stay done and the user says no."""
    warning = None if message_id is None else controller.regenerate_warning(message_id)
    return warning is None or bool(js.window.confirm(warning))
