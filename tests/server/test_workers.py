"""Two server processes on one database and one Redis serve the same users' runs.

Real processes (``python -m server --redis-url …``), a real ``redis-server`` and each test twice:
on one SQLite file and on a real PostgreSQL. A run started on worker A is resumed, cancelled,
read and orphaned through worker B, and B notices when A dies.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import aiohttp
import pytest

from tests.server.helpers import JsonObject, assert_valid_run_stream
from tests.server.workers import (
    Worker,
    WorkerApi,
    fresh_postgres_database,
    read_events,
    read_rest,
    redis_server,
    start_worker,
)

pytestmark = pytest.mark.workers
LEASE_S = 1.0
FAST_STOP = ("--shutdown-grace-s", "0.5")  # NOTE: runs still held at the end stop quickly
StartWorkers = Callable[..., list[Worker]]
MakeUser = Callable[[str, Worker], Awaitable[WorkerApi]]


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with redis_server(tmp_path_factory.mktemp("redis")) as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def shared_database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The workers' new database: one SQLite file, or one PostgreSQL database."""
    if request.param == "postgresql":
        return fresh_postgres_database(request.getfixturevalue("postgres_url"))
    return str(tmp_path / "shared.db")


@pytest.fixture
def start_workers(tmp_path: Path, redis_url: str, shared_database: str) -> Iterator[StartWorkers]:
    """``start_workers("--orphan-s", "1")``: workers A and B on one new database."""
    workers: list[Worker] = []

    def start(*options: str) -> list[Worker]:
        common = ("--lease-s", str(LEASE_S), "--demo-token-ms", "20", *FAST_STOP, *options)
        for name in ("A", "B"):
            workers.append(start_worker(name, tmp_path, shared_database, redis_url, *common))
        return workers

    yield start
    for worker in workers:
        worker.stop()
    for worker in workers:
        assert worker.errors() == [], f"worker {worker.name} logged errors"


@pytest.fixture
async def make_user() -> AsyncIterator[MakeUser]:
    """``await make_user("alice", worker)``: a user logged in on ``worker`` (valid on all)."""
    sessions: list[aiohttp.ClientSession] = []

    async def make(name: str, worker: Worker) -> WorkerApi:
        session = aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))
        sessions.append(session)
        api = WorkerApi(session)
        await api.login(worker, name)
        return api

    yield make
    for session in sessions:
        await session.close()


def paced_text(count: int, pause_ms: int, end: bool = True) -> list[JsonObject]:
    """A scenario: ``count`` text events ``pause_ms`` apart, then ``done`` when ``end``."""
    steps: list[JsonObject] = []
    for index in range(count):
        steps += [{"event": {"type": "text", "text": f"w{index} "}}, {"sleep_ms": pause_ms}]
    if end:
        steps.append({"event": {"type": "done", "messageId": "m", "stopReason": "stop"}})
    return steps


def text_of(events: list[JsonObject]) -> str:
    return "".join(str(event.get("text", "")) for event in events)


async def test_a_run_started_on_a_is_resumed_on_b_with_the_whole_text_once(
    start_workers: StartWorkers, make_user: MakeUser
) -> None:
    a, b = start_workers()
    alice = await make_user("alice", a)
    chat_id = await alice.new_chat(a)
    await alice.scenario(a, paced_text(20, 50))
    on_a = await alice.stream(a, chat_id, "run_resume")
    seen = await read_events(on_a, 3)
    on_a.close()
    assert (await alice.run(b, "run_resume"))["status"] == "running"
    rest = await read_rest(await alice.resume(b, "run_resume", after=3))
    whole = seen + rest
    assert_valid_run_stream(whole, "run_resume")
    assert text_of(whole) == "".join(f"w{index} " for index in range(20))
    info_a, info_b = await alice.run(a, "run_resume"), await alice.run(b, "run_resume")
    assert info_a == info_b
    assert (info_b["status"], info_b["lastSeq"]) == ("completed", 21)


async def test_a_resume_on_b_replays_a_finished_run_from_the_log(
    start_workers: StartWorkers, make_user: MakeUser
) -> None:
    a, b = start_workers()
    alice = await make_user("alice", a)
    chat_id = await alice.new_chat(a)
    await alice.scenario(a, paced_text(5, 0))
    on_a = await read_rest(await alice.stream(a, chat_id, "run_done"))
    assert await read_rest(await alice.resume(b, "run_done", after=2)) == on_a[2:]


async def test_a_cancel_sent_to_b_stops_the_generation_on_a(
    start_workers: StartWorkers, make_user: MakeUser
) -> None:
    a, b = start_workers("--demo-token-ms", "80")
    alice = await make_user("alice", a)
    on_a = await alice.stream(a, await alice.new_chat(a), "run_stop")
    await read_events(on_a, 2)
    answer = await alice.json(b, "POST", "/api/runs/run_stop/cancel")
    assert answer == {"runId": "run_stop", "status": "cancelled"}
    trace = await alice.json(a, "GET", "/__test__/runs/run_stop")
    assert (trace["status"], trace["cancelRequested"], trace["generationStopped"]) == (
        "cancelled",
        True,
        True,
    )
    last = (await read_rest(on_a))[-1]
    assert (last["type"], last["stopReason"]) == ("done", "cancelled")
    info_a, info_b = await alice.run(a, "run_stop"), await alice.run(b, "run_stop")
    assert info_a == info_b
    assert (info_b["status"], info_b["reason"]) == ("cancelled", "user_cancelled")
    assert await alice.json(a, "POST", "/api/runs/run_stop/cancel") == answer


async def test_a_cancel_for_the_page_s_timeout_sent_to_b_is_kept_by_a(
    start_workers: StartWorkers, make_user: MakeUser
) -> None:
    a, b = start_workers("--demo-token-ms", "80")
    alice = await make_user("alice", a)
    on_a = await alice.stream(a, await alice.new_chat(a), "run_idle")
    await read_events(on_a, 2)

    body = {"reason": "idle_timeout"}
    answer = await alice.json(b, "POST", "/api/runs/run_idle/cancel", json=body)

    assert answer == {"runId": "run_idle", "status": "cancelled"}
    info_a, info_b = await alice.run(a, "run_idle"), await alice.run(b, "run_idle")
    assert info_a == info_b
    assert (info_b["status"], info_b["reason"]) == ("cancelled", "idle_timeout")


async def test_killing_a_interrupts_its_run_and_ends_the_reader_on_b(
    start_workers: StartWorkers, make_user: MakeUser
) -> None:
    a, b = start_workers()
    alice = await make_user("alice", a)
    await alice.scenario(a, [*paced_text(3, 0, end=False), {"hold": True}])
    on_a = await alice.stream(a, await alice.new_chat(a), "run_lost")
    await read_events(on_a, 3)
    on_b = await alice.resume(b, "run_lost", after=0)
    assert len(await read_events(on_b, 3)) == 3
    killed_at = time.monotonic()
    a.kill()
    async with asyncio.timeout(LEASE_S * 4):
        rest = await read_rest(on_b)
    assert time.monotonic() - killed_at < LEASE_S * 4
    assert [(e["seq"], e["type"], e["done"], e.get("code")) for e in rest] == [
        (4, "error", True, "worker_lost")
    ]
    info = await alice.run(b, "run_lost")
    assert (info["status"], info["reason"], info["lastSeq"]) == ("interrupted", "worker_lost", 4)


async def test_another_users_run_is_answered_as_an_unused_id_on_either_worker(
    start_workers: StartWorkers, make_user: MakeUser
) -> None:
    a, b = start_workers()
    alice, bob = await make_user("alice", a), await make_user("bob", b)
    await alice.scenario(a, [*paced_text(1, 0, end=False), {"hold": True}])
    on_a = await alice.stream(a, await alice.new_chat(a), "run_mine")
    await read_events(on_a, 1)
    for worker in (a, b):
        assert (await alice.run(worker, "run_mine"))["status"] == "running"
        for method, path in [
            ("GET", "/api/runs/run_mine"),
            ("GET", "/api/runs/run_mine/events"),
        ]:
            error = await bob.json(worker, method, path, expect=404)
            assert error["error"]["code"] == "run_not_found"
        # NOTE: as for an id nobody has used: an early cancel of bob's own, accepted
        cancel = await bob.json(worker, "POST", "/api/runs/run_mine/cancel")
        assert cancel == {"runId": "run_mine", "status": "running"}
    assert (await alice.run(b, "run_mine"))["status"] == "running", "bob stopped nothing"
    on_a.close()


async def test_a_reader_on_b_keeps_a_run_on_a_from_being_orphaned(
    start_workers: StartWorkers, make_user: MakeUser
) -> None:
    orphan_s = 1.0
    a, b = start_workers("--orphan-s", str(orphan_s))
    alice = await make_user("alice", a)
    await alice.scenario(a, paced_text(100, 100))
    on_a = await alice.stream(a, await alice.new_chat(a), "run_read")
    await read_events(on_a, 1)
    on_a.close()
    on_b = await alice.resume(b, "run_read", after=1)
    read_until = time.monotonic() + 3 * orphan_s
    while time.monotonic() < read_until:  # NOTE: A has no reader of its own all this time
        await read_events(on_b, 1)
        assert (await alice.run(a, "run_read"))["status"] == "running"
    on_b.close()
    left_at = time.monotonic()
    while (info := await alice.run(a, "run_read"))["status"] == "running":
        assert time.monotonic() - left_at < orphan_s + 3 * LEASE_S, "never orphaned"
        await asyncio.sleep(0.05)
    assert (info["status"], info["reason"]) == ("cancelled", "orphaned")
    assert (await alice.json(a, "GET", "/__test__/runs/run_read"))["orphaned"] is True


async def test_the_test_hooks_are_the_same_on_every_worker(
    start_workers: StartWorkers, make_user: MakeUser
) -> None:
    a, b = start_workers()
    alice = await make_user("alice", a)
    chat_id = await alice.new_chat(a)
    await alice.scenario(a, [*paced_text(2, 0, end=False), {"hold": True}])
    on_b = await alice.stream(b, chat_id, "run_hooks")  # NOTE: queued on A, played by B
    assert text_of(await read_events(on_b, 2)) == "w0 w1 "
    trace = await alice.json(a, "GET", "/__test__/runs/run_hooks")  # NOTE: B generates it
    assert (trace["runId"], trace["status"], trace["eventsLogged"]) == ("run_hooks", "running", 2)
    leftover = [{"event": {"type": "text", "text": "leftover"}}, *paced_text(0, 0)]
    await alice.scenario(b, leftover)
    assert await alice.json(a, "POST", "/__test__/reset") == {"reset": True}
    async with asyncio.timeout(5):  # NOTE: reset through A stopped the held run on B
        await read_rest(on_b)
    await alice.login(b, "alice")  # NOTE: the reset wiped the users and sessions too
    for worker in (a, b):
        missing = await alice.json(worker, "GET", "/__test__/runs/run_hooks", expect=404)
        assert missing["error"]["code"] == "run_not_found"
    after = await read_rest(await alice.stream(b, await alice.new_chat(b), "run_after"))
    assert_valid_run_stream(after, "run_after")
    assert "leftover" not in text_of(after)  # NOTE: the reset forgot what was queued on B
