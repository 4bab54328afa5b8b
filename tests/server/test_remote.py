"""The reader of a run generated elsewhere: each frame once, in log order, whatever the tail.

A scripted tail (each read returns the next batch, after logging what the batch says the owner
logged meanwhile) stands in for Redis; the log is a real SQLite database.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import time
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pytest

from app.wire.api import ServerRunStatus
from server.config import Config
from server.runs.bus import Ended, LocalBus, Logged, TailEntry
from server.runs.redis_bus import RedisBus
from server.runs.registry import RunRegistry
from server.runs.remote import RemoteReader, watch_owners
from server.store import runlog
from server.store.db import SqliteDatabase
from server.store.runlog import Frame
from tests.server.conftest import MakeApi, StartServer, logged_events, services_of, wait_stopped
from tests.server.helpers import events_of, read_events

KEY = "usr_a/run_x"
T = TypeVar("T")


def at_once(call: Coroutine[Any, Any, T]) -> T:
    """A SQLite call run to its end now: they never suspend (server/store/db.py), so the owner, a
    stand-in for another process, writes between a reader's steps as a scripted batch says."""
    try:
        call.send(None)
    except StopIteration as done:
        result: T = done.value
        return result
    raise AssertionError("a SQLite call suspended")


Batch = Callable[["Owner"], list[TailEntry]]


@dataclass
class Owner:
    """The process generating the run: logs frames (the log always has a frame first)."""

    db: SqliteDatabase
    rows: dict[int, int] = field(default_factory=dict)  # seq -> row id

    def log(self, seq: int) -> Logged:
        data = f'{{"type":"text","text":"t{seq}","runId":"run_x","seq":{seq},"done":false}}'
        row = at_once(runlog.insert_event(self.db, KEY, seq, data))
        assert row is not None
        self.rows[seq] = row
        return Logged(row, self.rows.get(seq - 1, 0), Frame(seq, data))

    def end(self) -> Ended:
        at_once(self.db.execute("UPDATE runs SET status = 'completed' WHERE id = ?", (KEY,)))
        return Ended("completed")


class ScriptedTail(LocalBus):
    """A tail whose reads return scripted batches, then nothing."""

    def __init__(self, owner: Owner, batches: list[Batch]) -> None:
        self.owner = owner
        self.batches = batches

    @property
    def spans_processes(self) -> bool:
        return True

    async def read_tail(
        self, key: str, position: str, block_s: float
    ) -> tuple[str, list[TailEntry]]:
        return position, self.batches.pop(0)(self.owner) if self.batches else []


@dataclass
class Written:
    data: bytes = b""

    async def write(self, data: bytes) -> None:
        self.data += data


@pytest.fixture
def owner() -> Iterator[Owner]:
    db = SqliteDatabase(":memory:")
    at_once(
        db.execute(
            "INSERT INTO runs (id, user_id, chat_id, message_id, user_message_id, attempt, kind,"
            " status, created_at) VALUES (?, 'usr_a', 'c', 'm', 'u', 1, 'demo', 'running', 0)",
            (KEY,),
        )
    )
    yield Owner(db)
    at_once(db.close())


async def read(owner: Owner, batches: list[Batch], after: int = 0) -> list[int]:
    written = Written()
    await RemoteReader(owner.db, ScriptedTail(owner, batches), KEY, written, after).pump(30.0)
    return [event["seq"] for event in events_of(written.data)]


def logged_before(owner: Owner, seqs: range) -> None:
    for seq in seqs:
        owner.log(seq)


async def test_frames_in_both_the_log_and_the_tail_are_written_once(owner: Owner) -> None:
    logged_before(owner, range(1, 4))
    repeats = [Logged(owner.rows[s], owner.rows.get(s - 1, 0), Frame(s, "{}")) for s in (2, 3)]
    batches: list[Batch] = [lambda o: [*repeats, o.log(4)], lambda o: [o.log(5), o.end()]]
    assert await read(owner, batches) == [1, 2, 3, 4, 5]


async def test_a_frame_missing_from_the_tail_is_read_from_the_log(owner: Owner) -> None:
    logged_before(owner, range(1, 2))

    def trimmed(o: Owner) -> list[TailEntry]:
        o.log(2)  # NOTE: logged, but its tail entry is gone
        return [o.log(3)]

    assert await read(owner, [trimmed, lambda o: [o.end()]]) == [1, 2, 3]


async def test_only_frames_after_the_last_event_id_are_written(owner: Owner) -> None:
    logged_before(owner, range(1, 4))
    assert await read(owner, [lambda o: [o.log(4), o.end()]], after=2) == [3, 4]


async def test_a_run_ended_between_reads_ends_with_the_rest_of_its_log(owner: Owner) -> None:
    logged_before(owner, range(1, 3))

    def ended_silently(o: Owner) -> list[TailEntry]:
        o.log(3)
        o.end()
        return []  # NOTE: the tail lost the last frame and the end (an owner gone, a watcher)

    assert await read(owner, [lambda o: [], ended_silently]) == [1, 2, 3]


@pytest.mark.parametrize("status", ["completed", "cancelled", "interrupted"])
async def test_a_finished_run_is_read_from_its_log_alone(
    owner: Owner, status: ServerRunStatus
) -> None:
    logged_before(owner, range(1, 3))
    await owner.db.execute("UPDATE runs SET status = ? WHERE id = ?", (status, KEY))
    assert await read(owner, []) == [1, 2]


class Leases(LocalBus):
    """Leases held at the checks marked ``True``; ``checked`` is set after the last one."""

    def __init__(self, held: list[bool]) -> None:
        self.held = held
        self.checked = asyncio.Event()

    @property
    def spans_processes(self) -> bool:
        return True

    async def owner_alive(self, key: str) -> bool:
        alive = self.held.pop(0)
        if not self.held:
            self.checked.set()
        return alive


async def watched(owner: Owner, held: list[bool]) -> str:
    """The run's status after the watcher checked its lease once per value of ``held``."""
    leases = Leases(held)
    registry = RunRegistry(owner.db, Config(), leases)
    watcher = asyncio.ensure_future(watch_owners(registry, lease_s=0.002))
    with contextlib.suppress(TimeoutError):  # NOTE: a run that ended is no longer checked
        async with asyncio.timeout(2.0):
            await leases.checked.wait()  # NOTE: the watcher acts on it before it yields
    watcher.cancel()
    row = await owner.db.one("SELECT status, reason FROM runs WHERE id = ?", (KEY,))
    assert row is not None
    return f"{row['status']} {row['reason']}"


async def test_a_run_whose_lease_is_gone_twice_in_a_row_is_interrupted(owner: Owner) -> None:
    logged_before(owner, range(1, 3))
    assert await watched(owner, [True, False, False]) == "interrupted worker_lost"
    last = json.loads((await runlog.load_frames(owner.db, KEY, 0))[-1].data)
    assert (last["seq"], last["type"], last["code"], last["done"]) == (
        3,
        "error",
        "worker_lost",
        True,
    )


async def test_a_lease_missing_at_one_check_only_leaves_the_run_going(owner: Owner) -> None:
    assert await watched(owner, [False, True, False, True, False, True]) == "running None"


@pytest.mark.one_process
async def test_a_run_another_process_took_for_lost_stops_here_with_its_ending(
    start_server: StartServer, make_api: MakeApi
) -> None:
    server = await start_server(demo_token_ms=30.0)
    api = await make_api("alice", on=server)
    response = await api.stream(await api.new_chat(), "a long answer", runId="run_taken")
    seen = await read_events(response, 2)
    svc = services_of(server)
    key = next(key for key in svc.runs.live if key.endswith("/run_taken"))
    # NOTE: as another process does when this one's lease expired (a stalled event loop)
    assert await runlog.interrupt(svc.db, key, runlog.worker_lost_event, "worker_lost") is not None
    events = seen + events_of(await response.read())
    await wait_stopped(server, "run_taken")
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert (events[-1]["type"], events[-1]["code"]) == ("error", "worker_lost")
    assert await logged_events(server, "run_taken") == events
    info = await api.run("run_taken")
    assert (info["status"], info["reason"], info["lastSeq"]) == (
        "interrupted",
        "worker_lost",
        len(events),
    )
    assert (await api.trace("run_taken"))["appendsRefused"] == 1


async def test_a_redis_that_cannot_answer_neither_interrupts_nor_orphans_a_run() -> None:
    with socket.socket() as sock:  # NOTE: a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    bus = RedisBus(f"redis://127.0.0.1:{port}/0", lease_s=1.0, retention_s=60.0)
    try:
        assert await bus.owner_alive(KEY) is True
        read_at = await bus.last_read_at(KEY)
        assert read_at is not None and abs(read_at - time.time()) < 5.0
    finally:
        await bus.redis.aclose()
