"""Black-box: hostile clients and faults, as an attacker or an operator would try them."""

from __future__ import annotations

import asyncio
import hashlib
import statistics
import time
from typing import Any

import pytest
from aiohttp import ClientSession, DummyCookieJar
from aiohttp.test_utils import TestClient, TestServer

from server.http.auth import COOKIE_NAME
from server.http.passwords import hash_password
from server.store.users import ensure_user
from tests.server.conftest import StartServer, services_of
from tests.server.test_limits import PASSWORD, password_server

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
