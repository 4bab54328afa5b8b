"""The model's code, run by this page (SPEC §13): the browser shell of app.state.client_tool.

A call the run asks the page to run shows its code in the tool card with Run / Don't run
(``[data-action=approve-tool]`` / ``deny-tool``, routed here by app.browser.tool_decisions) and
"Run code automatically in this chat". The code runs in the sandbox of app.browser.code_runner,
its output panel under the card; the finished run is posted once
(``POST /api/runs/{runId}/tool-calls/{toolCallId}/result``). Another tab's result, taken first,
answers ``409 result_taken``: that one stands. When the run ends while its code runs (Stop),
the code is stopped too.

The chat's code settings (automatic runs, the time limit) are kept on the device under the
user's ``riacho.code.<user id>`` key, which sign-out removes.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

import js
from pydantic import JsonValue

from app.browser.code_runner import CodeRunner
from app.browser.edge import Listeners, log, present, request_frame, spawn
from app.browser.tool_decisions import hand_client_calls_to
from app.run.transport import ChatApi
from app.state.client_tool import (
    DECLINED,
    ClientCall,
    CodeSettings,
    ended_calls,
    parse_kept,
    result_of,
    settings_of,
    waiting_call,
    waiting_calls,
    with_settings,
)
from app.state.code_run import CodeRunState
from app.state.state import State
from app.wire.errors import ChatError

JsValue = Any
SETTINGS_KEY = "riacho.code."
RUNNING_WORDS = "Running in this page…"


class CodeSettingsKept:
    """The chats' code settings on the device (``riacho.code.<user id>``: sign-out removes it)."""

    def __init__(self, user_id: str) -> None:
        self._key = SETTINGS_KEY + user_id

    def of(self, chat_id: str | None) -> CodeSettings:
        if chat_id is None:
            return CodeSettings()
        return settings_of(parse_kept(_text(js.localStorage.getItem(self._key))), chat_id)

    def keep(self, chat_id: str, settings: CodeSettings) -> None:
        kept = parse_kept(_text(js.localStorage.getItem(self._key)))
        js.localStorage.setItem(self._key, json.dumps(with_settings(kept, chat_id, settings)))


class ClientTools:
    """Runs the calls that wait for this page, each at most once, and posts their results."""

    def __init__(
        self,
        api: ChatApi,
        code: CodeRunner,
        state: Callable[[], State],
        settings: CodeSettingsKept,
    ) -> None:
        self._api = api
        self._code = code
        self._state = state
        self._settings = settings
        self._started: dict[tuple[str, str], tuple[ClientCall, int]] = {}
        self._handled: set[tuple[str, str]] = set()
        self._panels: dict[tuple[str, str], JsValue] = {}  # NOTE: kept across the card's redraws
        self.listeners = Listeners()
        self.listeners.on(js.document, "change", self._on_input)
        hand_client_calls_to(self.decide)

    def _on_input(self, js_event: JsValue) -> None:
        """A change of the chat's code settings (in a card or under an output panel)."""
        js_target = js_event.target
        name = str(js_target.getAttribute("name") or "") if present(js_target) else ""
        chat_id = self._state().active_chat_id
        if chat_id is None or name not in ("auto-run-code", "code-time-limit"):
            return
        current = self._settings.of(chat_id)
        if name == "auto-run-code":
            auto = bool(js_target.checked)
            self._settings.keep(chat_id, CodeSettings(auto, current.time_limit_ms))
            if auto:
                self.on_change(self._state(), self._state())
        else:
            seconds = int(str(js_target.value))
            self._settings.keep(chat_id, CodeSettings(current.auto_run, seconds * 1000))

    # --- runs ----------------------------------------------------------------------------------

    def on_change(self, state: State, _previous: State) -> None:
        """Run what waits in a chat that runs code automatically; stop the code of a run that
        no longer waits (it was stopped or ended)."""
        for call in ended_calls([call for call, _ in self._started.values()], state):
            _, code_run = self._started.pop(call.key)
            self._code.stop_run(code_run)
        if self._panels:
            request_frame(self._keep_panels)
        for call in waiting_calls(state):
            if self._settings.of(call.chat_id).auto_run and call.key not in self._handled:
                # NOTE: after the frame that draws the card (the view renders per frame)
                request_frame(functools.partial(self._run, call, auto=True))

    def decide(self, js_card: JsValue, run_id: str, call_id: str, approved: bool) -> None:
        """The user's Run / Don't run on a card."""
        call = waiting_call(self._state(), run_id, call_id)
        if call is None or call.key in self._handled:
            return
        if approved:
            self._run(call, auto=False)
        else:
            self._handled.add(call.key)
            _disable(js_card, "Not run")
            spawn(self._post(call, DECLINED, True))

    def _run(self, call: ClientCall, *, auto: bool) -> None:
        if call.key in self._handled or waiting_call(self._state(), *call.key) is None:
            return
        js_card = _card(call)
        if not present(js_card) or self._code.busy:
            if not auto and present(js_card):
                _status(js_card, "Another run is going on: stop it first")
            return  # NOTE: an automatic run waits for the next change (the sandbox is free)
        self._handled.add(call.key)
        _disable(js_card, RUNNING_WORDS)
        js_auto = js_card.querySelector("[name=auto-run-code]")
        if present(js_auto):
            js_auto.checked = self._settings.of(call.chat_id).auto_run
        code_run = self._code.run_code(
            call.code, js_card.querySelector(".tool-args"), lambda run: self._ended(call, run)
        )
        if code_run is not None:
            self._started[call.key] = (call, code_run)
            self._panels[call.key] = self._code.panel(code_run)

    def _ended(self, call: ClientCall, run: CodeRunState) -> None:
        if self._started.pop(call.key, None) is None:
            return  # NOTE: the answer ended first (Stop): nothing waits for the result
        result, is_error = result_of(run)
        spawn(self._post(call, result, is_error))
        self.on_change(self._state(), self._state())  # NOTE: another call may wait for the sandbox

    def _keep_panels(self) -> None:
        """Put each run's output panel back under its card when the view drew the card anew."""
        for key, js_panel in self._panels.items():
            if bool(js_panel.isConnected):
                continue
            js_card = _card_of(*key)
            if present(js_card):
                js_card.querySelector(".tool-args").after(js_panel)

    async def _post(self, call: ClientCall, result: JsonValue, is_error: bool) -> None:
        try:
            await self._api.post_tool_result(call.run_id, call.tool_call_id, result, is_error)
        except ChatError as error:  # NOTE: result_taken: another tab's result stands
            log(f"riacho client tool {call.run_id}/{call.tool_call_id}: {error}")


def _card(call: ClientCall) -> JsValue:
    return _card_of(call.run_id, call.tool_call_id)


def _card_of(run_id: str, call_id: str) -> JsValue:
    run_id, call_id = js.CSS.escape(run_id), js.CSS.escape(call_id)
    return js.document.querySelector(
        f'[data-run-id="{run_id}"] [data-tool-call-id="{call_id}"][data-runs-in]'
    )


def _disable(js_card: JsValue, words: str) -> None:
    js_buttons = js_card.querySelectorAll(".tool-decision button")
    for index in range(int(js_buttons.length)):
        js_buttons.item(index).disabled = True
    _status(js_card, words)


def _status(js_card: JsValue, words: str) -> None:
    js_status = js_card.querySelector(".tool-status")
    if present(js_status):
        js_status.textContent = words


def _text(js_value: JsValue) -> str | None:
    return str(js_value) if present(js_value) else None
