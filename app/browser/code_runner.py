"""Run a code block in the page's sandbox (SPEC §13): the browser shell of app.state.code_run.

The sandbox (static/code/host.mjs, frame.js, worker.js) is started on the first Run: an
opaque-origin frame whose worker has its own Pyodide. One run at a time; each block's latest
run is a :class:`CodeRunState`, folded from what the sandbox posts (one batch per animation
frame) and drawn into the ``[data-code-output]`` panel after the block.

Stop: where the frame is cross-origin isolated, the worker's interrupt buffer raises
``KeyboardInterrupt`` and its variables are kept; if that has not ended the run within
:data:`INTERRUPT_GRACE_MS` (or anywhere else, at once), the frame is removed (its worker ends)
and the next Run starts a fresh interpreter. The time limit and the output cap end it the same
way (``killed``).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import js
from pyodide.code import run_js
from pyodide.ffi import JsException, create_once_callable, create_proxy, to_js

from app.browser.edge import JsValue, js_object, present, query_params, spawn
from app.state.client_tool import CodeSettings
from app.state.code_run import (
    Chunk,
    CodeEvent,
    CodeRunState,
    Finished,
    Killed,
    OutFile,
    Printed,
    Started,
    Stopped,
    Wrote,
    data_files,
    reduce,
    start,
)
from app.ui.code_output import output_attributes, output_html
from app.ui.code_settings import settings_html
from app.wire.api import AttachmentInfo

HOST = "./static/code/host.mjs"
# NOTE: a URL of the page's own folder that nothing serves (app.browser.device's entries)
ATTACHMENT_ENTRY = "./__device__/attachment/"
INTERRUPT_GRACE_MS = 600
Files = Callable[[], Awaitable[list[dict[str, Any]]]]  # NOTE: [{name, bytes}] for /mnt/data/


class DataFiles:
    """The chat's attachments for ``/mnt/data/``: each read from the server once, then kept on
    the device (in the user's own cache, ``device_cache``, which sign-out removes: SPEC §11) and
    in memory, and handed to every run as a copy. A reload reads them from the device."""

    def __init__(
        self,
        url: Callable[[str], str],
        attachments: Callable[[], Iterable[AttachmentInfo]],
        device_cache: str | None = None,
    ) -> None:
        self._url = url
        self._attachments = attachments
        self._device_cache = device_cache
        self._kept: dict[str, JsValue] = {}

    async def __call__(self) -> list[dict[str, Any]]:
        files: list[dict[str, Any]] = []
        for attachment_id, name in data_files(self._attachments()):
            js_bytes = self._kept.get(attachment_id) or await self._read(attachment_id)
            if js_bytes is not None:
                # NOTE: a copy: the run's message transfers (empties) what it is given
                files.append({"name": name, "bytes": js_bytes.slice(0)})
        return files

    async def _read(self, attachment_id: str) -> JsValue:
        js_bytes = await self._from_device(attachment_id)
        if js_bytes is None:
            js_bytes = await self._from_server(attachment_id)
            if js_bytes is not None:
                await self._to_device(attachment_id, js_bytes)
        if js_bytes is not None:
            self._kept[attachment_id] = js_bytes
        return js_bytes

    async def _from_device(self, attachment_id: str) -> JsValue:
        if self._device_cache is None:
            return None
        try:
            js_cache = await js.caches.open(self._device_cache)
            js_response = await js_cache.match(ATTACHMENT_ENTRY + attachment_id)
            return await js_response.arrayBuffer() if present(js_response) else None
        except (JsException, AttributeError):  # NOTE: no Cache Storage here: not kept
            return None

    async def _to_device(self, attachment_id: str, js_bytes: JsValue) -> None:
        if self._device_cache is None:
            return
        try:
            js_cache = await js.caches.open(self._device_cache)
            js_response = js.Response.new(js_bytes.slice(0))
            await js_cache.put(ATTACHMENT_ENTRY + attachment_id, js_response)
        except (JsException, AttributeError):  # NOTE: storage full, or none: read it again
            return

    async def _from_server(self, attachment_id: str) -> JsValue:
        options = js_object({"credentials": "include"})
        try:
            js_response = await js.fetch(self._url(attachment_id), options)
        except Exception:  # NOTE: offline, say: the file is not there this time
            return None
        if not bool(js_response.ok):
            return None
        return await js_response.arrayBuffer()


class CodeRunner:
    """Runs blocks one at a time in one sandbox; draws each block's run."""

    def __init__(
        self, attachments: Files | None = None, settings: Callable[[], CodeSettings] | None = None
    ) -> None:
        self._attachments = attachments
        self._settings = settings or CodeSettings  # NOTE: the active chat's code settings
        self._on_end: dict[int, Callable[[CodeRunState], None]] = {}
        self._sandbox: JsValue = None
        self._isolated = False
        self._runs: dict[int, CodeRunState] = {}
        self._panels: dict[int, JsValue] = {}
        self._urls: dict[int, dict[str, str]] = {}
        self._active: int | None = None
        self._next = 0
        self._on_events = create_proxy(self._receive)
        self._time_limit_ms = _time_limit_ms()

    def run(self, js_button: JsValue) -> None:
        """Run the block of ``js_button`` (its Run button)."""
        js_block = js_button.closest(".code-block")
        code = str(js_block.querySelector("code").textContent)
        if self.run_code(code, js_block) is None:
            self._say(js_button, "Another block is running: stop it first")

    @property
    def busy(self) -> bool:
        """Whether a run is going on (one at a time)."""
        return self._active is not None

    def run_code(
        self,
        code: str,
        js_anchor: JsValue,
        on_end: Callable[[CodeRunState], None] | None = None,
    ) -> int | None:
        """Run ``code`` with its panel after ``js_anchor``; ``on_end`` gets the finished run.
        ``None`` (nothing started) while another run goes on."""
        if self._active is not None:
            return None
        self._next += 1
        run_id = self._next
        limit = self._time_limit_ms or self._settings().time_limit_ms
        self._runs[run_id] = start(run_id, fresh=self._sandbox is None, time_limit_ms=limit)
        self._panels[run_id] = _panel_after(js_anchor, run_id)
        if on_end is not None:
            self._on_end[run_id] = on_end
        self._active = run_id
        self._draw(run_id)
        spawn(self._start(run_id, code))
        return run_id

    def panel(self, run_id: int) -> JsValue:
        """The output panel of ``run_id`` (``None`` if there is no such run)."""
        return self._panels.get(run_id)

    def stop(self, js_button: JsValue) -> None:
        """Stop the run whose panel holds ``js_button``."""
        self.stop_run(int(js_button.closest("[data-code-output]").getAttribute("data-code-run")))

    def stop_run(self, run_id: int) -> None:
        """Stop ``run_id`` if it is the run going on."""
        if run_id != self._active:
            return
        if self._isolated and self._runs[run_id].status == "running":
            self._sandbox.interrupt()
            js.setTimeout(create_once_callable(lambda: self._give_up(run_id)), INTERRUPT_GRACE_MS)
        else:
            self._end_sandbox(run_id, Stopped(run_id, state_kept=False))

    async def _start(self, run_id: int, code: str) -> None:
        if self._sandbox is None:
            # NOTE: absolute: run_js evaluates in Pyodide's module, which would resolve it
            url = str(js.URL.new(HOST, js.document.baseURI).href)
            host = await run_js(f"import({json.dumps(url)})")
            self._sandbox = host.createSandbox(self._on_events)
            self._isolated = bool(await self._sandbox.booted)
        files = await self._attachments() if self._attachments is not None else []
        if run_id != self._active:
            return
        self._sandbox.run(run_id, code, to_js(files, dict_converter=js.Object.fromEntries))

    def _time_from_now(self, run_id: int) -> None:
        """Start ``run_id``'s time limit (as its code begins: Python's start is not counted)."""
        limit = self._runs[run_id].time_limit_ms
        js.setTimeout(create_once_callable(lambda: self._time_up(run_id)), limit)

    def _give_up(self, run_id: int) -> None:
        if self._active == run_id:
            self._end_sandbox(run_id, Stopped(run_id, state_kept=False))

    def _time_up(self, run_id: int) -> None:
        if self._active == run_id:
            self._end_sandbox(run_id, Killed(run_id, "time"))

    def _end_sandbox(self, run_id: int, event: CodeEvent) -> None:
        """End the worker (its state is lost) and finish ``run_id`` with ``event``."""
        if self._sandbox is not None:
            self._sandbox.end()
            self._sandbox = None
        self._apply(event)

    def _receive(self, js_batch: JsValue) -> None:
        for js_message in js_batch:
            for event in _events(js_message, self._urls):
                self._apply(event)
            if str(js_message.kind) == "failed":
                self._failed(str(js_message.error))

    def _failed(self, error: str) -> None:
        if self._active is not None:
            self._end_sandbox(
                self._active, Finished(self._active, f"Python could not start: {error}")
            )

    def _apply(self, event: CodeEvent) -> None:
        state = self._runs.get(event.run_id)
        if state is None:
            return
        after = reduce(state, event)
        if after is state:
            return
        self._runs[event.run_id] = after
        if isinstance(event, Started):
            self._time_from_now(event.run_id)
        if after.finished and self._active == event.run_id:
            self._active = None
            if after.status == "killed" and self._sandbox is not None:
                self._sandbox.end()  # NOTE: the output cap: the code may still be printing
                self._sandbox = None
        self._draw(event.run_id)
        on_end = self._on_end.pop(event.run_id, None) if after.finished else None
        if on_end is not None:
            on_end(after)

    def _draw(self, run_id: int) -> None:
        js_panel = self._panels[run_id]
        state = self._runs[run_id]
        for name, value in output_attributes(state).items():
            js_panel.setAttribute(name, value)
        for name in ("data-limit", "data-state-kept"):
            if name not in output_attributes(state):
                js_panel.removeAttribute(name)
        footer = settings_html(self._settings()) if state.finished else ""
        js_panel.innerHTML = output_html(state, self._urls.get(run_id)) + footer

    def _say(self, js_button: JsValue, words: str) -> None:
        js_live = js.document.querySelector("[data-announce]")
        if present(js_live):
            js_live.textContent = words
        js_button.title = words


def _panel_after(js_block: JsValue, run_id: int) -> JsValue:
    """The block's output panel (made once, after the block), now showing ``run_id``."""
    js_next = js_block.nextElementSibling
    if present(js_next) and js_next.hasAttribute("data-code-output"):
        js_panel = js_next
    else:
        js_panel = js.document.createElement("div")
        js_panel.className = "code-output"
        js_panel.setAttribute("data-code-output", "")
        js_block.after(js_panel)
    js_panel.setAttribute("data-code-run", str(run_id))
    return js_panel


def _events(js_message: JsValue, urls: dict[int, dict[str, str]]) -> list[CodeEvent]:
    """What one message of the sandbox means for the run it names."""
    kind = str(js_message.kind)
    js_run_id: JsValue = getattr(js_message, "runId", None)
    if not present(js_run_id):
        return []
    run_id = int(js_run_id)
    match kind:
        case "started":
            return [Started(run_id)]
        case "printed":
            chunks = tuple(
                Chunk("stderr" if str(stream) == "stderr" else "stdout", str(text))
                for stream, text in js_message.chunks
            )
            return [Printed(run_id, chunks)]
        case "wrote":
            files = [f for f in js_message.files]
            urls.setdefault(run_id, {}).update({str(f.name): str(f.url) for f in files})
            return [
                Wrote(run_id, tuple(OutFile(str(f.name), str(f.mime), int(f.size)) for f in files))
            ]
        case "finished":
            return [Finished(run_id, str(getattr(js_message, "traceback", "") or ""))]
        case "stopped":
            return [Stopped(run_id, state_kept=True)]
    return []


def _time_limit_ms() -> int | None:
    """``?codeTimeLimitMs=`` (for tests: it wins over the chat's), else ``None``."""
    value = query_params().get("codeTimeLimitMs", "")
    return int(value) if value.isdigit() and int(value) > 0 else None
