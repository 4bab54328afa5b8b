"""A server restart keeps chats, messages, runs and logs; unfinished runs become interrupted."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from aiohttp.test_utils import TestServer

from server.app import create_app
from server.config import Config
from tests.server.conftest import MakeApi, services_of, wait_stopped, with_config
from tests.server.helpers import Api, assert_valid_run_stream, read_events


async def restart(config: Config) -> TestServer:
    server = TestServer(create_app(config))
    await server.start_server()
    return server


async def test_restart_keeps_chats_messages_runs_and_logs(
    api: Api, server: TestServer, config: Config, make_api: MakeApi
) -> None:
    chat_id = await api.new_chat()
    events = await api.run_turn(chat_id, "remember me", runId="run_kept")
    await wait_stopped(server, "run_kept")
    before = await api.json("GET", f"/api/chats/{chat_id}")
    run_before = await api.run("run_kept")
    await server.close()

    second = await restart(config)
    try:
        again = await make_api("alice", on=second)
        assert await again.json("GET", f"/api/chats/{chat_id}") == before
        assert await again.run("run_kept") == run_before
        assert await again.replay("run_kept", 0) == events
        assert [c["id"] for c in await again.json("GET", "/api/chats")] == [chat_id]
    finally:
        await second.close()


@pytest.mark.sqlite_only  # NOTE: the crash is a copy of the SQLite file
async def test_run_cut_by_a_crash_is_interrupted_with_its_partial_text(
    make_api: MakeApi, config: Config, tmp_path: Path
) -> None:
    first = await restart(with_config(config, demo_token_ms=40.0))
    api = await make_api("alice", on=first)
    chat_id = await api.new_chat()
    response = await api.stream(chat_id, "hello", runId="run_cut")
    seen = await read_events(response, 4)
    # NOTE: a crash is simulated by a copy of the database taken while the run is going.
    crashed = str(tmp_path / "crashed.db")
    with sqlite3.connect(crashed) as copy:
        services_of(first).db.conn.backup(copy)
    response.close()
    await first.close()

    second = await restart(with_config(config, db_path=crashed))
    try:
        again = await make_api("alice", on=second)
        info = await again.run("run_cut")
        assert (info["status"], info["reason"]) == ("interrupted", "server_restarted")
        replay = await again.replay("run_cut", 0)
        assert replay[: len(seen)] == seen
        assert_valid_run_stream(replay, "run_cut")  # NOTE: it ends with a terminal event
        assert (replay[-1]["type"], replay[-1]["code"]) == ("error", "server_restarted")
        message = (await again.json("GET", f"/api/chats/{chat_id}"))["messages"][-1]
        text = "".join(e["text"] for e in replay if e["type"] == "text")
        assert (message["status"], message["partial"], message["text"]) == (
            "interrupted",
            True,
            text,
        )
    finally:
        await second.close()
