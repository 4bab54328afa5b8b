"""Finishing touches of finished blocks: code highlighting (Pygments) and math (KaTeX).

Both libraries are loaded the first time a finished block needs them, so boot never pays for
them: Pygments is a wheel of the vendored lock (:func:`mount_wheel`), KaTeX a vendored script
and stylesheet. Blocks seen before a library arrived are done when it has. The page also loads
Pygments and prepares Python's lexer ahead of the first code block, in idle moments after it
is ready (:meth:`Enhancer.prepare`): done during an answer, those steps dropped frames.
A block still streaming is never touched (it would be re-rendered anyway): only ``.md-done``.

Code is highlighted one block per frame, after its language is prepared in small steps (see
app.ui.code.preparation): a streaming answer keeps painting while Pygments warms up.
"""

from __future__ import annotations

import base64
import importlib
import sys
from typing import Literal

import js
import pyodide_js
from pyodide.ffi import create_once_callable

from app.browser.edge import JsValue, after_paint, js_object, log, present, query, spawn, when_idle
from app.ui.code import highlight, preparation

CODE = ".md-done code[data-lang]:not([data-highlighted])"
MATH = ".md-done .math:not([data-typeset])"
KATEX = "./static/vendor/katex/katex.min"
WHEELS_DIR = "/lib/riacho-wheels"  # NOTE: wheels imported as zips (mount_wheel)
Loading = Literal["absent", "loading", "ready", "failed"]


class Enhancer:
    """Highlights code and typesets math inside finished blocks, loading each library once."""

    def __init__(self) -> None:
        self._pygments: Loading = "absent"
        self._katex: Loading = "absent"
        self._code_queue: list[JsValue] = []
        self._highlighting = False

    def prepare(self, language: str) -> None:
        """Load Pygments and prepare ``language``'s lexer now, one step per idle moment, before
        a code block needs them."""
        if self._pygments == "absent":
            self._pygments = "loading"
            spawn(self._load_pygments(prepared=language))

    def enhance(self, js_root: JsValue) -> None:
        """Do what can be done under ``js_root`` now; start loading what is missing."""
        js_code = _matching(js_root, CODE)
        if js_code:
            if self._pygments == "ready":
                self._queue_code(js_code)
            elif self._pygments == "absent":
                self._pygments = "loading"
                spawn(self._load_pygments())
        js_math = _matching(js_root, MATH)
        if js_math:
            if self._katex == "ready":
                for js_element in js_math:
                    _typeset(js_element)
            elif self._katex == "absent":
                self._katex = "loading"
                self._load_katex()

    def _queue_code(self, js_code: list[JsValue]) -> None:
        self._code_queue.extend(js_code)
        if not self._highlighting:
            self._highlighting = True
            spawn(self._highlight_queued())

    async def _highlight_queued(self) -> None:
        """Highlight the queued blocks, one per frame, each language prepared step by step."""
        try:
            while self._code_queue:
                js_code = self._code_queue.pop(0)
                # NOTE: a block may have been replaced, or queued twice, while it waited.
                if not js_code.isConnected or js_code.hasAttribute("data-highlighted"):
                    continue
                for _step in preparation(_language(js_code)):
                    await after_paint()
                if js_code.isConnected and not js_code.hasAttribute("data-highlighted"):
                    _highlight(js_code)
                await after_paint()
        finally:
            self._highlighting = False

    async def _load_pygments(self, prepared: str | None = None) -> None:
        try:
            # NOTE: in an idle moment, not between a streaming answer's frames.
            await when_idle()
            await mount_wheel("pygments")
            for _step in preparation(prepared) if prepared else ():
                await when_idle()
        except Exception as error:  # NOTE: no highlighting is no failure of the answer
            log(f"riacho: code highlighting unavailable: {error}")
            if prepared:  # NOTE: loaded ahead: tried again at the first code block (or now)
                self._pygments = "absent"
                self.enhance(query("#messages"))
            else:
                self._pygments = "failed"
            return
        self._pygments = "ready"
        self.enhance(query("#messages"))

    def _load_katex(self) -> None:
        js_head = js.document.head
        js_style = js.document.createElement("link")
        js_style.rel = "stylesheet"
        js_style.href = f"{KATEX}.css"
        js_head.appendChild(js_style)
        js_script = js.document.createElement("script")
        js_script.src = f"{KATEX}.js"
        js_script.addEventListener("load", create_once_callable(self._katex_loaded))
        js_script.addEventListener("error", create_once_callable(self._katex_failed))
        js_head.appendChild(js_script)

    def _katex_loaded(self, _js_event: JsValue) -> None:
        self._katex = "ready"
        self.enhance(query("#messages"))

    def _katex_failed(self, _js_event: JsValue) -> None:
        self._katex = "failed"
        log("riacho: math typesetting unavailable: KaTeX did not load")


async def mount_wheel(name: str) -> None:
    """Make the pure wheel ``name`` of Pyodide's lock importable, as a zip on ``sys.path``.

    NOTE: not ``loadPackage``: installing unpacks every file of the wheel in one step (Pygments:
    349 files, 60-75 ms of one frame mid-stream); zipimport reads the archive as it is, as it
    reads the standard library. The browser checks the lock's sha256 (``integrity``), as
    ``loadPackage`` has it do. A runtime without a lock entry or base URL installs instead.
    """
    js_lock: JsValue = getattr(pyodide_js, "lockfile", None)
    js_entry: JsValue = getattr(getattr(js_lock, "packages", None), name, None)
    js_base: JsValue = getattr(pyodide_js, "lockfileBaseUrl", None)
    if not present(js_entry) or not present(js_base):
        await pyodide_js.loadPackage(name)
        return
    file_name, sha256 = str(js_entry.file_name), str(js_entry.sha256)
    integrity = "sha256-" + base64.b64encode(bytes.fromhex(sha256)).decode("ascii")
    js_bytes = await _fetch_bytes(str(js_base) + file_name, integrity)
    path = f"{WHEELS_DIR}/{file_name}"
    pyodide_js.FS.mkdirTree(WHEELS_DIR)
    # NOTE: canOwn: the file keeps this array (no 4.5 MB copy); nothing else holds it
    pyodide_js.FS.writeFile(path, js_bytes, js_object({"canOwn": True}))
    sys.path.append(path)
    importlib.invalidate_caches()


def _matching(js_root: JsValue, selector: str) -> list[JsValue]:
    """``js_root`` itself and the elements under it that match ``selector``."""
    found = [js_root] if bool(js_root.matches(selector)) else []
    return found + list(js_root.querySelectorAll(selector))


def _language(js_code: JsValue) -> str:
    return str(js_code.getAttribute("data-lang") or "")


def _highlight(js_code: JsValue) -> None:
    js_code.setAttribute("data-highlighted", "")
    html = highlight(str(js_code.textContent), _language(js_code))
    if html is not None:
        js_code.innerHTML = html


def _typeset(js_math: JsValue) -> None:
    js_math.setAttribute("data-typeset", "")
    tex = str(js_math.textContent)
    display = str(js_math.getAttribute("data-math")) == "display"
    options = {"displayMode": display, "throwOnError": False, "output": "htmlAndMathml"}
    if present(getattr(js, "katex", None)):
        js.katex.render(tex, js_math, js_object(options))
        js_math.setAttribute("data-tex", tex)


async def _fetch_bytes(url: str, integrity: str) -> JsValue:
    """The body at ``url`` (checked against ``integrity``), as a Uint8Array: fetched by a worker
    when the interpreter module offers one (static/interpreter.mjs: reading, hashing and copying
    a large body on the page's thread holds a frame back), else here."""
    js_fetch_bytes: JsValue = getattr(getattr(js, "riachoInterpreter", None), "fetchBytes", None)
    if present(js_fetch_bytes):
        return await js_fetch_bytes(url, integrity)
    js_response = await js.fetch(url, js_object({"integrity": integrity}))
    if not js_response.ok:
        raise OSError(f"{url}: HTTP {js_response.status}")
    return js.Uint8Array.new(await js_response.arrayBuffer())
