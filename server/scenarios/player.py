"""Plays a test scenario (SPEC §9) as a run: the whole response, nothing added.

The player is the run's generation task; it hands bytes to a ``Channel`` that the HTTP handler
drains into the response. After ``detach``/``close`` or a client disconnect, the remaining
steps still run: event steps go to the run's log only.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from app.wire.api import ServerRunStatus
from server.contract.jsonio import dumps
from server.runs.live import LiveRun, terminal_status
from server.runs.registry import RunRegistry
from server.runs.stream import KEEPALIVE, encode_frame, open_sse
from server.scenarios.steps import (
    CloseMode,
    CloseStep,
    DetachStep,
    EventStep,
    HoldStep,
    KeepaliveStep,
    RawB64Step,
    RawStep,
    SleepStep,
    StatusStep,
    Step,
)
from server.store.db import Database, now
from server.turns.start import Turn, create_rows

YIELD_EVERY_S = 0.005


@dataclass(frozen=True, slots=True)
class Write:
    """Bytes for the response; ``event`` marks an event frame with its seq."""

    data: bytes
    event: bool = False
    seq: int | None = None


@dataclass(frozen=True, slots=True)
class Close:
    """End the response: ``clean`` (normal end) or ``reset`` (abort the TCP connection)."""

    mode: CloseMode


class Channel:
    """The link from the player to the HTTP response while the client is connected."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[Write | Close] = asyncio.Queue()
        self.connected = True
        self.disconnected = asyncio.Event()

    def send(self, item: Write | Close) -> None:
        if self.connected:
            self.queue.put_nowait(item)
        if isinstance(item, Close):
            self.connected = False

    def lose(self) -> None:
        """The client went away (or the response ended)."""
        self.connected = False
        self.disconnected.set()


class ScenarioPlayer:
    """Plays steps for one run, logging event steps through the registry."""

    def __init__(self, registry: RunRegistry, run: LiveRun, channel: Channel) -> None:
        self.registry = registry
        self.run = run
        self.channel = channel
        self.last_seq = 0
        self.status: ServerRunStatus | None = None
        self.last_yield = time.monotonic()

    async def play(self, steps: list[Step]) -> ServerRunStatus | None:
        """Every step in order; the run's status is its first terminal event's, if any."""
        try:
            for step in steps:
                await self._step(step)
                await self._breathe()
        finally:
            self.channel.send(Close("clean"))
        return self.status

    async def _breathe(self) -> None:
        # NOTE: event steps never await; yield every few ms so the response (and other
        # requests, such as a cancel) run while a long scenario plays.
        if time.monotonic() - self.last_yield >= YIELD_EVERY_S:
            await asyncio.sleep(0)
            self.last_yield = time.monotonic()

    async def _step(self, step: Step) -> None:
        match step:
            case EventStep(event=event):
                await self._event(event)
            case RawStep() | RawB64Step():
                self.channel.send(Write(step.data))
            case KeepaliveStep():
                self.channel.send(Write(KEEPALIVE))
            case SleepStep(sleep_ms=ms):
                await asyncio.sleep(ms / 1000)
            case HoldStep():
                await self.channel.disconnected.wait()
            case DetachStep():
                self.channel.send(Close("clean"))
            case CloseStep(close=mode):
                self.channel.send(Close(mode))

    async def _event(self, given: dict[str, Any]) -> None:
        payload = dict(given)
        payload.setdefault("runId", self.run.run_id)
        if "seq" not in payload:
            payload["seq"] = self.last_seq + 1
        seq = payload["seq"] if type(payload["seq"]) is int else None
        self.last_seq = seq if seq is not None else self.last_seq + 1
        payload.setdefault("done", payload.get("type") in ("done", "error"))
        frame = await self.registry.append(self.run, seq, dumps(payload))
        if frame is not None:
            self.channel.send(Write(encode_frame(frame), event=True, seq=seq))
        if self.status is None:
            self.status = terminal_status(payload)


async def stream_scenario(
    request: web.Request, db: Database, runs: RunRegistry, turn: Turn, steps: list[Step]
) -> web.StreamResponse:
    """Play ``steps`` as the response of a checked turn: the whole response, nothing added."""
    status, headers = 200, {}
    if steps and isinstance(steps[0], StatusStep):
        first, steps = steps[0], steps[1:]
        status, headers = first.status, first.headers
        if first.has_json or status >= 400:
            return _status_answer(first)
    turn = dataclasses.replace(turn, meta=dataclasses.replace(turn.meta, kind="scenario"))
    await create_rows(db, turn)
    run, channel = runs.register(turn.meta), Channel()
    runs.start(run, ScenarioPlayer(runs, run, channel).play(steps))
    response = await open_sse(request, status, headers)
    await _drain(request, runs, run, channel, response)
    return response


def _status_answer(answer: StatusStep) -> web.Response:
    if answer.has_json:
        return web.Response(
            status=answer.status,
            text=dumps(answer.json_body),
            headers=answer.headers,
            content_type="application/json",
        )
    return web.Response(status=answer.status, headers=answer.headers)


async def _drain(
    request: web.Request,
    runs: RunRegistry,
    run: LiveRun,
    channel: Channel,
    response: web.StreamResponse,
) -> None:
    runs.attach(run)
    try:
        while True:
            item = await channel.queue.get()
            if isinstance(item, Close):
                if item.mode == "reset" and request.transport is not None:
                    request.transport.abort()
                return
            await response.write(item.data)
            if item.event:
                run.trace.sent_seqs.append(item.seq)
    except ConnectionError:
        _client_left(run, channel)
    except asyncio.CancelledError:
        _client_left(run, channel)
        raise
    finally:
        channel.lose()
        runs.detach(run)


def _client_left(run: LiveRun, channel: Channel) -> None:
    if run.trace.client_disconnected_at is None and not channel.disconnected.is_set():
        run.trace.client_disconnected_at = now()
