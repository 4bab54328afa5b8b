"""A fake model provider on loopback that the official SDKs talk to unchanged.

It answers the four native APIs Riacho streams from — Chat Completions (``/v1/chat/completions``),
Responses (``/v1/responses``), Anthropic Messages (``/v1/messages``) and Gemini
(``/{version}/models/{model}:streamGenerateContent``) — with replies queued per provider kind:
a recorded native stream (``tests/provider_streams/<kind>/<name>.sse``, written from each
provider's published stream format) or an HTTP error, ended cleanly, by a TCP abort, or held
open until the client goes away. It records every request (path, headers, JSON body) and when
the client disconnected.

``python -m tests.provider_fake --port N`` runs it standalone for the end-to-end tests, with a
scripted Chat Completions "model" (:func:`chat_brain`) answering whatever is not queued, and
``GET /__fake__/requests`` to read what it was sent.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from aiohttp import web

STREAMS = Path(__file__).resolve().parent / "provider_streams"
Kind = Literal["openai-chat", "openai-responses", "anthropic", "google"]
End = Literal["eof", "abort", "hold"]
JsonObject = dict[str, Any]
_EVENT = re.compile(rb".*?(?:\r\n\r\n|\n\n)", re.DOTALL)


def split_events(data: bytes) -> list[bytes]:
    """The SSE events of ``data`` with their blank-line endings (a tail without one last)."""
    events = [m.group(0) for m in _EVENT.finditer(data)]
    rest = data[sum(len(event) for event in events) :]
    return events + ([rest] if rest else [])


@dataclass(frozen=True)
class Reply:
    """One answer: a native stream (``status`` 200), or a JSON body (an error status, or a 200
    that is not a stream, as local servers answer some errors)."""

    stream: bytes = b""
    status: int = 200
    json: object | None = None
    headers: dict[str, str] = field(default_factory=dict)
    end: End = "eof"
    delay_s: float = 0.0  # before each event
    wait_s: float = 0.0  # before the response starts

    @classmethod
    def fixture(cls, kind: Kind, name: str, **changes: Any) -> Reply:
        return cls(stream=(STREAMS / kind / f"{name}.sse").read_bytes(), **changes)

    @classmethod
    def error(cls, status: int, body: object, **headers: str) -> Reply:
        return cls(status=status, json=body, headers=headers)


@dataclass(frozen=True)
class Seen:
    """A request the fake received."""

    kind: Kind
    path: str
    headers: dict[str, str]
    body: JsonObject


Brain = Callable[[Kind, JsonObject], Reply]


class FakeProvider:
    """The fake's state: queued replies per kind, what it saw, when clients left."""

    def __init__(self, brain: Brain | None = None) -> None:
        self.replies: dict[Kind, deque[Reply]] = {}
        self.requests: list[Seen] = []
        self.disconnects: list[float] = []
        self.disconnected = asyncio.Event()
        self.brain = brain

    def queue(self, kind: Kind, *replies: Reply) -> None:
        self.replies.setdefault(kind, deque()).extend(replies)

    def bodies(self, kind: Kind) -> list[JsonObject]:
        return [seen.body for seen in self.requests if seen.kind == kind]

    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._handler("openai-chat"))
        app.router.add_post("/v1/responses", self._handler("openai-responses"))
        app.router.add_post("/v1/messages", self._handler("anthropic"))
        app.router.add_post(
            r"/{version}/models/{model}:streamGenerateContent", self._handler("google")
        )
        app.router.add_get("/__fake__/requests", self._requests)
        return app

    def _handler(self, kind: Kind) -> Callable[[web.Request], Any]:
        async def handle(request: web.Request) -> web.StreamResponse:
            body = await request.json()
            self.requests.append(Seen(kind, request.path_qs, dict(request.headers), body))
            reply = self._next(kind, body)
            await asyncio.sleep(reply.wait_s)
            if reply.status != 200 or reply.json is not None:  # NOTE: a JSON 200 too
                return web.json_response(reply.json, status=reply.status, headers=reply.headers)
            return await self._stream(request, reply)

        return handle

    def _next(self, kind: Kind, body: JsonObject) -> Reply:
        queued = self.replies.get(kind)
        if queued:
            return queued.popleft()
        if self.brain is not None:
            return self.brain(kind, body)
        return Reply.error(500, {"error": {"message": f"no {kind} reply queued", "code": 500}})

    async def _stream(self, request: web.Request, reply: Reply) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        try:
            for event in split_events(reply.stream):
                if reply.delay_s:
                    await asyncio.sleep(reply.delay_s)
                await response.write(event)
            if reply.end == "hold":
                await self._hold(request)
        except ConnectionError:
            self._note_disconnect()
            return response
        except asyncio.CancelledError:
            self._note_disconnect()  # NOTE: aiohttp cancels a handler whose client went away.
            raise
        if reply.end == "abort" and request.transport is not None:
            request.transport.abort()
        elif reply.end == "eof":
            await response.write_eof()
        return response

    async def _hold(self, request: web.Request) -> None:
        """Send nothing more until the client closes the connection."""
        while request.transport is not None and not request.transport.is_closing():
            await asyncio.sleep(0.005)
        self._note_disconnect()

    def _note_disconnect(self) -> None:
        self.disconnects.append(time.monotonic())
        self.disconnected.set()

    async def _requests(self, _request: web.Request) -> web.Response:
        seen = [{"kind": s.kind, "path": s.path, "body": s.body} for s in self.requests]
        return web.json_response(seen)


# --- a scripted Chat Completions model (for the browser tests) --------------------------------

SLOW_START_S = 3.0
_ARITHMETIC = re.compile(r"\d[\d\s.+\-*/()]*[\d)]")


def chat_brain(kind: Kind, body: JsonObject) -> Reply:
    """Answers Chat Completions from the conversation: arithmetic through the calculator tool,
    a tool result in words, anything else by quoting the question and the one before it (a
    question that says "take your time" after a silence of :data:`SLOW_START_S`)."""
    if kind != "openai-chat":
        return Reply.error(500, {"error": {"message": "the brain speaks openai-chat only"}})
    messages: list[JsonObject] = body["messages"]
    last = messages[-1]
    if last["role"] == "tool":
        return chat_reply(words=f"The calculator says {_result(last['content'])}.")
    asked = [str(m["content"]) for m in messages if m["role"] == "user"]
    match = _ARITHMETIC.search(asked[-1])
    if body.get("tools") and match:
        return chat_reply(call=("calculator", {"expression": match.group(0).strip()}))
    answer = f"You asked: “{asked[-1]}”."
    if len(asked) > 1:
        answer += f" Before that you asked: “{asked[-2]}”."
    reply = chat_reply(words=answer)
    return replace(reply, wait_s=SLOW_START_S) if "take your time" in asked[-1] else reply


def _result(content: str) -> str:
    try:
        value = json.loads(content)
    except ValueError:
        return content
    return str(value.get("result", value)) if isinstance(value, dict) else str(value)


def chat_reply(
    words: str = "", call: tuple[str, JsonObject | str] | None = None, delay_s: float = 0.02
) -> Reply:
    """A Chat Completions stream: the words one by one, or one tool call in fragments (its
    arguments as an object, or as the exact text to send)."""
    deltas: list[JsonObject] = [{"role": "assistant", "content": ""}]
    deltas += [{"content": piece} for piece in re.findall(r"\S*\s*", words) if piece]
    if call is not None:
        name, arguments = call
        text = arguments if isinstance(arguments, str) else json.dumps(arguments)
        head = {"index": 0, "id": "call_fake_1", "type": "function"}
        deltas.append({"tool_calls": [{**head, "function": {"name": name, "arguments": ""}}]})
        deltas += [
            {"tool_calls": [{"index": 0, "function": {"arguments": text[i : i + 5]}}]}
            for i in range(0, len(text), 5)
        ]
    finish = "tool_calls" if call else "stop"
    chunks = [_chunk([{"index": 0, "delta": d, "finish_reason": None}]) for d in deltas]
    chunks.append(_chunk([{"index": 0, "delta": {}, "finish_reason": finish}]))
    usage = {
        "prompt_tokens": 40,
        "completion_tokens": len(deltas),
        "total_tokens": 40 + len(deltas),
    }
    chunks.append(_chunk([], usage=usage))
    stream = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
    return Reply(stream=stream + b"data: [DONE]\n\n", delay_s=delay_s)


def _chunk(choices: list[JsonObject], usage: JsonObject | None = None) -> JsonObject:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 1764547200,
        "model": "fake-model",
        "choices": choices,
        "usage": usage,
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.provider_fake", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    web.run_app(FakeProvider(chat_brain).app(), host=args.host, port=args.port, print=None)


if __name__ == "__main__":
    main()
