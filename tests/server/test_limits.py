"""One test per limit of ``server.config.limits.Limits``: each fails when its limit is removed.

The limits themselves are declared in one place (server/config/limits.py); these tests set a
small value through the server's config and show the refusal a client gets past it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import importlib
import itertools
import time
from typing import Any

import pytest
from aiohttp import ClientResponse
from aiohttp.test_utils import TestClient, TestServer

from server.config.limits import Limits
from server.http.auth import COOKIE_NAME
from server.http.passwords import hash_password
from server.store.users import ensure_user
from tests.server.conftest import MakeApi, StartServer, services_of
from tests.server.helpers import Api, events_of, read_events

PASSWORD = "s3cret-pass"


def limits(**changes: Any) -> Limits:
    return dataclasses.replace(Limits(), **changes)


async def _client(server: TestServer) -> TestClient[Any, Any]:
    client: TestClient[Any, Any] = TestClient(server)
    await client.start_server()
    return client


async def password_server(
    start_server: StartServer, settings: dict[str, Any] | None = None, **changes: Any
) -> TestServer:
    """A password-mode server (``settings``: more of its config; ``changes``: its limits) with
    accounts ana, bo, cy and di (all with ``PASSWORD``)."""
    server = await start_server(auth="password", limits=limits(**changes), **(settings or {}))
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


@pytest.mark.one_process  # NOTE: per process (docs/security.md)
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


@pytest.mark.one_process  # NOTE: per process (docs/security.md)
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


@pytest.mark.one_process  # NOTE: per process (docs/security.md)
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


# --- readers of runs ------------------------------------------------------------------------


async def _held_run(api: Api, run_id: str) -> ClientResponse:
    """A run that goes on until cancelled (its first event read)."""
    await api.scenario([{"event": {"type": "text-delta", "delta": "a"}}, {"hold": True}])
    response = await api.stream(await api.new_chat(), runId=run_id)
    await read_events(response, 1)
    return response


async def _reader(api: Api, run_id: str) -> ClientResponse:
    response = await api.client.get(f"/api/runs/{run_id}/events")
    if response.status == 200:
        await read_events(response, 1)
    return response


async def _refused_reader(api: Api, run_id: str) -> tuple[int, str, str | None]:
    response = await api.client.get(f"/api/runs/{run_id}/events")
    body = await response.json()
    return response.status, body["error"]["code"], response.headers.get("Retry-After")


@pytest.mark.one_process
async def test_readers_per_run(start_server: StartServer, make_api: MakeApi) -> None:
    server = await start_server(limits=limits(readers_per_run=2))
    ana, bo = await make_api("ana", on=server), await make_api("ana", on=server)
    run = await _held_run(ana, "run_r")
    readers = [await _reader(ana, "run_r"), await _reader(bo, "run_r")]
    assert [r.status for r in readers] == [200, 200]
    assert await _refused_reader(bo, "run_r") == (429, "too_many_readers", "5")
    await ana.cancel("run_r")
    for response in (run, *readers):
        await response.read()


@pytest.mark.one_process
async def test_readers_per_user(start_server: StartServer, make_api: MakeApi) -> None:
    server = await start_server(limits=limits(readers_per_user=2))
    ana, bo = await make_api("ana", on=server), await make_api("bo", on=server)
    runs = [await _held_run(ana, "run_a"), await _held_run(ana, "run_b")]
    readers = [await _reader(ana, "run_a"), await _reader(ana, "run_b")]
    assert [r.status for r in readers] == [200, 200]
    assert await _refused_reader(ana, "run_b") == (429, "too_many_readers", "5")
    bo_run = await _held_run(bo, "run_c")
    assert (await _reader(bo, "run_c")).status == 200, "another user's readers are their own"
    for api, run_id in ((ana, "run_a"), (ana, "run_b"), (bo, "run_c")):
        await api.cancel(run_id)
    for response in (*runs, *readers, bo_run):
        response.close()


# --- sessions -----------------------------------------------------------------------------------


async def _signed_in(server: TestServer, name: str = "ana") -> tuple[TestClient[Any, Any], str]:
    client = await _client(server)
    response = await client.post("/api/session/sign-in", json={"name": name, "password": PASSWORD})
    assert response.status == 200
    return client, response.cookies[COOKIE_NAME].value


async def _age(server: TestServer, column: str, seconds: float) -> None:
    """Every session's ``column`` set ``seconds`` before now."""
    at = time.time() - seconds
    await services_of(server).db.execute(f"UPDATE sessions SET {column} = ?", (at,))


@pytest.mark.parametrize(
    ("column", "limit"),
    [
        pytest.param("last_seen_at", "session_idle_s", id="idle"),
        pytest.param("created_at", "session_absolute_s", id="absolute"),
    ],
)
async def test_session_lifetimes(start_server: StartServer, column: str, limit: str) -> None:
    """A session unused for its idle lifetime, or older than its absolute one, ends (and its
    row is gone); one second short of it, it still answers."""
    server = await password_server(start_server)
    client, _token = await _signed_in(server)
    try:
        lifetime = getattr(Limits(), limit)
        await _age(server, column, lifetime - 60)
        assert (await client.get("/api/chats")).status == 200
        await _age(server, column, lifetime + 60)
        assert (await client.get("/api/chats")).status == 401
        assert await services_of(server).db.all("SELECT user_id FROM sessions") == []
    finally:
        await client.close()


async def test_a_31_day_old_session_is_over_even_in_daily_use(start_server: StartServer) -> None:
    server = await password_server(start_server)
    client, _token = await _signed_in(server)
    try:
        await _age(server, "created_at", 31 * 24 * 3600)
        assert (await client.get("/api/chats")).status == 401
    finally:
        await client.close()


# --- read deadlines -----------------------------------------------------------------------------


async def _dribble(server: TestServer, head: bytes, then: bytes) -> bytes:
    """Send ``head``, then ``then`` a byte every 50 ms until the server closes the connection;
    what the server answered (``b""``: it just closed it)."""
    reader, writer = await asyncio.open_connection(server.host, server.port)
    writer.write(head)
    answer = b""
    try:
        async with asyncio.timeout(30):
            for byte in itertools.cycle(then):
                writer.write(bytes([byte]))
                await writer.drain()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(0.05):
                        answer = await reader.read(4096)
                        return answer
    except ConnectionError:
        return answer
    finally:
        writer.close()
    raise AssertionError("unreachable")


@pytest.mark.one_process  # NOTE: per process (docs/security.md)
async def test_header_deadline_s(start_server: StartServer) -> None:
    """Headers dribbled a byte at a time are cut once the deadline passes."""
    server = await start_server(limits=limits(header_deadline_s=0.3))
    head = f"GET /api/session HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nX-Slow: ".encode()
    assert await _dribble(server, head, b"abc") == b"", "closed with no answer"


async def test_header_deadline_never_cuts_a_long_answer(start_server: StartServer) -> None:
    server = await start_server(limits=limits(header_deadline_s=0.2))
    client = await make_client_for(server)
    try:
        steps = [
            {"event": {"type": "text-delta", "delta": "a"}},
            {"sleep_ms": 800},
            {"event": {"type": "done", "stopReason": "end"}},
        ]
        assert (await client.post("/__test__/scenarios", json={"steps": steps})).status == 200
        chat = await (await client.post("/api/chats", json={})).json()
        response = await client.post(
            "/api/respond/stream", json={"chatId": chat["id"], "prompt": "hi"}
        )
        events = events_of(await response.read())
        assert events[-1]["type"] == "done"
    finally:
        await client.close()


async def make_client_for(server: TestServer) -> TestClient[Any, Any]:
    client = await _client(server)
    assert (await client.get("/api/session?as=alice")).status == 200
    return client


@pytest.mark.one_process  # NOTE: per process (docs/security.md)
async def test_body_min_bytes_per_s(start_server: StartServer) -> None:
    """A body dribbled below the minimum rate has its connection closed; nothing is made."""
    server = await start_server(limits=limits(body_grace_s=0.3, body_min_bytes_per_s=1000))
    client = await make_client_for(server)
    try:
        cookie = client.session.cookie_jar.filter_cookies(server.make_url("/"))[COOKIE_NAME]
        head = (
            f"POST /api/chats HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: 100000\r\n"
            f"Cookie: {COOKIE_NAME}={cookie.value}\r\n\r\n"
        ).encode()
        answer = await _dribble(server, head, b'{"title": "slow"')
        assert b"201" not in answer
        assert (await client.get("/api/chats")).status == 200
        assert await (await client.get("/api/chats")).json() == []
    finally:
        await client.close()


async def test_anonymous_session_absolute_s(start_server: StartServer) -> None:
    """An anonymous session lives as long as its cookie, and not a day more."""
    server = await start_server(test_hooks=False)
    client = await _client(server)
    try:
        session = await client.get("/api/session")
        lifetime = Limits().anonymous_session_absolute_s
        assert session.cookies[COOKIE_NAME]["max-age"] == str(int(lifetime))
        await _age(server, "created_at", lifetime + 60)
        await _age(server, "last_seen_at", 0)
        assert (await client.get("/api/chats")).status == 401
    finally:
        await client.close()


# --- test hooks -----------------------------------------------------------------------------------


async def test_scenario_max_bytes(start_server: StartServer) -> None:
    server = await start_server(limits=limits(scenario_max_bytes=1000))
    client = await make_client_for(server)
    try:
        steps = [{"event": {"type": "text-delta", "delta": "x" * 2000}}]
        response = await client.post("/__test__/scenarios", json={"steps": steps})
        assert response.status == 413
    finally:
        await client.close()


# --- every limit has its test ---------------------------------------------------------------

ELSEWHERE = {
    "attachment_max_bytes": (
        "test_chat_management.test_an_oversized_attachment_is_refused_in_human_units"
    ),
    "attachment_ttl_s": "test_errors.test_expired_attachment_is_unavailable",
    "attachment_types": "test_chats.test_attachment_limits_are_clear_errors",
    "body_max_bytes": "test_security.test_a_body_over_the_limit_is_413_and_is_not_read",
    "prompt_max_bytes": "test_security.test_a_prompt_over_the_limit_is_413",
    "attachments_per_request": (
        "test_security.test_attachment_ids_are_capped_and_a_repeated_one_counts_once"
    ),
    "json_max_depth": "test_security.test_hostile_json_is_a_400_not_a_500",
    "runs_per_user": "test_security.test_a_user_s_concurrent_runs_are_capped_with_429",
    "password_workers": "test_hostile.test_a_sign_in_flood_does_not_stall_another_user",
    "password_queue": "test_limits.test_password_queue_is_bounded",
    "attempt_delay_s": "tests.unit.test_throttle.test_wait_grows_with_failures",
    "attempt_delay_max_s": "tests.unit.test_throttle.test_wait_grows_with_failures",
    "attempt_memory_s": "tests.unit.test_throttle.test_old_failures_are_forgotten",
    "attempt_keys_kept": "tests.unit.test_throttle.test_attempt_keys_kept",
    "session_idle_s": "test_limits.test_session_lifetimes",
    "session_absolute_s": "test_limits.test_session_lifetimes",
    "body_grace_s": "test_limits.test_body_min_bytes_per_s",
}
"""The test holding each limit that has no ``test_<limit>`` here (module, then test)."""


def test_every_limit_has_a_test() -> None:
    """A limit added to server/config/limits.py without a test fails here."""
    here = {name for name in globals() if name.startswith("test_")}
    for field in dataclasses.fields(Limits):
        named = f"test_{field.name}"
        if any(test.startswith(named) for test in here):
            continue
        assert field.name in ELSEWHERE, f"no test holds the limit {field.name}"
        where, _, test = ELSEWHERE[field.name].rpartition(".")
        module = importlib.import_module(where if "." in where else f"tests.server.{where}")
        assert callable(getattr(module, test, None)), f"{ELSEWHERE[field.name]} is gone"


@pytest.mark.one_process
@pytest.mark.parametrize(
    ("proxies", "second"),
    [
        pytest.param(("127.0.0.1",), 401, id="behind-a-trusted-proxy-each-client-is-its-own"),
        pytest.param(("10.9.9.9",), 429, id="anyone-else-s-header-is-ignored"),
    ],
)
async def test_free_attempts_per_client_behind_a_proxy(
    start_server: StartServer, proxies: tuple[str, ...], second: int
) -> None:
    server = await password_server(
        start_server,
        {"trusted_proxies": proxies},
        free_attempts_per_client=1,
        free_attempts_per_account=100,
    )
    client = await _client(server)
    try:
        statuses = []
        for address in ("10.0.0.1", "10.0.0.2"):
            response = await client.post(
                "/api/session/sign-in",
                json={"name": "ana", "password": "wrong"},
                headers={"X-Forwarded-For": f"192.0.2.1, {address}"},
            )
            statuses.append(response.status)
        assert statuses == [401, second]
    finally:
        await client.close()
