"""Benchmarks of the live page against the server: main-thread stalls while streaming (§10.4)
and Stop latency (§10.5). Times are taken in the page with ``performance.now()`` (``page.js``).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from harness import Server, median
from inpage import answer_tokens, iter_tokens_frames
from playwright.sync_api import Page, Route

STREAM_ROUTE = "**/api/respond/stream"
STALL_EVENTS = 10_000
EVENTS_PER_WRITE = 20
WRITE_EVERY_MS = 10  # 20 events per 10 ms: 2,000 events/s
STALL_MS = 50  # NOTE: page.js counts frames over 50 ms per quarter of the stream too
STOP_RUNS = 3
STOP_AFTER_MS = 600  # let the long answer stream a while before Stop
ANSWER = "[data-role=assistant]"
LAST_ANSWER = f"{ANSWER} >> nth=-1"
TIMEOUT_MS = 120_000


def stall_steps(run_id: str) -> list[dict[str, Any]]:
    """STALL_EVENTS text frames in writes of EVENTS_PER_WRITE every WRITE_EVERY_MS, then done."""
    frames = list(iter_tokens_frames(run_id, answer_tokens(STALL_EVENTS)))
    steps: list[dict[str, Any]] = []
    for start in range(0, len(frames), EVENTS_PER_WRITE):
        data = b"".join(frames[start : start + EVENTS_PER_WRITE])
        steps.append({"raw_b64": base64.b64encode(data).decode("ascii")})
        steps.append({"sleep_ms": WRITE_EVERY_MS})
    done = {"type": "done", "messageId": "msg_bench", "stopReason": "stop"}
    steps.append({"event": {**done, "seq": STALL_EVENTS + 1}})
    return steps


def on_next_stream(page: Page, server: Server) -> None:
    """Answer the page's next stream request with the stall scenario, queued for its chat.

    NOTE: the technique of tests/e2e/scenarios.py: read the client-made runId from the request
    body, queue the scenario for that chat, let the request go on unchanged.
    """

    def handle(route: Route) -> None:
        body: dict[str, Any] = route.request.post_data_json or {}
        scenario: dict[str, Any] = {"steps": stall_steps(str(body["runId"]))}
        if body.get("chatId"):
            scenario["chatId"] = body["chatId"]
        server.api("POST", "/__test__/scenarios", scenario)
        route.continue_()

    page.route(STREAM_ROUTE, handle, times=1)


def send(page: Page, prompt: str) -> None:
    """Type ``prompt`` and press Send."""
    page.locator("textarea[name=prompt]").fill(prompt)
    page.locator("[data-action=send]").click()


@dataclass(frozen=True, slots=True)
class Stalls:
    """What the page's main thread did while the answer streamed."""

    events_per_s: float
    longest_frame_ms: float
    frames_over: int
    over_by_quarter: tuple[int, ...]
    longest_task_ms: float
    long_tasks: int


def stalls(page: Page, server: Server) -> Stalls:
    """Stream STALL_EVENTS text events at 2,000/s into the page; frame gaps and long tasks."""
    on_next_stream(page, server)
    page.evaluate("() => window.riachoBench.startStallMonitor()")
    send(page, "stall benchmark")
    page.wait_for_selector(f"{ANSWER}[data-status=completed]", state="attached", timeout=TIMEOUT_MS)
    seen: dict[str, Any] = page.evaluate("() => window.riachoBench.stopStallMonitor()")
    seconds = max(seen["to"] - seen["from"], 1.0) / 1000
    gaps: list[float] = seen["frameGaps"] or [0.0]
    tasks: list[float] = seen["longTasks"] or [0.0]
    return Stalls(
        events_per_s=STALL_EVENTS / seconds,
        longest_frame_ms=max(gaps),
        frames_over=sum(gap > STALL_MS for gap in gaps),
        over_by_quarter=tuple(seen["quartersOver50"]),
        longest_task_ms=max(tasks),
        long_tasks=len(seen["longTasks"]),
    )


@dataclass(frozen=True, slots=True)
class StopLatency:
    """Medians over STOP_RUNS of Stop click → ``cancelling`` shown, and → confirmed (ms)."""

    cancelling_ms: float
    confirmed_ms: float
    runs: int


def _stop_once(page: Page) -> tuple[float, float]:
    send(page, "Please give me a long answer about streams")
    page.wait_for_selector(f"{ANSWER}[data-status=receiving]", state="attached", timeout=TIMEOUT_MS)
    page.wait_for_timeout(STOP_AFTER_MS)
    page.evaluate("() => window.riachoBench.armStopTimer()")
    page.locator("[data-action=stop]").click()
    confirmed = page.locator(LAST_ANSWER).locator("[data-cancel=confirmed]")
    confirmed.wait_for(state="attached", timeout=TIMEOUT_MS)
    timer: dict[str, float | None] = page.evaluate("() => window.__benchStop")
    click, cancelling, done = timer["click"], timer["cancelling"], timer["confirmed"]
    if click is None or cancelling is None or done is None:
        raise RuntimeError(f"stop timer incomplete: {timer}")
    page.wait_for_selector("[data-action=send]:not([disabled])", timeout=TIMEOUT_MS)
    return cancelling - click, done - click


def stop_latency(page: Page) -> StopLatency:
    """Send a long demo answer, press Stop mid-stream, STOP_RUNS times."""
    runs = [_stop_once(page) for _ in range(STOP_RUNS)]
    return StopLatency(
        median([run[0] for run in runs]), median([run[1] for run in runs]), len(runs)
    )
