"""SSE on the wire (SPEC §2): frame encoding, response headers, and the reader of a run."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from aiohttp import web
from multidict import CIMultiDict

from server.runs.live import LiveRun
from server.runs.registry import RunRegistry
from server.store.db import now
from server.store.runlog import Frame

KEEPALIVE = b": keepalive\n\n"
SSE_HEADERS: Mapping[str, str] = {
    "Content-Type": "text/event-stream",
    "Cache-Control": "no-cache",
    "Connection": "keep-alive",
    "X-Accel-Buffering": "no",
}


def encode_frame(frame: Frame) -> bytes:
    """``id: N`` (when the seq is an integer), ``data: JSON`` and the blank line."""
    head = f"id: {frame.seq}\n" if frame.seq is not None else ""
    return f"{head}data: {frame.data}\n\n".encode()


async def open_sse(
    request: web.Request, status: int = 200, headers: Mapping[str, str] | None = None
) -> web.StreamResponse:
    """Send the status line and SSE headers (``headers`` add to or replace them)."""
    merged = CIMultiDict(SSE_HEADERS)
    merged.update(headers or {})  # NOTE: case-insensitive: "content-type" replaces the default.
    response = web.StreamResponse(status=status, headers=merged)
    await response.prepare(request)
    return response


class RunReader:
    """Writes a run's frames with ``seq > after`` to one response, then its live tail."""

    def __init__(
        self, registry: RunRegistry, run: LiveRun, response: web.StreamResponse, keepalive_s: float
    ) -> None:
        self.registry = registry
        self.run = run
        self.response = response
        self.keepalive_s = keepalive_s

    async def pump(self, after: int) -> None:
        """Stream until the run has ended and every frame is written; keepalives meanwhile."""
        loop = asyncio.get_running_loop()
        next_keepalive = loop.time() + self.keepalive_s
        index = 0
        self.registry.attach(self.run)
        try:
            while True:
                index = await self._write_new(index, after)
                if not self.run.running and index >= len(self.run.frames):
                    return
                if loop.time() >= next_keepalive:
                    await self.response.write(KEEPALIVE)
                    next_keepalive = loop.time() + self.keepalive_s
                    continue
                await self.run.wait_change(next_keepalive - loop.time())
        finally:
            self.registry.detach(self.run)

    async def _write_new(self, index: int, after: int) -> int:
        frames = self.run.frames
        while index < len(frames):
            frame = frames[index]
            index += 1
            if frame.seq is None or frame.seq > after:
                await self.response.write(encode_frame(frame))
                self.run.trace.sent_seqs.append(frame.seq)
        return index


async def follow_run(
    registry: RunRegistry, run: LiveRun, response: web.StreamResponse, after: int
) -> None:
    """Stream a live run to one client; a client that leaves is recorded, not an error."""
    try:
        await RunReader(registry, run, response, registry.config.keepalive_s).pump(after)
    except ConnectionError:
        run.trace.client_disconnected_at = now()
    except asyncio.CancelledError:
        run.trace.client_disconnected_at = now()
        raise


async def write_frames(response: web.StreamResponse, frames: list[Frame]) -> None:
    """Replay frames of an ended run."""
    for frame in frames:
        await response.write(encode_frame(frame))
