"""Record the modules the page loads, for tools/trim.py.

Runs INSIDE Pyodide under Node (tools/trace.mjs), on the vendored runtime with the page's
packages already loaded: ``python trace.py ROOT OUT`` in effect, ROOT being the repository as
seen inside Pyodide and OUT the JSON file written (a sorted list of module names).

Recorded: every module in ``sys.modules`` (the first look is what Pyodide imported at start-up
and while loading the packages) and every ``import`` audit event from then on, while this
script imports every app module but the entry point (which starts the page) and exercises them
the way the page does: markdown with code and math, code highlighting once Pygments is loaded
(``loadPackage``, as the page does it), every stream event, every API payload, a ChatStream
over a fake server rendered by the View, and the error paths (tracebacks, warnings). Then it
imports what PyScript's Python and the app's browser adapter name, and every lexer of Pygments
(shipped whole, loaded on demand: any language an answer names may be highlighted).
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import importlib
import io
import json
import sys
import traceback
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

RECORDED: set[str] = set(sys.modules)


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event == "import":
        RECORDED.add(str(args[0]))


sys.addaudithook(_audit)

# Modules the runtime provides outside the archives (JS proxies and PyScript's own package).
RUNTIME_PROVIDED = ("js", "pyodide_js", "pyscript", "polyscript", "_pyscript", "jsffi")

LANGUAGE_SAMPLES = {
    "python": 'def f(x: int) -> str:\n    """Doc."""\n    return f"{x!r}" if x else None\n',
    "javascript": "const f = async (x) => { await fetch(`/a/${x}`); return x ?? 1; };\n",
    "typescript": "interface A { b: number }\nexport function f<T>(x: T): T { return x; }\n",
    "json": '{"a": [1, 2.5, true, null], "b": {"c": "d"}}\n',
    "bash": 'for f in *.txt; do echo "$f" | grep -q x && rm -- "$f"; done\n',
    "sql": "SELECT a, COUNT(*) FROM t WHERE b LIKE 'x%' GROUP BY a ORDER BY 2 DESC;\n",
    "html": '<!doctype html><div class="a" onclick="f()"><script>let x=1</script></div>\n',
    "css": "@media (max-width: 600px) { .a > b:hover { color: #fff; margin: 0 1em; } }\n",
    "c": '#include <stdio.h>\nint main(void) { printf("%d\\n", 1 << 3); return 0; }\n',
    "cpp": "template <typename T> auto f(T x) -> T { std::vector<T> v{x}; return v[0]; }\n",
    "java": "public class A { public static void main(String[] a) { System.out.println(1); } }\n",
    "go": 'package main\nimport "fmt"\nfunc main() { ch := make(chan int); fmt.Println(ch) }\n',
    "rust": 'fn main() { let v: Vec<u8> = vec![1, 2]; println!("{:?}", v.len()); }\n',
    "yaml": "a: [1, 2]\nb:\n  - c: 'd'\n    e: |\n      text\n",
    "toml": '[tool.a]\nb = ["c", 1]\nd = { e = true }\n',
    "diff": "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n-old\n+new\n context\n",
    "markdown": "# Title\n\n*a* **b** `c` [d](https://e)\n\n- f\n",
    "text": "plain text\n",
}

MARKDOWN_SAMPLE = """# Heading

Some *emphasis*, **strong**, `code`, ~~struck~~, a [link](https://example.com "t"),
<https://auto.example>, an image ![alt](data:image/png;base64,iVBORw0KGgo=), &amp; &copy;.
A footnote-ish [ref][1] and "quotes" -- dashes...

[1]: https://example.com/ref

> quote with $x^2$ inline math and \\(a+b\\)

1. one
2. two
   - nested `x`

| a | b |
|---|:-:|
| 1 | 2 |

$$
\\int_0^1 f(x)\\,dx
$$

\\[ e^{i\\pi} + 1 = 0 \\]

```python
print("hi")
```

    indented code

<div>raw html</div>

---
"""


def _frame(event: dict[str, Any]) -> bytes:
    return f"id: {event['seq']}\ndata: {json.dumps(event)}\n\n".encode()


def _events(run_id: str) -> list[dict[str, Any]]:
    """One event of every type the client knows, in a plausible order."""
    events: list[dict[str, Any]] = [
        {"type": "user_message_id", "messageId": "msg_u"},
        {"type": "thinking_start", "elapsedMs": 1},
        {"type": "thinking", "text": "Let me think about $x$."},
        {"type": "text", "text": "Here is code:\n\n```python\nprint(1)\n```\n\n", "elapsedMs": 5},
        {"type": "assistant_text_delta", "text": "and math $e^x$ and \\[x\\]\n\n"},
        {"type": "tool_call_started", "toolCallId": "tc_1", "toolName": "search"},
        {"type": "tool_call_arguments_delta", "toolCallId": "tc_1", "delta": '{"q": "riv'},
        {"type": "tool_call_arguments_delta", "toolCallId": "tc_1", "delta": 'er"}'},
        {
            "type": "tool_call_completed",
            "toolCallId": "tc_1",
            "toolName": "search",
            "arguments": {"q": "river"},
        },
        {"type": "tool_result", "toolCallId": "tc_1", "result": {"hits": [1, "a", None]}},
        {
            "type": "image_generation_started",
            "imageId": "img_1",
            "toolCallId": "tc_1",
            "prompt": "a river",
        },
        {
            "type": "image_generation_completed",
            "imageId": "img_1",
            "url": "data:image/png;base64,iVBORw0KGgo=",
            "alt": "a river",
        },
        {"type": "image_generation_started", "imageId": "img_2", "prompt": "b"},
        {"type": "image_generation_failed", "imageId": "img_2", "error": "nope"},
        {
            "type": "context_info",
            "usedTokens": 10,
            "maxTokens": 100,
            "ratio": 0.1,
            "severity": "warning",
            "compactionRecommended": False,
        },
        {"type": "fallback_notice", "reason": "model_changed", "message": "Switched model"},
        {"type": "continuation_transition", "mode": "replay", "recovered": False},
        {"type": "continuation_transition", "mode": "replay", "recovered": True, "reason": "x"},
        {"type": "system_event", "kind": "tool_loop_exhausted", "message": "Stopped"},
        {"type": "text", "text": "| a | b |\n|---|---|\n| 1 | 2 |\n"},
        {"type": "done", "messageId": "msg_a", "stopReason": "stop"},
    ]
    return [
        {"runId": run_id, "seq": seq, "done": event["type"] == "done", **event}
        for seq, event in enumerate(events, start=1)
    ]


def _exercise_protocol() -> None:
    from app.wire import protocol
    from app.wire.sse import SSEDecoder

    for event in _events("run_p"):
        parsed = protocol.parse_event(json.dumps(event))
        assert isinstance(parsed, protocol.ParsedEvent), parsed
        protocol.encode_event(parsed.event)
    terminal = {
        "type": "error",
        "runId": "run_p",
        "seq": 9,
        "done": True,
        "error": "boom",
        "code": "provider_error",
    }
    assert isinstance(protocol.parse_event(json.dumps(terminal)), protocol.ParsedEvent)
    for bad in (
        '{"type": "text"',
        "[1]",
        '{"type": "nope", "runId": "r", "seq": 3}',
        '{"type": "text", "runId": "r", "seq": "1", "done": 0, "text": 1}',
        '"\\ud800"',
    ):
        protocol.parse_event(bad)
    for known in sorted(protocol.EVENT_TYPES):
        protocol.parse_event(json.dumps({"type": known, "runId": "r", "seq": 1, "done": False}))
    protocol.parse_partial_arguments('{"a": [1, "b')
    decoder = SSEDecoder(max_event_bytes=64)
    for chunk in (
        b": keepalive\n\n",
        _frame(_events("run_p")[3])[:7],
        b"id: 1\r\ndata: x\r\n\r\n",
        "data: ol\u00e1".encode()[:-1],
        b"\xa1\n\n",
        b"data: " + b"x" * 100 + b"\n\n",
    ):
        decoder.feed(chunk)
    decoder.close()


def _exercise_api() -> Any:
    from app.wire import api

    stamp = "2026-01-01T12:00:00Z"
    chat = {"id": "c1", "title": "Chat", "createdAt": stamp, "updatedAt": stamp}
    attachment = {"attachmentId": "att_1", "name": "a.txt", "size": 1234, "mimeType": "text/plain"}
    messages = [
        {"id": "u1", "role": "user", "text": "Hi", "createdAt": stamp, "attachments": [attachment]},
        {
            "id": "a1",
            "role": "assistant",
            "text": "Hello",
            "status": "completed",
            "runId": "r1",
            "parentId": "u1",
            "attempt": 1,
            "partial": 0,
            "parts": [
                {"type": "text", "text": "Hello **there**\n\n```js\nx\n```"},
                {"type": "thinking", "text": "hm", "startedMs": 1, "endedMs": 900},
                {
                    "type": "tool_call",
                    "toolCallId": "t",
                    "toolName": "s",
                    "argumentsText": "{}",
                    "arguments": {},
                    "status": "done",
                    "result": [1],
                    "isError": False,
                },
            ],
        },
        {"id": "u2", "role": "user", "text": "More", "parentId": "a1"},
        {
            "id": "a2",
            "role": "assistant",
            "text": "Par",
            "status": "interrupted",
            "runId": "r2",
            "parentId": "u2",
            "partial": True,
            "reason": "server_restarted",
        },
    ]
    samples: dict[type[Any], Any] = {
        api.ChatSummary: chat,
        api.ChatDetail: {**chat, "messages": messages},
        api.RunInfo: {
            "runId": "r1",
            "chatId": "c1",
            "messageId": "a1",
            "status": "completed",
            "lastSeq": 4,
            "attempt": 1,
            "expired": 1,
            "reason": "stream_ended",
        },
        api.CancelResult: {"runId": "r1", "status": "cancelled"},
        api.AttachmentInfo: attachment,
        api.CompactionResult: {
            "chatId": "c1",
            "usedTokensBefore": 9,
            "usedTokens": 1,
            "maxTokens": 10,
            "ratio": 0.1,
            "severity": "ok",
            "compactionRecommended": False,
        },
        api.ModelInfo: {
            "id": "m",
            "label": "M",
            "available": False,
            "supportsThinking": True,
            "supportsTools": True,
            "unavailableReason": "no key",
        },
        api.SessionInfo: {
            "userId": "usr_1",
            "name": "ana",
            "auth": "password",
            "limits": {
                "attachmentMaxBytes": 10,
                "attachmentsPerMessage": 2,
                "attachmentTypes": ["image/png"],
            },
        },
        api.ApiErrorBody: {"error": {"code": "x", "message": "y"}},
        api.RespondStreamBody: {
            "chatId": "c1",
            "prompt": "p",
            "thinkingEnabled": True,
            "reasoningEffort": "high",
            "attachmentIds": ["a"],
            "runId": "r",
        },
    }
    for model, sample in samples.items():
        value = model.model_validate_json(json.dumps(sample))
        model.model_validate(sample)
        api.encode_payload(value)
        value.model_dump()
        try:
            model.model_validate_json('{"id": 1, "status": "bogus", "size": -1}')
        except api.ValidationError as error:
            str(error)
            error.errors()
    for status, body, retry in (
        (503, '{"error": {"code": "busy", "message": "m"}}', "3"),
        (500, b"<html>", None),
        (429, "", "Wed, 21 Oct 2015"),
    ):
        str(api.parse_http_error(status, body, retry))
    for size in (0, 1, 1023, 5000, 3 * 1024**2, 7 * 1024**4):
        api.human_size(size)
    return api.ChatDetail.model_validate_json(json.dumps({**chat, "messages": messages}))


def _exercise_markdown() -> None:
    from app.ui import code, markdown

    for finished in (True, False):
        markdown.with_cursor(markdown.render_markdown(MARKDOWN_SAMPLE, finished=finished))
    markdown.split_blocks(MARKDOWN_SAMPLE + "\n```js\nopen(")
    for info in ("python", "no such lang", "{.py}", ""):
        code.code_block_html("x = 1\n", info, finished=True)


async def _exercise_pygments() -> None:
    import pyodide_js  # type: ignore[import-not-found]

    from app.ui.code import available, highlight

    # NOTE: as the page does it (app/browser/enhance.py): on demand, after boot.
    await pyodide_js.loadPackage("pygments")
    assert available()
    for language, sample in LANGUAGE_SAMPLES.items():
        assert highlight(sample, language) is not None, language
    for alias in ("py", "js", "ts", "sh", "shell", "c++", "golang", "rs", "yml", "md", "nosuch"):
        highlight("x\n", alias)
    lexers = importlib.import_module("pygments.lexers")
    mapping = importlib.import_module("pygments.lexers._mapping")
    # NOTE: Pygments is shipped whole, so any lexer can be named by an answer: import each one
    # (its module's imports) and use it once.
    for _module, _name, aliases, _files, _mimes in mapping.LEXERS.values():
        if aliases:
            highlight("x = 1\n", aliases[0])
    lexers.guess_lexer_for_filename("a.py", "x = 1\n")


class _FakeServer:
    """The stream transport and chat API, answering from canned payloads."""

    def __init__(self, chat: Any) -> None:
        self.chat = chat

    async def open_run(self, body: Any) -> Any:
        await asyncio.sleep(0)
        return self._stream([_frame(event) for event in _events(body.run_id)])

    async def open_events(self, run_id: str, after_seq: int) -> Any:
        frames = [_frame(event) for event in _events(run_id)[after_seq:]]
        return self._stream(frames)

    async def _stream(self, frames: Sequence[bytes]) -> Any:
        for data in frames:
            await asyncio.sleep(0)
            # NOTE: split mid-frame and mid-character, as a network read may.
            yield data[:5]
            yield data[5:]

    async def start_session(self) -> Any:
        from app.wire.api import SessionInfo

        return SessionInfo(user_id="usr_1", name="anonymous")

    async def sign_in(self, name: str, password: str) -> Any:
        return await self.start_session()

    async def sign_out(self, everywhere: bool = False) -> None:
        return None

    async def cancel_run(self, run_id: str) -> Any:
        from app.wire.api import CancelResult

        return CancelResult(run_id=run_id, status="cancelled")

    async def get_run(self, run_id: str) -> Any:
        from app.wire.api import RunInfo

        return RunInfo(run_id=run_id, chat_id="c1", status="cancelled", last_seq=1, attempt=1)

    async def get_chat(self, chat_id: str) -> Any:
        from app.wire.errors import HttpStatusError

        if chat_id != self.chat.id:
            raise HttpStatusError(404, "chat_not_found", "Chat not found")
        return self.chat

    async def list_chats(self, query: str = "") -> Any:
        from app.wire.api import ChatSummary

        return [ChatSummary.model_validate(self.chat.model_dump())]

    async def rename_chat(self, chat_id: str, title: str) -> Any:
        from app.wire.api import ChatSummary

        return ChatSummary.model_validate({**self.chat.model_dump(), "title": title})

    async def delete_chat(self, chat_id: str) -> None:
        return None

    async def compact_chat(self, chat_id: str) -> Any:
        from app.wire.api import CompactionResult

        return CompactionResult(
            chat_id=chat_id,
            used_tokens_before=9,
            used_tokens=1,
            max_tokens=10,
            ratio=0.1,
            severity="ok",
            compaction_recommended=False,
        )

    async def list_models(self) -> Any:
        return []

    async def upload_attachment(self, file: object, on_progress: Any = None) -> Any:
        from app.wire.api import AttachmentInfo

        return AttachmentInfo(attachment_id="att_1", name="a", size=1, mime_type="text/plain")


class _FakeDom:
    """The View's page, recording nothing."""

    def set_html(self, slot: str, html: str) -> None: ...

    def sync_messages(self, order: Sequence[str], changed: Mapping[str, str]) -> None: ...

    def patch_message(self, key: str, patch: Any) -> None: ...

    def set_controls(self, controls: Any) -> None: ...

    def set_options(self, options: Any) -> None: ...

    def set_model(self, model_id: Any) -> None: ...

    def set_draft(self, text: str) -> None: ...

    def announce(self, text: str) -> None: ...


async def _exercise_chat_stream(chat: Any) -> None:
    from app.run.chat_stream import ChatStream, SendOptions
    from app.run.config import ClientConfig
    from app.state.trace import format_trace
    from app.ui.coalesce import FrameCoalescer
    from app.ui.controller import Composer, Controller
    from app.ui.view import View
    from app.wire.errors import HttpStatusError, TransportError

    server = _FakeServer(chat)
    config = ClientConfig.from_query({"idleTimeoutMs": "5000", "maxEventBytes": "x"})
    traces: list[str] = []
    stream = ChatStream(
        server, server, config=config, on_trace=lambda trace: traces.append(format_trace(trace))
    )
    view = View(_FakeDom(), attachment_src=lambda attachment_id: f"/a/{attachment_id}")
    frames: list[Any] = []
    coalescer = FrameCoalescer(frames.append, view.render)
    stream.subscribe(coalescer.on_change)
    controller = Controller(stream, lambda text: None)

    async def settle() -> None:
        for _ in range(200):
            await asyncio.sleep(0)
            while frames:
                frames.pop(0)()

    await stream.refresh_chats()
    await settle()
    task = stream.select_chat("c1")
    if task is not None:
        await task
    await settle()
    controller.submit(
        Composer(
            "Hello",
            SendOptions(
                thinking_enabled=True, tool_intent=True, reasoning_effort="low", model_id="m"
            ),
        )
    )
    await settle()
    runs = stream.get_state().chats["c1"].runs.values()
    # NOTE: the history's answer and the one just streamed: the exercise ran end to end.
    assert sum(run.status == "completed" and bool(run.text) for run in runs) == 2, list(runs)
    controller.copy_last_answer()
    message_ids = [m.id for m in stream.get_state().chats["c1"].messages]
    for message_id in message_ids:
        stream.regenerate(message_id)
        await settle()
        stream.resume(message_id)
        await settle()
    stream.new_chat()
    stream.send("A new chat")
    await asyncio.sleep(0)
    stream.stop()
    await settle()
    stream.report_error(HttpStatusError(503, "busy", "Busy", 2.0))
    stream.report_error(TransportError("connection reset"))
    view.render(stream.get_state())
    stream.dismiss_error()
    stream.search("chat")
    await settle()
    await stream.compact("c1")
    stream.rename_chat("c1", "Renamed")
    stream.delete_chat("c1")
    await settle()
    view.render(stream.get_state())
    stream.close()


def _exercise_error_paths(root: Path) -> None:
    from app.run.config import ClientConfig

    try:
        ClientConfig.from_query(None)  # type: ignore[arg-type]
    except Exception:
        traceback.print_exc(file=io.StringIO())
    for bad in ("undefined_name_here", "sys.no_such_attribute", "import no_such_module_xyz"):
        try:
            exec(bad, {"sys": sys})
        except Exception as error:
            "".join(traceback.format_exception(error))
    group = ExceptionGroup("many", [ValueError("a"), KeyError("b")])
    "".join(traceback.format_exception(group))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.warn("a warning", DeprecationWarning, stacklevel=1)
    for warning in caught:
        source = str(root / "app" / "run" / "config.py")  # NOTE: a file with source lines
        warnings.formatwarning(warning.message, warning.category, source, 1)
    import datetime as dt

    now = dt.datetime.now().astimezone()
    now.strftime("%A %d %B %Y %H:%M")
    dt.datetime.strptime("2026-01-02 03:04", "%Y-%m-%d %H:%M")
    for codec in ("utf-8", "utf-8-sig", "latin-1", "ascii", "utf-16"):
        "ol\u00e1".encode(codec, errors="replace").decode(codec, errors="replace")
    "m\u00fcnchen.example".encode("idna").decode("idna")
    int("1" * 4000)


def _import_named(sources: list[Path]) -> None:
    """Import every module these sources name (their stdlib dependencies), where possible."""
    names: set[str] = set()
    for source in sources:
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module)
    for name in sorted(names):
        if name.split(".")[0] in RUNTIME_PROVIDED:
            continue
        with contextlib.suppress(ImportError):  # NOTE: optional, absent in the browser too
            importlib.import_module(name)


def _import_package(name: str) -> None:
    """Import a package and every module under it (skipping ``__main__``)."""
    import pkgutil

    package = importlib.import_module(name)
    for info in pkgutil.walk_packages(package.__path__, f"{name}."):
        if not info.name.endswith("__main__"):
            # NOTE: ImportError: a module for another platform or with an absent dependency
            with contextlib.suppress(ImportError):
                importlib.import_module(info.name)


async def main(root: Path, out: Path) -> None:
    sys.path.insert(0, str(root))
    app = root / "app"
    for source in sorted(app.rglob("*.py")):
        module = ".".join(source.relative_to(root).with_suffix("").parts)
        module = module.removesuffix(".__init__")
        if module != "app.main":  # NOTE: importing it starts the page
            importlib.import_module(module)
    _exercise_protocol()
    chat = _exercise_api()
    _exercise_markdown()
    await _exercise_pygments()
    await _exercise_chat_stream(chat)
    _exercise_error_paths(root)
    pyscript = root / "node_modules" / "@pyscript" / "core" / "src" / "stdlib"
    _import_named(sorted(app.rglob("*.py")) + sorted(pyscript.rglob("*.py")))
    tool_only = {"pkgutil"} - RECORDED - set(sys.modules)  # NOTE: imported here, for the next step
    for package in ("pyodide", "_pyodide"):
        _import_package(package)
    found = (RECORDED | set(sys.modules)) - tool_only
    modules = sorted(m for m in found if m != "app" and not m.startswith("app."))
    out.write_text(json.dumps(modules, indent=0) + "\n", encoding="utf-8")
    print(f"trace: {len(modules)} modules imported")
