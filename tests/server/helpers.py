"""Helpers of the server tests: an API client per user and a strict SSE reader."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from aiohttp import ClientResponse
from aiohttp.test_utils import TestClient, TestServer

from app.wire.protocol import EVENT_ADAPTER

JsonObject = dict[str, Any]


@dataclass(frozen=True, slots=True)
class SseFrame:
    """One frame as the server wrote it: its id line (or None), data, or a comment."""

    id: str | None
    data: JsonObject | None
    comment: str | None = None


def parse_sse(body: bytes) -> list[SseFrame]:
    """Split the server's SSE bytes (LF only, ``\\n\\n`` between frames) into frames."""
    text = body.decode("utf-8")
    assert text == "" or text.endswith("\n\n"), f"unterminated stream: {text[-80:]!r}"
    frames = []
    for block in text.split("\n\n")[:-1]:
        fields = dict(line.split(": ", 1) for line in block.split("\n") if not line.startswith(":"))
        if block.startswith(":"):
            frames.append(SseFrame(None, None, block[2:]))
            continue
        assert set(fields) <= {"id", "data"}, block
        frames.append(SseFrame(fields.get("id"), json.loads(fields["data"])))
    return frames


def events_of(body: bytes) -> list[JsonObject]:
    """The event payloads of an SSE body (comments dropped)."""
    return [frame.data for frame in parse_sse(body) if frame.data is not None]


def assert_valid_run_stream(events: list[JsonObject], run_id: str) -> None:
    """Contract of a demo run: seq 1..n, the run id everywhere, one terminal event, last."""
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert {e["runId"] for e in events} == {run_id}
    for event in events:
        EVENT_ADAPTER.validate_python(event)
    assert [e["done"] for e in events] == [False] * (len(events) - 1) + [True]
    assert events[-1]["type"] in ("done", "error")


class Api:
    """One user's view of the server (its own cookie jar)."""

    def __init__(self, client: TestClient[Any, Any]) -> None:
        self.client = client

    @property
    def server(self) -> TestServer:
        server = self.client.server
        assert isinstance(server, TestServer)
        return server

    async def login(self, name: str) -> JsonObject:
        response = await self.client.get(f"/api/session?as={name}")
        assert response.status == 200
        data: JsonObject = await response.json()
        return data

    async def json(self, method: str, path: str, expect: int = 200, **kwargs: Any) -> Any:
        response = await self.client.request(method, path, **kwargs)
        body = await response.text()
        assert response.status == expect, f"{method} {path}: {response.status} {body}"
        return json.loads(body) if body else None

    async def new_chat(self, title: str | None = None) -> str:
        body = {"title": title} if title else None
        chat = await self.json("POST", "/api/chats", expect=201, json=body)
        return str(chat["id"])

    async def stream(self, chat_id: str, prompt: str = "hello", **fields: Any) -> ClientResponse:
        body = {"chatId": chat_id, "prompt": prompt, **fields}
        return await self.client.post("/api/respond/stream", json=body)

    async def run_turn(
        self, chat_id: str, prompt: str = "hello", **fields: Any
    ) -> list[JsonObject]:
        response = await self.stream(chat_id, prompt, **fields)
        assert response.status == 200, await response.text()
        return events_of(await response.read())

    async def scenario(self, steps: list[JsonObject], chat_id: str | None = None) -> None:
        body: JsonObject = {"steps": steps}
        if chat_id is not None:
            body["chatId"] = chat_id
        await self.json("POST", "/__test__/scenarios", json=body)

    async def trace(self, run_id: str) -> JsonObject:
        data: JsonObject = await self.json("GET", f"/__test__/runs/{run_id}")
        return data

    async def run(self, run_id: str) -> JsonObject:
        data: JsonObject = await self.json("GET", f"/api/runs/{run_id}")
        return data

    async def cancel(self, run_id: str) -> str:
        data = await self.json("POST", f"/api/runs/{run_id}/cancel")
        assert data["runId"] == run_id
        return str(data["status"])

    async def replay(self, run_id: str, after: int | None = None) -> list[JsonObject]:
        query = "" if after is None else f"?after={after}"
        response = await self.client.get(f"/api/runs/{run_id}/events{query}")
        assert response.status == 200, await response.text()
        return events_of(await response.read())


async def read_events(response: ClientResponse, count: int) -> list[JsonObject]:
    """Read exactly ``count`` event frames (skipping comments) from a live stream."""
    events: list[JsonObject] = []
    while len(events) < count:
        block = await response.content.readuntil(b"\n\n")
        events += events_of(block)
    return events
