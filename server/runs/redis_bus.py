"""The runs' link between server processes over Redis (``--redis-url``).

Keys (``K`` is a run's key, ``user_id/run_id``, see :func:`server.store.runlog.run_key`):

- ``riacho:run:K:tail`` — a stream: one entry per logged frame (``row``, ``prev``, ``seq``,
  ``data``) then one ``end`` entry; capped with ``MAXLEN ~`` and expiring with the event log
  (``--retention-s``) after its last write.
- ``riacho:run:K:owner`` — the lease: the owner's worker id, ``SET … PX lease``, renewed every
  third of the lease while the run is generated.
- ``riacho:run:K:readers`` — a sorted set: one member per reader in another process, scored with
  the wall time (ms) its reading is good until (renewed while it reads; the time it left after).
- ``riacho:cancel`` — a pub/sub channel of ``{"userId", "runId"}`` cancels.

# NOTE: writes are queued and sent in order by one task, batched in a pipeline: logging an event
# never waits for Redis, and a Redis that stops answering delays tails, not generation.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from redis.asyncio import Redis
from redis.asyncio.client import Pipeline
from redis.exceptions import RedisError
from redis.typing import EncodableT, FieldT

from app.wire.api import CancelBody, ServerRunStatus
from app.wire.codes import ClientTimeoutCode
from server.runs.bus import TAIL_START, CancelHandler, Ended, Logged, TailEntry
from server.store.db import new_id
from server.store.runlog import Frame

log = logging.getLogger("riacho.redis")
PREFIX = "riacho"
CANCEL_CHANNEL = f"{PREFIX}:cancel"


class CancelMessage(CancelBody):
    """A cancel on :data:`CANCEL_CHANNEL`: whose run, and the page's reason (if any)."""

    user_id: str
    run_id: str


TAIL_MAXLEN = 10_000
TAIL_BATCH = 500
Command = Callable[[Pipeline], None]
Fields = dict[FieldT, EncodableT]


def tail_key(key: str) -> str:
    return f"{PREFIX}:run:{key}:tail"


def owner_key(key: str) -> str:
    return f"{PREFIX}:run:{key}:owner"


def readers_key(key: str) -> str:
    return f"{PREFIX}:run:{key}:readers"


class RedisBus:
    """Leases, tails, readers and cancels of runs shared through one Redis."""

    def __init__(self, url: str, lease_s: float, retention_s: float) -> None:
        self.redis: Redis = Redis.from_url(url, decode_responses=True)
        self.worker_id = new_id("wkr")
        self.lease_s = lease_s
        self.retention_s = max(1, int(retention_s))
        self._owned: set[str] = set()
        self._commands: asyncio.Queue[Command] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def spans_processes(self) -> bool:
        return True

    async def start(self, on_cancel: CancelHandler) -> None:
        await self.redis.ping()  # NOTE: a wrong --redis-url stops the start, not a later run
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._send_commands()),
            loop.create_task(self._renew_leases()),
            loop.create_task(self._listen_for_cancels(on_cancel)),
        ]

    async def aclose(self) -> None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(2.0):
                await self._commands.join()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.redis.aclose()

    # --- the owner's writes -------------------------------------------------------------------

    def claim(self, key: str) -> None:
        self._owned.add(key)
        self._commands.put_nowait(lambda pipe: self._set_lease(pipe, key))

    def publish(self, key: str, entry: Logged) -> None:
        fields: Fields = {
            "row": entry.row,
            "prev": entry.prev,
            "seq": "" if entry.frame.seq is None else entry.frame.seq,
            "data": entry.frame.data,
        }
        self._commands.put_nowait(lambda pipe: self._append(pipe, key, fields))

    def release(self, key: str, status: ServerRunStatus) -> None:
        self._owned.discard(key)

        def end(pipe: Pipeline) -> None:
            self._append(pipe, key, {"end": status})
            pipe.delete(owner_key(key))

        self._commands.put_nowait(end)

    def request_cancel(
        self, user_id: str, run_id: str, reason: ClientTimeoutCode | None = None
    ) -> None:
        message = json.dumps({"userId": user_id, "runId": run_id, "reason": reason})

        def send(pipe: Pipeline) -> None:
            pipe.publish(CANCEL_CHANNEL, message)

        self._commands.put_nowait(send)

    def _append(self, pipe: Pipeline, key: str, fields: Fields) -> None:
        pipe.xadd(tail_key(key), fields, maxlen=TAIL_MAXLEN, approximate=True)
        pipe.expire(tail_key(key), self.retention_s)

    def _set_lease(self, pipe: Pipeline, key: str) -> None:
        pipe.set(owner_key(key), self.worker_id, px=int(self.lease_s * 1000))

    async def _send_commands(self) -> None:
        while True:
            batch = [await self._commands.get()]
            while not self._commands.empty():
                batch.append(self._commands.get_nowait())
            try:
                await self._send(batch)
            finally:
                for _ in batch:
                    self._commands.task_done()

    async def _send(self, batch: list[Command]) -> None:
        pipe = self.redis.pipeline(transaction=False)
        for command in batch:
            command(pipe)
        try:
            await pipe.execute()
        except RedisError:
            log.warning("redis: %d writes lost", len(batch), exc_info=True)

    async def _renew_leases(self) -> None:
        """Renew the lease of every run this process generates, every third of the lease."""
        while True:
            await asyncio.sleep(self.lease_s / 3)

            def renew(pipe: Pipeline) -> None:
                for key in self._owned:  # NOTE: read when sent: a released run is not renewed
                    self._set_lease(pipe, key)

            self._commands.put_nowait(renew)

    # --- cancels -------------------------------------------------------------------------------

    async def _listen_for_cancels(self, on_cancel: CancelHandler) -> None:
        while True:
            try:
                await self._listen(on_cancel)
            except RedisError:
                log.warning("redis: cancel channel lost; listening again", exc_info=True)
                await asyncio.sleep(1.0)

    async def _listen(self, on_cancel: CancelHandler) -> None:
        async with self.redis.pubsub(ignore_subscribe_messages=True) as pubsub:
            await pubsub.subscribe(CANCEL_CHANNEL)
            while True:
                message = await pubsub.get_message(timeout=1.0)
                if message is not None and message.get("type") == "message":
                    cancel = CancelMessage.model_validate_json(message["data"])
                    on_cancel(cancel.user_id, cancel.run_id, cancel.reason)

    # --- readers elsewhere -----------------------------------------------------------------------

    async def owner_alive(self, key: str) -> bool:
        try:
            return bool(await self.redis.exists(owner_key(key)))
        except RedisError:  # NOTE: unknown is not gone: no run is interrupted for it
            log.warning("redis: cannot check the lease of run %s", key, exc_info=True)
            return True

    async def last_read_at(self, key: str) -> float | None:
        try:
            latest = await self.redis.zrange(readers_key(key), -1, -1, withscores=True)
        except RedisError:  # NOTE: unknown is not unread: no run is orphaned for it
            log.warning("redis: cannot check the readers of run %s", key, exc_info=True)
            return time.time()
        return float(latest[0][1]) / 1000 if latest else None

    def reading(self, key: str) -> AbstractAsyncContextManager[None]:
        return self._reading(key)

    @asynccontextmanager
    async def _reading(self, key: str) -> AsyncIterator[None]:
        reader = new_id("rdr")
        await self._mark_read(key, reader, time.time() + self.lease_s)
        renewer = asyncio.get_running_loop().create_task(self._renew_reading(key, reader))
        try:
            yield
        finally:
            renewer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewer
            await asyncio.shield(self._mark_read(key, reader, time.time()))

    async def _renew_reading(self, key: str, reader: str) -> None:
        while True:
            await asyncio.sleep(self.lease_s / 3)
            await self._mark_read(key, reader, time.time() + self.lease_s)

    async def _mark_read(self, key: str, reader: str, until: float) -> None:
        pipe = self.redis.pipeline(transaction=False)
        pipe.zadd(readers_key(key), {reader: int(until * 1000)})
        pipe.expire(readers_key(key), self.retention_s)
        await pipe.execute()

    # --- the tail ------------------------------------------------------------------------------

    async def tail_position(self, key: str) -> str:
        latest = await self.redis.xrevrange(tail_key(key), count=1)
        return str(latest[0][0]) if latest else TAIL_START

    async def read_tail(
        self, key: str, position: str, block_s: float
    ) -> tuple[str, list[TailEntry]]:
        block_ms = max(1, int(block_s * 1000))
        answer = await self.redis.xread({tail_key(key): position}, count=TAIL_BATCH, block=block_ms)
        entries: list[TailEntry] = []
        for _stream, items in answer or []:
            for entry_id, fields in items:
                position = str(entry_id)
                entries.append(_tail_entry(fields))
        return position, entries


def _tail_entry(fields: dict[str, str]) -> TailEntry:
    if "end" in fields:
        status: ServerRunStatus = fields["end"]  # type: ignore[assignment]
        return Ended(status)
    seq = int(fields["seq"]) if fields["seq"] else None
    return Logged(int(fields["row"]), int(fields["prev"]), Frame(seq, fields["data"]))
