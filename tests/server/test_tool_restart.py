"""A lone server killed (SIGKILL) while a tool that acts runs: after its restart on the same
database the call reads ``unknown`` (found with the lost run), and nothing runs it again."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest
from yarl import URL

from server.store.db import open_database
from tests.mcp_notes import SERVER, saved
from tests.server.helpers import JsonObject, events_of

ROOT = Path(__file__).resolve().parents[2]
NOTE = "save a note that the river is high"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start(db: Path, port: int, config: Path, log: Path) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "server", "--port", str(port), "--db", str(db)]
    command += ["--config", str(config), "--demo-token-ms", "2"]
    with log.open("ab") as out:
        return subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)


async def _wait_serving(url: str) -> None:
    async with asyncio.timeout(30), aiohttp.ClientSession() as probe:
        while True:
            try:
                async with probe.get(url + "/api/session") as response:
                    if response.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)


async def _until_running(db_path: Path) -> None:
    db = open_database(str(db_path))
    await db.open()
    try:
        async with asyncio.timeout(30):
            while (row := await db.one("SELECT state FROM tool_calls")) is None or row[
                "state"
            ] != "running":
                await asyncio.sleep(0.05)
    finally:
        await db.close()


async def _until(response: aiohttp.ClientResponse, kind: str) -> JsonObject:
    while True:
        block = await response.content.readuntil(b"\n\n")
        assert block, f"the stream ended before {kind}"
        for event in events_of(block):
            if event["type"] == kind:
                return event


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
async def test_a_restart_after_kill_mid_call_leaves_unknown_and_runs_nothing_again(
    tmp_path: Path,
) -> None:
    db, notes, port = tmp_path / "riacho.db", tmp_path / "notes.txt", _free_port()
    config = tmp_path / "riacho.toml"
    config.write_text(
        f'[[mcp]]\nname = "notes"\ncommand = ["{sys.executable}", "{SERVER}"]\n'
        f'env = {{ NOTES_FILE = "{notes}", NOTES_SLOW_S = "60" }}\n',
        encoding="utf-8",
    )
    url, log = f"http://127.0.0.1:{port}", tmp_path / "server.log"
    process = _start(db, port, config, log)
    try:
        await _wait_serving(url)
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as client:
            await (await client.get(url + "/api/session?as=alice")).read()
            cookies = client.cookie_jar.filter_cookies(URL(url))
            chat = await (await client.post(url + "/api/chats", json={})).json()
            body = {"chatId": chat["id"], "prompt": NOTE, "runId": "run_k", "toolIntent": True}
            response = await client.post(url + "/api/respond/stream", json=body)
            call_id = (await _until(response, "tool_approval_requested"))["toolCallId"]
            path = f"{url}/api/runs/run_k/tool-calls/{call_id}/decision"
            await (await client.post(path, json={"approved": True})).read()
            await _until_running(db)
            os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
            response.close()
    finally:
        if process.poll() is None:
            process.kill()
    again = _start(db, port, config, log)
    try:
        await _wait_serving(url)
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as client:
            client.cookie_jar.update_cookies(cookies)
            info = await (await client.get(url + "/api/runs/run_k")).json()
            calls = await (await client.get(url + "/api/runs/run_k/tool-calls")).json()
        assert (info["status"], info["reason"]) == ("interrupted", "server_restarted")
        assert [c["effect"] for c in calls["toolCalls"]] == ["unknown"]
        assert all(line["key"] == f"run_k:{call_id}" for line in saved(notes))
    finally:
        again.terminate()
        again.wait(timeout=15)
