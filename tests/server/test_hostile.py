"""Black-box: hostile clients and faults, as an attacker or an operator would try them."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import resource
import signal
import sqlite3
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import ClientSession, DummyCookieJar
from aiohttp.test_utils import TestClient, TestServer
from multidict import CIMultiDict

from server.http.auth import COOKIE_NAME
from server.http.passwords import hash_password
from server.store.db import SqliteDatabase
from server.store.users import ensure_user
from tests.server.conftest import (
    MakeApi,
    StartServer,
    logged_events,
    services_of,
    wait_stopped,
)
from tests.server.helpers import Api, events_of, read_events
from tests.server.test_limits import PASSWORD, password_server
from tests.server.workers import free_port
from tests.tmpfs import fill, mounted_tmpfs

FLOODERS = 16


async def _client(server: TestServer) -> TestClient[Any, Any]:
    client: TestClient[Any, Any] = TestClient(server)
    await client.start_server()
    return client


async def _timed(client: TestClient[Any, Any], method: str, path: str, **kw: Any) -> float:
    started = time.perf_counter()
    response = await client.request(method, path, **kw)
    await response.read()
    return time.perf_counter() - started


async def _flood(client: TestClient[Any, Any], stop: asyncio.Event, took: list[float]) -> None:
    wrong = {"name": "bo", "password": "not it"}
    while not stop.is_set():
        took.append(await _timed(client, "POST", "/api/session/sign-in", json=wrong))


async def test_a_sign_in_flood_does_not_stall_another_user(start_server: StartServer) -> None:
    """16 clients post wrong passwords (throttling set out of the way, so every one is hashed)
    while a signed-in user lists chats: the user's requests stay a small fraction of a flood
    attempt's time (on the event loop, each of the user's requests waited for the hashes)."""
    server = await password_server(
        start_server, free_attempts_per_account=10**6, free_attempts_per_client=10**6
    )
    user = await _client(server)
    flooders = [await _client(server) for _ in range(FLOODERS)]
    try:
        signed = await user.post("/api/session/sign-in", json={"name": "ana", "password": PASSWORD})
        assert signed.status == 200
        stop, flood_took = asyncio.Event(), list[float]()
        tasks = [asyncio.create_task(_flood(c, stop, flood_took)) for c in flooders]
        while len(flood_took) < FLOODERS:  # NOTE: the flood is under way
            await asyncio.sleep(0.01)
        user_took = [await _timed(user, "GET", "/api/chats") for _ in range(20)]
        flooding = len(flood_took)
        stop.set()
        await asyncio.gather(*tasks)
        assert len(flood_took) > flooding, "the flood was still running meanwhile"
        ratio = statistics.median(user_took) / statistics.median(flood_took)
        assert ratio < 0.2, f"user median {statistics.median(user_took):.4f} s (ratio {ratio:.2f})"
    finally:
        for client in (user, *flooders):
            await client.close()


# --- Host: DNS rebinding ----------------------------------------------------------------------


async def test_a_rebinding_host_is_refused_before_any_route(start_server: StartServer) -> None:
    """A page whose name was rebound to 127.0.0.1 sends its own name as Host and Origin:
    neither the session, nor a chat, nor the page files answer it, and no user is made."""
    server = await start_server(test_hooks=False)
    client = await _client(server)
    port = server.port
    evil = {"Host": f"rebind.evil.example:{port}", "Origin": f"http://rebind.evil.example:{port}"}
    try:
        for method, path in (("GET", "/api/session"), ("POST", "/api/chats"), ("GET", "/")):
            response = await client.request(method, path, headers=evil, json={})
            body = await response.json()
            assert (response.status, body["error"]["code"]) == (421, "host_refused"), path
        users = await services_of(server).db.all("SELECT id FROM users")
        assert users == []
    finally:
        await client.close()


@pytest.mark.parametrize(
    "host",
    [
        pytest.param("127.0.0.1:{port}", id="ip"),
        pytest.param("localhost:{port}", id="localhost"),
        pytest.param("LOCALHOST.:{port}", id="case-and-trailing-dot"),
        pytest.param("[::1]:{port}", id="ipv6"),
        pytest.param("chat.example.org", id="public-url"),
    ],
)
async def test_the_servers_own_names_are_answered(start_server: StartServer, host: str) -> None:
    server = await start_server(public_urls=("https://chat.example.org",))
    client = await _client(server)
    try:
        response = await client.get("/api/session", headers={"Host": host.format(port=server.port)})
        assert response.status == 200
    finally:
        await client.close()


# --- sessions: hashed, ended everywhere, Secure behind TLS ------------------------------------


async def test_the_database_holds_no_session_token(start_server: StartServer) -> None:
    server = await password_server(start_server)
    client = await _client(server)
    try:
        signed = await client.post(
            "/api/session/sign-in", json={"name": "ana", "password": PASSWORD}
        )
        token = signed.cookies[COOKIE_NAME].value
        rows = await services_of(server).db.all("SELECT token_hash FROM sessions")
        assert [row["token_hash"] for row in rows] == [hashlib.sha256(token.encode()).hexdigest()]
        assert (await client.get("/api/chats")).status == 200
    finally:
        await client.close()


def _form(name: str) -> dict[str, str]:
    return {"name": name, "password": PASSWORD}


async def _status_of(server: TestServer, token: str) -> int:
    async with ClientSession(cookie_jar=DummyCookieJar()) as bare:
        response = await bare.get(
            server.make_url("/api/chats"), headers={"Cookie": f"{COOKIE_NAME}={token}"}
        )
        return response.status


async def test_sign_out_everywhere_ends_every_session_of_the_user(
    start_server: StartServer,
) -> None:
    server = await password_server(start_server)
    clients = [await _client(server) for _ in range(3)]
    try:
        tokens = []
        for client, name in zip(clients, ("ana", "ana", "bo"), strict=True):
            signed = await client.post(
                "/api/session/sign-in", json={"name": name, "password": PASSWORD}
            )
            tokens.append(signed.cookies[COOKIE_NAME].value)
        ended = await clients[0].post("/api/session/sign-out-everywhere")
        assert ended.status == 204
        assert [await _status_of(server, token) for token in tokens] == [401, 401, 200]
    finally:
        for client in clients:
            await client.close()


@pytest.mark.parametrize(
    ("host", "secure"),
    [
        pytest.param("chat.example.org", True, id="reached-by-its-https-public-url"),
        pytest.param("127.0.0.1", False, id="reached-over-plain-http"),
    ],
)
async def test_the_cookie_is_secure_behind_a_tls_proxy(
    start_server: StartServer, host: str, secure: bool
) -> None:
    server = await start_server(auth="password", public_urls=("https://chat.example.org",))
    await ensure_user(services_of(server).db, "ana", hash_password(PASSWORD))
    client = await _client(server)
    try:
        signed = await client.post(
            "/api/session/sign-in",
            json={"name": "ana", "password": PASSWORD},
            headers={"Host": host},
        )
        assert signed.status == 200
        assert bool(signed.cookies[COOKIE_NAME]["secure"]) is secure
    finally:
        await client.close()


# --- storage failures -------------------------------------------------------------------------


def _sqlite(server: TestServer) -> sqlite3.Connection:
    db = services_of(server).db
    assert isinstance(db, SqliteDatabase)
    return db.conn


def _disk_full(server: TestServer, full: bool) -> None:
    """SQLite's own full disk: no page may be added to the file (SQLITE_FULL)."""
    conn = _sqlite(server)
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages if full else 2**30}")


@pytest.mark.sqlite_only
async def test_a_full_disk_answers_503_and_sends_work_again_once_space_returns(
    api: Api, server: TestServer
) -> None:
    chat_id = await api.new_chat("kept")
    before = await api.json("GET", "/api/chats")
    _disk_full(server, True)
    big = "x" * 200_000  # NOTE: more than the pages left: the send must add pages
    refused = await api.stream(chat_id, big)
    body = await refused.json()
    assert (refused.status, body["error"]["code"]) == (503, "storage_unavailable")
    assert refused.headers["Retry-After"] == "10"
    assert await api.json("GET", "/api/chats") == before, "nothing lost, nothing half-written"
    _disk_full(server, False)
    events = await api.run_turn(chat_id, big)
    assert events[-1]["type"] == "done"


@pytest.mark.sqlite_only
async def test_storage_failing_mid_answer_ends_it_with_storage_unavailable(
    api: Api, server: TestServer
) -> None:
    await api.scenario([{"event": {"type": "text-delta", "delta": "a"}}, {"hold": True}])
    stream = await api.stream(await api.new_chat(), runId="run_ro")
    first = await read_events(stream, 1)
    reader = await api.client.get("/api/runs/run_ro/events?after=1")  # NOTE: the live tail
    assert reader.status == 200
    _sqlite(server).execute("PRAGMA query_only = ON")  # NOTE: read-only from here on
    try:
        cancel = await api.client.post("/api/runs/run_ro/cancel")  # NOTE: its end cannot be kept
        assert cancel.status in (200, 503)
        events = events_of(await reader.read())
        assert events[-1]["type"] == "error" and events[-1]["code"] == "storage_unavailable"
        assert events[-1]["seq"] == first[0]["seq"] + 1 and events[-1]["done"] is True
    finally:
        _sqlite(server).execute("PRAGMA query_only = OFF")
    await wait_stopped(server, "run_ro")
    stream.close()
    assert [e["seq"] for e in await logged_events(server, "run_ro")] == [1], "nothing lost"
    assert (await api.run("run_ro"))["status"] == "running", "never marked what it is not"


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 4 MB tmpfs of its own (root only: skipped elsewhere)."""
    mount = tmp_path / "tmpfs"
    mount.mkdir()
    with mounted_tmpfs(mount):
        yield mount


@pytest.mark.sqlite_only
@pytest.mark.one_process
async def test_a_filled_tmpfs_answers_503_then_works_once_space_returns(
    start_server: StartServer, make_api: MakeApi, tmpfs: Path
) -> None:
    server = await start_server(db_path=str(tmpfs / "riacho.db"))
    api = await make_api("alice", on=server)
    chat_id = await api.new_chat("kept")
    assert (await api.run_turn(chat_id, "before"))[-1]["type"] == "done"
    filler = fill(tmpfs)
    refused = await api.stream(chat_id, "y" * 200_000)
    body = await refused.json()
    assert (refused.status, body["error"]["code"]) == (503, "storage_unavailable")
    assert "Retry-After" in refused.headers
    filler.unlink()
    assert (await api.run_turn(chat_id, "after"))[-1]["type"] == "done"
    chat = await api.json("GET", f"/api/chats/{chat_id}")
    assert "before" in json.dumps(chat) and "after" in json.dumps(chat), "nothing was lost"


# --- slow clients against a descriptor limit ----------------------------------------------------

DRIBBLERS = 300
FD_LIMIT = 256
REPO = Path(__file__).resolve().parents[2]


def _limit_descriptors() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (FD_LIMIT, FD_LIMIT))


async def _dribbler(port: int) -> str:
    """Open a request and send its headers a byte per second; how it ended."""
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        return "refused"
    writer.write(f"GET /api/session HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Slow: ".encode())
    try:
        while True:
            writer.write(b"a")
            await writer.drain()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(1.0):
                    if await reader.read(1024) == b"":
                        return "cut"
    except ConnectionError:
        return "cut"
    finally:
        writer.close()


@pytest.mark.sqlite_only
async def test_dribbling_clients_on_the_users_address_do_not_starve_a_real_user(
    tmp_path: Path,
) -> None:
    """300 clients on loopback dribble their headers to a server limited to 256 descriptors:
    each is cut at the header deadline, and a real user's request is answered meanwhile."""
    port = free_port()
    server = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "server",
        *("--port", str(port), "--db", str(tmp_path / "r.db"), "--header-deadline-s", "2"),
        cwd=REPO,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        preexec_fn=_limit_descriptors,
    )
    try:
        assert server.stdout is not None
        assert b"running on" in await asyncio.wait_for(server.stdout.readline(), 30)
        dribblers = [asyncio.create_task(_dribbler(port)) for _ in range(DRIBBLERS)]
        await asyncio.sleep(0.5)  # NOTE: let them take the descriptors first
        async with aiohttp.ClientSession() as user:
            answer = await user.get(
                f"http://127.0.0.1:{port}/api/session",
                timeout=aiohttp.ClientTimeout(total=60),
            )
            assert answer.status == 200
        endings = await asyncio.wait_for(asyncio.gather(*dribblers), 60)
        assert set(endings) <= {"cut", "refused"} and endings.count("cut") >= FD_LIMIT // 2
    finally:
        server.send_signal(signal.SIGINT)
        await asyncio.wait_for(server.wait(), 20)


# --- proxy auth -------------------------------------------------------------------------------

USER_HEADER = "X-Forwarded-User"


@pytest.mark.parametrize(
    ("proxies", "status"),
    [
        pytest.param(("127.0.0.1",), 200, id="from-the-trusted-proxy"),
        pytest.param(("127.0.0.0/8",), 200, id="from-a-trusted-network"),
        pytest.param(("10.9.9.9",), 401, id="from-anyone-else-the-header-is-ignored"),
    ],
)
async def test_the_user_header_counts_only_from_a_trusted_proxy(
    start_server: StartServer, proxies: tuple[str, ...], status: int
) -> None:
    server = await start_server(
        auth="proxy", trusted_user_header=USER_HEADER, trusted_proxies=proxies
    )
    client = await _client(server)
    try:
        response = await client.get("/api/chats", headers={USER_HEADER: "ana"})
        assert response.status == status
    finally:
        await client.close()


async def test_a_repeated_user_header_is_refused(start_server: StartServer) -> None:
    server = await start_server(auth="proxy", trusted_user_header=USER_HEADER)
    client = await _client(server)
    try:
        twice = CIMultiDict([(USER_HEADER, "ana"), (USER_HEADER, "root")])
        response = await client.get("/api/chats", headers=twice)
        body = await response.json()
        assert (response.status, body["error"]["code"]) == (400, "invalid_header")
    finally:
        await client.close()
