"""Several ``python -m server`` processes on one SQLite file and one real ``redis-server``.

``redis_server`` finds or installs the binary (tools/redis_server.py: apt-get as root) and runs
it on a free port in a temporary directory, without persistence; ``postgres_server`` does the
same for PostgreSQL (tools/postgres_server.py: a fresh cluster without fsync, database
``riacho``). ``Worker`` is one server process; ``WorkerApi`` is one user's client of it (a
user's cookie works on every worker: the sessions are in the shared database).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import aiohttp
import asyncpg
import pytest

from server.store.db import PostgresDatabase
from tests.server.helpers import JsonObject, events_of

ROOT = Path(__file__).resolve().parents[2]


def _tool(name: str) -> ModuleType:
    """A module of tools/ (loaded by path: tools/ is not put on sys.path, its names are short)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ensure_redis_server: Callable[[], str | None] = _tool("redis_server").ensure_redis_server
_postgres_tool = _tool("postgres_server")
ensure_postgres_bin: Callable[[], Path | None] = _postgres_tool.ensure_postgres_bin
running_postgres: Callable[[Path, Path], AbstractContextManager[str]] = (
    _postgres_tool.running_postgres
)

START_TIMEOUT_S = 30.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_until(ready: Any, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"exited early:\n{log.read_text(errors='replace')}")
        try:
            if ready():
                return
        except OSError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"not ready in {START_TIMEOUT_S:g} s:\n{log.read_text(errors='replace')}")


def _redis_pings(port: int) -> bool:
    with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
        sock.sendall(b"PING\r\n")
        return sock.recv(16).startswith(b"+PONG")


@contextmanager
def redis_server(workdir: Path) -> Iterator[str]:
    """A throw-away ``redis-server`` (no RDB, no AOF) on a free port; yields its URL."""
    binary = ensure_redis_server()
    if binary is None:
        pytest.fail("no redis-server: run `python tools/redis_server.py` for what to install")
    port, log = free_port(), workdir / "redis.log"
    command = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
    command += ["--appendonly", "no", "--dir", str(workdir), "--logfile", str(log)]
    process = subprocess.Popen(command, cwd=workdir)
    try:
        _wait_until(lambda: _redis_pings(port), process, log)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(timeout=10)


@contextmanager
def postgres_server(workdir: Path) -> Iterator[str]:
    """A throw-away PostgreSQL (no fsync) on a free port; yields its database ``riacho``'s URL."""
    bin_dir = ensure_postgres_bin()
    if bin_dir is None:
        pytest.fail("no PostgreSQL: run `python tools/postgres_server.py` for what to install")
    with running_postgres(workdir, bin_dir) as url:
        yield url


TEMPLATE = "riacho_template"


def fresh_postgres_database(server_url: str) -> str:
    """A new, empty database at the newest revision on the server of ``server_url``; its URL.

    # NOTE: the first call migrates a template; each database is then a copy of it (fast).
    """
    return asyncio.run(new_postgres_database(server_url))


async def new_postgres_database(server_url: str) -> str:
    base, _name = server_url.rsplit("/", 1)
    admin = await asyncpg.connect(server_url)
    try:
        if not await admin.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", TEMPLATE):
            await admin.execute(f"CREATE DATABASE {TEMPLATE}")
            template = PostgresDatabase(f"{base}/{TEMPLATE}")
            await template.open()
            await template.close()
        name = f"t_{secrets.token_hex(6)}"
        await admin.execute(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE}")
    finally:
        await admin.close()
    return f"{base}/{name}"


@dataclass
class Worker:
    """One ``python -m server`` process."""

    name: str
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def kill(self) -> None:
        """SIGKILL: the process gets no chance to end its runs."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=15)

    def errors(self) -> list[str]:
        """Lines of its log that tell of an unhandled error."""
        text = self.log.read_text(errors="replace")
        return [line for line in text.splitlines() if "Traceback" in line or " ERROR " in line]


def start_worker(name: str, workdir: Path, db: Path | str, redis_url: str, *options: str) -> Worker:
    """``python -m server`` on ``db`` and ``redis_url`` with the test hooks, on a free port."""
    port, log = free_port(), workdir / f"worker-{name}.log"
    command = [sys.executable, "-m", "server", "--port", str(port), "--db", str(db)]
    command += ["--redis-url", redis_url, "--test-hooks", *options]
    with log.open("wb") as log_file:
        process = subprocess.Popen(command, cwd=ROOT, stdout=log_file, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"

    def serving() -> bool:
        with urllib.request.urlopen(url + "/api/session", timeout=1):
            return True

    try:
        _wait_until(serving, process, log)
    except BaseException:
        process.kill()
        raise
    return Worker(name, url, process, log)


class WorkerApi:
    """One user's client: the same cookie jar on every worker."""

    def __init__(self, session: aiohttp.ClientSession) -> None:
        self.session = session

    async def login(self, worker: Worker, name: str) -> None:
        async with self.session.get(f"{worker.url}/api/session?as={name}") as response:
            assert response.status == 200, await response.text()

    async def json(
        self, worker: Worker, method: str, path: str, expect: int = 200, **kw: Any
    ) -> Any:
        async with self.session.request(method, worker.url + path, **kw) as response:
            body = await response.text()
            assert response.status == expect, f"{worker.name} {method} {path}: {body}"
            return json.loads(body) if body else None

    async def new_chat(self, worker: Worker) -> str:
        chat = await self.json(worker, "POST", "/api/chats", expect=201)
        return str(chat["id"])

    async def scenario(self, worker: Worker, steps: list[JsonObject]) -> None:
        await self.json(worker, "POST", "/__test__/scenarios", json={"steps": steps})

    async def stream(self, worker: Worker, chat_id: str, run_id: str) -> aiohttp.ClientResponse:
        body = {"chatId": chat_id, "prompt": "tell me a long story", "runId": run_id}
        response = await self.session.post(f"{worker.url}/api/respond/stream", json=body)
        assert response.status == 200, await response.text()
        return response

    async def resume(self, worker: Worker, run_id: str, after: int) -> aiohttp.ClientResponse:
        headers = {"Last-Event-ID": str(after)}
        response = await self.session.get(f"{worker.url}/api/runs/{run_id}/events", headers=headers)
        assert response.status == 200, await response.text()
        return response

    async def run(self, worker: Worker, run_id: str) -> JsonObject:
        info: JsonObject = await self.json(worker, "GET", f"/api/runs/{run_id}")
        return info


async def read_events(response: aiohttp.ClientResponse, count: int) -> list[JsonObject]:
    """Read exactly ``count`` event frames (skipping comments) from a live stream."""
    events: list[JsonObject] = []
    while len(events) < count:
        block = await response.content.readuntil(b"\n\n")
        assert block, f"the stream ended after {len(events)} of {count} events"
        events += events_of(block)
    return events


async def read_rest(response: aiohttp.ClientResponse) -> list[JsonObject]:
    """The events until the stream ends."""
    return events_of(await response.read())
