"""Benchmarks that run inside the booted Riacho page, on the page's own Pyodide.

``browser.py`` writes this file into Pyodide's file system as ``bench_inpage.py`` and calls it
through ``pyodide.runPythonAsync``. It also runs under CPython for :func:`answer_tokens`
(the scenario of the stall benchmark), so ``js`` and the browser adapter are imported lazily.
"""

from __future__ import annotations

import itertools
import json
import re
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

RUN_ID = "run_bench"
_TOKEN_RE = re.compile(r"\s*\S+|\s+")  # word-sized deltas, as the demo model sends them


# --- a long markdown answer ---------------------------------------------------------------------


def _section(n: int) -> str:
    """One section of a long answer: heading, paragraphs, a list and a code fence."""
    return (
        f"### Part {n}\n\n"
        f"Paragraph {n} of a long answer. Streams arrive piece by piece, and the page shows "
        "each piece as soon as it lands; **text keeps its order**, its accents (ação, Olá) "
        f"and its `inline code`. See [the notes](https://example.com/notes/{n}).\n\n"
        f"- first point of part {n}, with *emphasis*\n"
        "- second point, a little longer than the first one\n"
        f"- third point: {n} squared is {n * n}\n\n"
        "```python\n"
        f"def step_{n}(value: int) -> int:\n"
        '    """Multiply by the part number."""\n'
        f"    return value * {n}\n"
        "```\n\n"
        f"A closing sentence for part {n}, so each part ends with a plain paragraph.\n\n"
    )


def answer_tokens(count: int) -> list[str]:
    """The first ``count`` word-sized deltas of an endless markdown answer."""
    tokens: list[str] = []
    for n in itertools.count(1):
        if len(tokens) >= count:
            break
        tokens += _TOKEN_RE.findall(_section(n))
    return tokens[:count]


# --- client throughput: decode → parse → validate → apply, through ChatStream --------------------


def _ids() -> Callable[[str], str]:
    """Client-made ids: the run is always RUN_ID (the bytes were built for it)."""
    counter = itertools.count(1)
    return lambda prefix: RUN_ID if prefix == "run" else f"{prefix}_bench_{next(counter)}"


@dataclass(frozen=True, slots=True)
class _ChatSummary:
    """What the chat loader reads from a created chat."""

    id: str
    title: str


@dataclass
class _ReplayTransport:
    """The stream transport and chat API of a send, answering with pre-built chunks."""

    chunks: Sequence[bytes]

    async def create_chat(self) -> _ChatSummary:
        return _ChatSummary("chat_bench", "bench")

    async def open_run(self, body: object) -> AsyncIterator[bytes]:
        return self._replay()

    async def _replay(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk


async def client_throughput(read: int) -> str:
    """Feed ``window.__benchStream`` in ``read``-byte chunks to a fresh ChatStream; JSON result."""
    from js import window

    from app.run.chat_stream import ChatStream

    stream = bytes(window.__benchStream.to_bytes())
    chunks = [stream[i : i + read] for i in range(0, len(stream), read)]
    replay = _ReplayTransport(chunks)
    chat = ChatStream(replay, replay, make_id=_ids())  # type: ignore[arg-type]
    start = time.perf_counter()
    task = chat.send("bench")
    if task is not None:
        await task
    seconds = time.perf_counter() - start
    active = chat.get_state().active_chat
    run = None if active is None else active.runs.get(RUN_ID)
    status = "missing" if run is None else run.status
    events = 0 if run is None else run.last_seq
    chars = 0 if run is None else len(run.text)
    return json.dumps({"seconds": seconds, "events": events, "status": status, "chars": chars})


# --- render cost at the start and at the end of a long answer -----------------------------------


class _HtmlDom:
    """A Dom that only takes the HTML (the view's own cost, without the browser's)."""

    def set_html(self, slot: str, html: str) -> None:
        pass

    def sync_messages(self, order: Sequence[str], changed: Mapping[str, str]) -> None:
        pass

    def patch_message(self, key: str, patch: object) -> None:
        pass

    def set_controls(self, controls: object) -> None:
        pass

    def set_options(self, options: object) -> None:
        pass

    def set_model(self, model_id: object) -> None:
        pass

    def set_draft(self, text: str) -> None:
        pass

    def announce(self, text: str) -> None:
        pass


@dataclass
class _Timer:
    """Seconds spent in the first and in the last window of tokens."""

    first: float = 0.0
    last: float = 0.0
    calls: list[int] = field(default_factory=lambda: [0, 0])

    def add(self, window: int, seconds: float) -> None:
        if window == 0:
            self.first += seconds
        else:
            self.last += seconds
        self.calls[window] += 1


def _window(index: int, total: int, size: int) -> int | None:
    """0 for tokens 1..size, 1 for the last ``size`` tokens, else None."""
    if index <= size:
        return 0
    return 1 if index > total - size else None


def _frame_due(index: int, total: int, size: int, every: int) -> bool:
    """Render every ``every`` tokens inside both windows (the same count in each), and once
    just before the last window so that its first frame does not catch up on the middle."""
    if index <= size:
        return index % every == 0
    offset = index - (total - size)
    return offset >= 0 and offset % every == 0


def _timed(timer: _Timer | None, window: int | None, work: Callable[[], object]) -> None:
    start = time.perf_counter()
    work()
    if timer is not None and window is not None:
        timer.add(window, time.perf_counter() - start)


def _stream_answer(
    views: Mapping[str, Any],
    timers: Mapping[str, _Timer],
    total: int,
    size: int,
    every: int,
    chat_id: str,
) -> None:
    """Apply ``total`` text tokens to a store; render every ``every`` tokens in both windows."""
    from app.state.actions import ChatCreated, EventReceived, RunStarted
    from app.state.reducer import reduce
    from app.state.state import State
    from app.state.store import Store
    from app.wire.protocol import TextEvent

    store: Store[State, Any] = Store(State(), reduce)
    run_id = f"run_{chat_id}"
    store.dispatch(ChatCreated(chat_id, "bench"))
    store.dispatch(RunStarted(run_id, 0.0, chat_id, f"a_{chat_id}", "prompt", f"p_{chat_id}"))
    for view in views.values():
        view.render(store.get_state())
    for index, token in enumerate(answer_tokens(total), start=1):
        window = _window(index, total, size)
        event = TextEvent(text=token, run_id=run_id, seq=index, done=False)
        action = EventReceived(run_id, float(index), event)
        _timed(timers.get("apply"), window, partial(store.dispatch, action))
        if _frame_due(index, total, size, every):
            for name, view in views.items():  # NOTE: untimed at total - size: the catch-up
                _timed(timers.get(name), window, partial(view.render, store.get_state()))


def render_growth(total: int, size: int, every: int) -> str:
    """Apply and render cost of the first and last ``size`` tokens of a ``total``-token answer."""
    from js import document

    from app.browser.dom import BrowserDom
    from app.browser.enhance import Enhancer
    from app.ui.view import View

    messages = document.querySelector("#message-column")
    warm = {"dom": View(BrowserDom(Enhancer())), "html": View(_HtmlDom())}
    _stream_answer(warm, {}, 2 * size, size, every, "warmup")
    messages.replaceChildren()
    views = {"dom": View(BrowserDom(Enhancer())), "html": View(_HtmlDom())}
    timers = {name: _Timer() for name in ("apply", "dom", "html")}
    _stream_answer(views, timers, total, size, every, "measured")
    html_chars = len(messages.innerHTML)
    result = {name: [t.first, t.last, *t.calls] for name, t in timers.items()}
    return json.dumps({"timers": result, "htmlChars": html_chars})


def iter_tokens_frames(run_id: str, tokens: Sequence[str]) -> Iterator[bytes]:
    """SSE frames of ``text`` events of ``run_id`` (seq 1, 2, …), as the server writes them."""
    for seq, token in enumerate(tokens, start=1):
        event = {"type": "text", "text": token, "runId": run_id, "seq": seq, "done": False}
        data = json.dumps(event, ensure_ascii=False, separators=(",", ":"))
        yield f"id: {seq}\ndata: {data}\n\n".encode()
