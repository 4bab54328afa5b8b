"""Test-scenario helpers for end-to-end tests (SPEC §9): build steps, queue them, read records.

The page and the test talk to the server as different sessions, so a scenario is queued for
the chat the page is streaming into, at the moment the page asks: :func:`on_next_stream`
intercepts the page's ``POST /api/respond/stream``, reads the client-made ``runId`` and
``chatId`` from its body, queues the steps for that chat and lets the request go on to the
server unchanged (the response is not intercepted, so it streams as it would without the
hook). Knowing the run id up front is what lets raw frames carry the right ``runId``.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from playwright.sync_api import Locator, Page, Route

from tests.e2e.conftest import LiveServer

Step = dict[str, Any]
STREAM_ROUTE = "**/api/respond/stream"


@dataclass(frozen=True, slots=True)
class StreamRequest:
    """What the page sent when it opened a run's stream."""

    run_id: str
    chat_id: str | None
    prompt: str


def text(value: str, **fields: Any) -> Step:
    """An event step: a ``text`` delta (runId/seq/done filled by the server unless given)."""
    return {"event": {"type": "text", "text": value, **fields}}


def done(stop_reason: str = "stop", **fields: Any) -> Step:
    """An event step: the terminal ``done`` event."""
    event = {"type": "done", "messageId": "msg_scenario", "stopReason": stop_reason}
    return {"event": {**event, **fields}}


def error(message: str, code: str, **fields: Any) -> Step:
    """An event step: the terminal ``error`` event."""
    return {"event": {"type": "error", "error": message, "code": code, **fields}}


def frame(payload: dict[str, Any]) -> bytes:
    """One SSE frame for a complete event (``id`` is its seq), as the server would write it."""
    data = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return f"id: {payload['seq']}\ndata: {data}\n\n".encode()


def text_frame(run_id: str, seq: int, value: str) -> bytes:
    """The SSE frame of a ``text`` event of ``run_id``."""
    return frame({"type": "text", "text": value, "runId": run_id, "seq": seq, "done": False})


def raw(data: bytes) -> Step:
    """A raw step: exactly these bytes, in one write."""
    return {"raw_b64": base64.b64encode(data).decode("ascii")}


def sleep(ms: int) -> Step:
    """A pause of the server's player (not of the test)."""
    return {"sleep_ms": ms}


def queue(server: LiveServer, steps: list[Step], chat_id: str | None = None) -> None:
    """Queue a scenario for the next stream request of ``chat_id`` (or of any chat)."""
    body: dict[str, Any] = {"steps": steps}
    if chat_id is not None:
        body["chatId"] = chat_id
    server.api("POST", "/__test__/scenarios", json.dumps(body).encode())


def run_record(server: LiveServer, run_id: str) -> dict[str, Any]:
    """What the server saw of a run (``GET /__test__/runs/{runId}``)."""
    record: dict[str, Any] = json.loads(server.api("GET", f"/__test__/runs/{run_id}"))
    return record


def wait_for_record(
    server: LiveServer,
    run_id: str,
    condition: Callable[[dict[str, Any]], bool],
    timeout_s: float = 10.0,
) -> dict[str, Any]:
    """The server's record of a run once ``condition`` holds (polled; fails after the timeout)."""
    deadline = time.monotonic() + timeout_s
    while True:
        record = run_record(server, run_id)
        if condition(record):
            return record
        assert time.monotonic() < deadline, f"the server's record never matched: {record}"
        time.sleep(0.05)


def on_next_stream(
    page: Page, server: LiveServer, build: Callable[[StreamRequest], list[Step]]
) -> list[StreamRequest]:
    """Play ``build(request)`` as the answer to the page's next stream request.

    Returns a list that receives the intercepted request once the page has sent it.
    """
    seen: list[StreamRequest] = []

    def handle(route: Route) -> None:
        body: dict[str, Any] = route.request.post_data_json or {}
        chat_id = body.get("chatId")
        request = StreamRequest(str(body["runId"]), chat_id, str(body.get("prompt", "")))
        seen.append(request)
        queue(server, build(request), chat_id=request.chat_id)
        route.continue_()

    page.route(STREAM_ROUTE, handle, times=1)
    return seen


def send(page: Page, prompt: str, *, press_enter: bool = False) -> Locator:
    """Send ``prompt`` (Send button, or Enter); the assistant message of this very run, found
    by the run id the page sent — never "the last message"."""
    with page.expect_request(STREAM_ROUTE) as sent:
        page.locator("textarea[name=prompt]").fill(prompt)
        if press_enter:
            page.locator("textarea[name=prompt]").press("Enter")
        else:
            page.locator("[data-action=send]").click()
    return answer_of(page, json.loads(sent.value.post_data or "{}")["runId"])


def answer_of(page: Page, run_id: str) -> Locator:
    """The assistant message showing run ``run_id``."""
    return page.locator(f'[data-role=assistant][data-run-id="{run_id}"]')
