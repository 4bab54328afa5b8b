"""One test per limit of ``server.config.limits.Limits``: each fails when its limit is removed.

The limits themselves are declared in one place (server/config/limits.py); these tests set a
small value through the server's config and show the refusal a client gets past it.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from aiohttp.test_utils import TestClient, TestServer

from server.config.limits import Limits
from server.http.passwords import hash_password
from server.store.users import ensure_user
from tests.server.conftest import StartServer, services_of

PASSWORD = "s3cret-pass"


def limits(**changes: Any) -> Limits:
    return dataclasses.replace(Limits(), **changes)


async def _client(server: TestServer) -> TestClient[Any, Any]:
    client: TestClient[Any, Any] = TestClient(server)
    await client.start_server()
    return client


async def password_server(start_server: StartServer, **changes: Any) -> TestServer:
    """A password-mode server with accounts ana, bo and cy (all with ``PASSWORD``)."""
    server = await start_server(auth="password", limits=limits(**changes))
    db = services_of(server).db
    hashed = hash_password(PASSWORD)
    for name in ("ana", "bo", "cy", "di"):
        await ensure_user(db, name, hashed)
    return server


async def _attempt(client: TestClient[Any, Any], name: str, password: str) -> tuple[int, Any]:
    response = await client.post("/api/session/sign-in", json={"name": name, "password": password})
    body = await response.json()
    code = body["error"]["code"] if "error" in body else None
    return response.status, (code, response.headers.get("Retry-After"))


# --- passwords ----------------------------------------------------------------------------------


async def test_free_attempts_per_account_then_a_wait(start_server: StartServer) -> None:
    server = await password_server(start_server, free_attempts_per_account=2, attempt_delay_s=60)
    client = await _client(server)
    try:
        assert [(await _attempt(client, "ana", "wrong"))[0] for _ in range(2)] == [401, 401]
        status, (code, retry_after) = await _attempt(client, "ana", PASSWORD)
        assert (status, code) == (429, "too_many_attempts"), "even the right one waits"
        assert retry_after is not None and 0 < int(retry_after) <= 60
        assert (await _attempt(client, "bo", PASSWORD))[0] == 200, "another account does not"
    finally:
        await client.close()


async def test_free_attempts_per_client_then_a_wait(start_server: StartServer) -> None:
    server = await password_server(
        start_server, free_attempts_per_client=3, free_attempts_per_account=100
    )
    client = await _client(server)
    try:
        statuses = [(await _attempt(client, name, "wrong"))[0] for name in ("ana", "bo", "cy")]
        assert statuses == [401, 401, 401]
        status, (code, retry_after) = await _attempt(client, "di", "wrong")
        assert (status, code) == (429, "too_many_attempts") and retry_after is not None
    finally:
        await client.close()


async def test_password_queue_is_bounded(start_server: StartServer) -> None:
    server = await password_server(
        start_server,
        password_workers=1,
        password_queue=0,
        free_attempts_per_client=1000,
        free_attempts_per_account=1000,
    )
    client = await _client(server)
    try:
        results = await asyncio.gather(*(_attempt(client, "ana", "wrong") for _ in range(8)))
        statuses = sorted(status for status, _ in results)
        assert statuses[0] == 401, "one check runs"
        assert statuses[-1] == 429, "the ones finding no free thread are refused"
        refused = [extra for status, extra in results if status == 429]
        assert all(extra == ("too_many_attempts", "1") for extra in refused)
    finally:
        await client.close()
