"""Fixtures: an app per test (tiny delays, test hooks on) and API clients per user.

``RIACHO_TEST_DB=postgresql``: every server on a new database of a throwaway PostgreSQL.
``RIACHO_TEST_CLUSTER=1`` (``make test-server-cluster``): every server a test starts is a
two-worker cluster instead: two whole apps (each its own run registry, Redis connections and
database pool) on one new PostgreSQL database and a throwaway ``redis-server`` of their own,
behind the round-robin proxy (server/cli/proxy.py), which the tests' clients talk to, so any
request may land on either worker. Tests of one process's own memory (its drain, its
registry's notes) are marked ``one_process`` and skipped then.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from aiohttp.typedefs import Handler, Middleware

from server.app import create_app
from server.cli.proxy import make_proxy
from server.config import Config
from server.config.providers import ProviderSettings
from server.http.deadlines import handler_options
from server.http.services import SERVICES, Services
from server.runs.live import LiveRun
from tests.provider_fake import FakeProvider, Kind
from tests.server.helpers import Api, JsonObject
from tests.server.workers import fresh_postgres_database, postgres_server, redis_server

MakeApi = Callable[..., Awaitable[Api]]


#: ``RIACHO_TEST_DB=postgresql``: every server of these tests on a throwaway PostgreSQL (a new
#: database per test) instead of a new SQLite file (``make test-server-postgres``)
DB_ENV = "RIACHO_TEST_DB"


CLUSTER_ENV = "RIACHO_TEST_CLUSTER"
CLUSTER_WORKERS = 2


def in_cluster() -> bool:
    return os.environ.get(CLUSTER_ENV) == "1"


def on_postgres() -> bool:
    return os.environ.get(DB_ENV) == "postgresql" or in_cluster()


@pytest.fixture(scope="session")
def postgres_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A throwaway PostgreSQL server for the session (started only when a test asks)."""
    with postgres_server(tmp_path_factory.mktemp("postgres")) as url:
        yield url


@pytest.fixture
def database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """This test's database: a new SQLite file, or a new PostgreSQL database."""
    if on_postgres():
        return fresh_postgres_database(request.getfixturevalue("postgres_url"))
    return str(tmp_path / "riacho.db")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """On PostgreSQL, tests of SQLite files as such are skipped (they run in the SQLite pass);
    in a cluster, tests of one process's own memory too (they run in the other passes)."""
    sqlite = pytest.mark.skip(reason="about SQLite files; runs when the tests run on SQLite")
    one = pytest.mark.skip(reason="about one process's own memory; runs without a cluster")
    for item in items:
        if on_postgres() and item.get_closest_marker("sqlite_only"):
            item.add_marker(sqlite)
        if in_cluster() and item.get_closest_marker("one_process"):
            item.add_marker(one)


class ClusterServer(TestServer):
    """Workers (each a whole app) behind the round-robin proxy; the proxy is what is served."""

    def __init__(
        self, workers: list[TestServer], served: list[list[str]], redis: ExitStack
    ) -> None:
        upstreams = [str(worker.make_url("")).rstrip("/") for worker in workers]
        super().__init__(make_proxy(upstreams))
        self.workers = workers
        self.served = served  # NOTE: each worker's request paths, in order
        self._redis = redis

    async def close(self) -> None:
        await super().close()
        for worker in self.workers:
            await worker.close()
        self._redis.close()


async def open_server(config: Config, workdir: Path) -> TestServer:
    """A started server on ``config``: the app alone, or in a cluster (``in_cluster``)."""
    if not in_cluster():
        server = TestServer(create_app(config))
        await server.start_server(**handler_options(config.limits))
        return server
    redis = ExitStack()
    url = redis.enter_context(redis_server(Path(tempfile.mkdtemp(dir=workdir))))
    shared = with_config(config, redis_url=url)
    apps = [create_app(shared) for _ in range(CLUSTER_WORKERS)]
    served: list[list[str]] = [[] for _ in apps]
    for app, paths in zip(apps, served, strict=True):
        app.middlewares.insert(0, _noting(paths))
    workers = [TestServer(app) for app in apps]
    for worker in workers:
        await worker.start_server()
    server = ClusterServer(workers, served, redis)
    await server.start_server()
    return server


def _noting(served: list[str]) -> Middleware:
    @web.middleware
    async def note(request: web.Request, handler: Handler) -> web.StreamResponse:
        served.append(request.path)
        return await handler(request)

    return note


def workers_of(server: TestServer) -> list[TestServer]:
    """The app servers behind ``server``: itself, or a cluster's workers."""
    return server.workers if isinstance(server, ClusterServer) else [server]


@pytest.fixture
def config(database: str) -> Config:
    """Fast settings: no token delay, long keepalive and orphan timers, hooks on."""
    return Config(
        db_path=database,
        test_hooks=True,
        keepalive_s=30.0,
        retention_s=3600.0,
        orphan_s=30.0,
        demo_token_ms=0.0,
        cancel_wait_s=2.0,
    )


@pytest.fixture
async def server(config: Config, tmp_path: Path) -> AsyncIterator[TestServer]:
    """The server under test (``handler_cancellation`` on, like ``python -m server``)."""
    test_server = await open_server(config, tmp_path)
    yield test_server
    await test_server.close()


def services_of(server: TestServer) -> Services:
    """The services behind a test server (a cluster's first worker: the database and the
    settings are every worker's)."""
    app: web.Application = workers_of(server)[0].app
    return app[SERVICES]


@pytest.fixture
async def make_api(server: TestServer) -> AsyncIterator[MakeApi]:
    """``await make_api("alice")``: a logged-in client (``None``: no session at all)."""
    clients: list[TestClient[Any, Any]] = []

    async def make(name: str | None = "alice", on: TestServer | None = None) -> Api:
        client: TestClient[Any, Any] = TestClient(on or server)
        await client.start_server()
        clients.append(client)
        api = Api(client)
        if name is not None:
            await api.login(name)
        return api

    yield make
    for client in clients:
        await client.close()


@pytest.fixture
async def api(make_api: MakeApi) -> Api:
    """Alice's client."""
    return await make_api("alice")


def with_config(config: Config, **changes: Any) -> Config:
    return dataclasses.replace(config, **changes)


def live_run(server: TestServer, run_id: str) -> LiveRun | None:
    """The live run whose client id is ``run_id`` (whoever owns it)."""
    for worker in workers_of(server):
        app: web.Application = worker.app
        for run in app[SERVICES].runs.live.values():
            if run.run_id == run_id:
                return run
    return None


async def wait_stopped(server: TestServer, run_id: str, timeout: float = 5.0) -> None:
    """Wait until the run's generation task has ended (no-op if it already has)."""
    run = live_run(server, run_id)
    if run is not None:
        async with asyncio.timeout(timeout):
            await run.stopped.wait()


async def logged_events(server: TestServer, run_id: str) -> list[JsonObject]:
    """The run's event log as persisted in the database."""
    rows = await services_of(server).db.all(
        "SELECT data FROM run_events WHERE run_id LIKE '%/' || ? ORDER BY id", (run_id,)
    )
    return [json.loads(row["data"]) for row in rows]


StartServer = Callable[..., Awaitable[TestServer]]


@pytest.fixture
async def start_server(config: Config, tmp_path: Path) -> AsyncIterator[StartServer]:
    """``await start_server(orphan_s=0.05)``: another server with changed settings."""
    servers: list[TestServer] = []

    async def start(**changes: Any) -> TestServer:
        test_server = await open_server(with_config(config, **changes), tmp_path)
        servers.append(test_server)
        return test_server

    yield start
    for test_server in servers:
        await test_server.close()


@pytest.fixture(autouse=True)
def no_server_errors(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """Fail a test whose server logged an error (an unhandled exception in a handler or run)."""
    yield
    errors = [r for r in caplog.get_records("call") if r.levelno >= logging.ERROR]
    assert not errors, [f"{r.name}: {r.getMessage()}" for r in errors]


# --- real-model providers, answered by the fake provider on loopback --------------------------

TEST_KEY_ENV = "RIACHO_TEST_PROVIDER_KEY"
TEST_KEY = "sk-test-provider-key-0123456789"
MODEL_ID = "fake-model:1b"


@dataclasses.dataclass
class FakeEndpoint:
    """The fake provider and the base URL each SDK is given for it."""

    provider: FakeProvider
    url: str

    def base_url(self, kind: Kind) -> str:
        return f"{self.url}/v1" if kind.startswith("openai") else self.url


@pytest.fixture
async def fake(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeEndpoint]:
    """A fake provider on loopback, and the API key the server reads from the environment."""
    monkeypatch.setenv(TEST_KEY_ENV, TEST_KEY)
    provider = FakeProvider()
    test_server = TestServer(provider.app())
    await test_server.start_server()
    yield FakeEndpoint(provider, str(test_server.make_url("")).rstrip("/"))
    await test_server.close()


def provider_settings(kind: Kind, base_url: str, **changes: Any) -> ProviderSettings:
    """One provider with one model, short timeouts, the test key."""
    model = {"id": MODEL_ID, "supports_thinking": True, "context_window": 1000}
    model.update(changes.pop("model", {}))
    settings: dict[str, Any] = {
        "kind": kind,
        "base_url": base_url,
        "api_key_env": TEST_KEY_ENV,
        "first_byte_timeout_s": 5.0,
        "idle_timeout_s": 5.0,
        "models": [model],
    }
    return ProviderSettings.model_validate({**settings, **changes})


ModelApi = Callable[..., Awaitable[Api]]


@pytest.fixture
def model_api(start_server: StartServer, make_api: MakeApi, fake: FakeEndpoint) -> ModelApi:
    """``await model_api("anthropic")``: alice on a server whose models come from the fake."""

    async def make(kind: Kind, server_changes: dict[str, Any] | None = None, **changes: Any) -> Api:
        provider = provider_settings(kind, fake.base_url(kind), **changes)
        server = await start_server(providers=(provider,), **(server_changes or {}))
        return await make_api("alice", on=server)

    return make
