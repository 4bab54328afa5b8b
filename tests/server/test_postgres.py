"""On PostgreSQL, two processes racing over one run's end leave one ending, as SQLite's single
writer does: ``interrupt`` locks the run's row, and an append waits for a concurrent end.

Two pools on one real database stand for two server processes.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest

from server.store import runlog
from server.store.db import PostgresDatabase
from server.store.users import ensure_user
from tests.server.workers import new_postgres_database

KEY = "usr_a/run_x"


@pytest.fixture
async def two_processes(postgres_url: str) -> AsyncIterator[tuple[PostgresDatabase, ...]]:
    url = await new_postgres_database(postgres_url)
    pools = (PostgresDatabase(url), PostgresDatabase(url))
    for db in pools:
        await db.open()
    await pools[0].execute(
        "INSERT INTO runs (id, user_id, chat_id, message_id, user_message_id, attempt, kind,"
        " status, created_at) VALUES (?, 'usr_a', 'c', 'm', 'u', 1, 'demo', 'running', 0)",
        (KEY,),
    )
    for seq in (1, 2):
        text = f'{{"type":"text","text":"t{seq}","runId":"run_x","seq":{seq},"done":false}}'
        assert await runlog.insert_event(pools[0], KEY, seq, text) is not None
    yield pools
    for db in pools:
        await db.close()


async def endings(db: PostgresDatabase) -> list[str]:
    frames = await runlog.load_frames(db, KEY, 0)
    return [event["code"] for event in map(json.loads, (f.data for f in frames)) if event["done"]]


async def waits_for_a_lock(db: PostgresDatabase, statement: asyncio.Future[object]) -> bool:
    """Whether ``statement`` comes to wait for a lock (``False`` when it ends first)."""
    async with asyncio.timeout(5):
        while not statement.done():
            row = await db.one(
                "SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
            )
            if row is not None and row["n"] > 0:
                return True
            await asyncio.sleep(0.01)
    return False


async def test_two_processes_interrupting_one_run_log_one_ending(
    two_processes: tuple[PostgresDatabase, ...],
) -> None:
    results = await asyncio.gather(
        *(
            runlog.interrupt(db, KEY, runlog.worker_lost_event, "worker_lost")
            for db in two_processes
        )
    )
    assert sorted(result is None for result in results) == [False, True]
    assert await endings(two_processes[0]) == ["worker_lost"]
    row = await two_processes[1].one(
        "SELECT status, reason, last_seq FROM runs WHERE id = ?", (KEY,)
    )
    assert row is not None and (row["status"], row["reason"], row["last_seq"]) == (
        "interrupted",
        "worker_lost",
        3,
    )


async def test_an_append_waits_for_a_concurrent_end_and_is_refused(
    two_processes: tuple[PostgresDatabase, ...],
) -> None:
    owner, other = two_processes
    async with other.transaction():  # NOTE: the other process is ending the run right now
        await other.one(f"SELECT status FROM runs WHERE id = ?{other.for_update}", (KEY,))
        await other.execute("UPDATE runs SET status = 'interrupted' WHERE id = ?", (KEY,))
        append = asyncio.ensure_future(runlog.insert_event(owner, KEY, 3, '{"type":"text"}'))
        assert await waits_for_a_lock(owner, append), "the append went ahead of the run's end"
    assert await append is None
    assert [frame.seq for frame in await runlog.load_frames(owner, KEY, 0)] == [1, 2]


async def test_one_new_name_signed_in_by_two_processes_at_once_is_one_user(
    two_processes: tuple[PostgresDatabase, ...],
) -> None:
    ids = await asyncio.gather(*(ensure_user(db, "ana") for db in two_processes for _ in "ab"))
    assert len(set(ids)) == 1
    row = await two_processes[0].one("SELECT count(*) AS n FROM users WHERE name = 'ana'")
    assert row is not None and row["n"] == 1
