"""Stopping the server: new runs are refused, running ones get a grace period, the rest end
``interrupted`` with ``server_shutdown`` — and their readers are told so."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import aiohttp
import pytest
from aiohttp.test_utils import TestServer

from tests.server.conftest import MakeApi, StartServer, services_of
from tests.server.helpers import Api, assert_valid_run_stream, events_of, read_events

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.one_process
async def test_draining_refuses_new_runs_and_interrupts_those_past_the_grace(
    start_server: StartServer, make_api: MakeApi
) -> None:
    server: TestServer = await start_server(demo_token_ms=50.0)
    api: Api = await make_api("alice", on=server)
    chat_id = await api.new_chat()
    response = await api.stream(chat_id, "a long answer", runId="run_long")
    await read_events(response, 2)
    registry = services_of(server).runs
    draining = asyncio.ensure_future(registry.drain(0.2))
    await asyncio.sleep(0.05)
    refused = await api.stream(chat_id, "another", runId="run_late")
    body = await refused.json()
    assert (refused.status, body["error"]["code"]) == (503, "server_stopping")
    assert refused.headers["Retry-After"] == "5"
    await draining
    events = events_of(await response.read())
    assert (events[-1]["type"], events[-1]["code"], events[-1]["done"]) == (
        "error",
        "server_shutdown",
        True,
    )
    info = await api.run("run_long")
    assert (info["status"], info["reason"]) == ("interrupted", "server_shutdown")


@pytest.mark.one_process
async def test_a_run_that_ends_within_the_grace_completes(
    start_server: StartServer, make_api: MakeApi
) -> None:
    server = await start_server(demo_token_ms=0.0)
    api = await make_api("alice", on=server)
    chat_id = await api.new_chat()
    response = await api.stream(chat_id, "hi", runId="run_quick")
    await services_of(server).runs.drain(5.0)
    events = events_of(await response.read())
    assert_valid_run_stream(events, "run_quick")
    assert events[-1]["type"] == "done"
    assert (await api.run("run_quick"))["status"] == "completed"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start(db: Path, port: int) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "server", "--port", str(port), "--db", str(db)]
    command += ["--test-hooks", "--demo-token-ms", "200", "--shutdown-grace-s", "0.3"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT
    )


async def _wait_serving(url: str) -> None:
    deadline = time.monotonic() + 20
    async with aiohttp.ClientSession() as probe:
        while True:
            try:
                async with probe.get(url + "/api/models") as _:
                    return
            except aiohttp.ClientError:
                assert time.monotonic() < deadline, "the server did not start"
                await asyncio.sleep(0.1)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGTERM")
async def test_sigterm_tells_live_readers_and_records_the_reason(tmp_path: Path) -> None:
    db, port = tmp_path / "riacho.db", _free_port()
    url = f"http://127.0.0.1:{port}"
    process = _start(db, port)
    try:
        await _wait_serving(url)
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as client:
            await (await client.get(url + "/api/session?as=alice")).read()
            chat = await (await client.post(url + "/api/chats", json={})).json()
            body = {"chatId": chat["id"], "prompt": "a long story", "runId": "run_term"}
            async with client.post(url + "/api/respond/stream", json=body) as response:
                await response.content.readuntil(b"\n\n")
                process.send_signal(signal.SIGTERM)
                rest = (await response.content.read()).decode()
        last = json.loads(rest.strip().split("\n\n")[-1].split("data: ", 1)[1])
        assert (last["type"], last["code"], last["done"]) == ("error", "server_shutdown", True)
        assert process.wait(timeout=15) == 0
    finally:
        process.kill()
        process.wait()
    again = _start(db, port)
    try:
        await _wait_serving(url)
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as client:
            await (await client.get(url + "/api/session?as=alice")).read()
            info = await (await client.get(url + "/api/runs/run_term")).json()
        assert (info["status"], info["reason"]) == ("interrupted", "server_shutdown")
    finally:
        again.terminate()
        again.wait(timeout=15)
