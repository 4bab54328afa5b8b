"""Black-box: hostile clients and faults, as an attacker or an operator would try them."""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any

from aiohttp.test_utils import TestClient, TestServer

from tests.server.conftest import StartServer
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
