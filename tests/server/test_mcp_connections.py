"""MCP servers over stdio and Streamable HTTP: listed, called with the idempotency key, and a
server that is down or dies said in words, never a crash (server/tools/connections.py)."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from server.config.tools import McpSettings
from server.tools.connections import McpConnection, McpServers, ToolUnavailable
from tests.mcp_notes import SERVER, http_server, saved, stdio_settings


async def test_stdio_server_lists_its_tools_with_read_only_from_annotations(
    tmp_path: Path,
) -> None:
    connection = McpConnection(stdio_settings(tmp_path / "notes.txt"))
    await connection.start()
    try:
        assert connection.state == "up"
        tools = {tool.qualified_name: tool.read_only for tool in connection.tools}
        assert tools == {"notes__save_note": False, "notes__list_notes": True}
    finally:
        await connection.stop()


async def test_read_only_in_the_settings_makes_an_acting_tool_read_only(tmp_path: Path) -> None:
    connection = McpConnection(stdio_settings(tmp_path / "n.txt", read_only=("save_note",)))
    await connection.start()
    try:
        assert all(tool.read_only for tool in connection.tools)
    finally:
        await connection.stop()


async def test_a_call_carries_the_idempotency_key_to_the_server(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    connection = McpConnection(stdio_settings(notes))
    await connection.start()
    try:
        result = await connection.call("save_note", {"text": "river high"}, "run_1:call_1", 10)
    finally:
        await connection.stop()
    assert not result.is_error
    assert saved(notes) == [{"text": "river high", "key": "run_1:call_1"}]


async def test_streamable_http_server_gets_headers_from_environment_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    notes = tmp_path / "notes.txt"
    monkeypatch.setenv("NOTES_TEST_TOKEN", "Bearer s3cret")
    with http_server(notes, token="s3cret") as url:
        settings = McpSettings(
            name="remote", url=url, headers_env={"Authorization": "NOTES_TEST_TOKEN"}
        )
        connection = McpConnection(settings)
        await connection.start()
        try:
            assert connection.state == "up", connection.reason
            assert {t.qualified_name for t in connection.tools} >= {"remote__save_note"}
            result = await connection.call("save_note", {"text": "over http"}, "r:c", 10)
        finally:
            await connection.stop()
    assert not result.is_error
    assert saved(notes) == [{"text": "over http", "key": "r:c"}]


async def test_streamable_http_without_the_token_gets_the_tool_error_in_words(
    tmp_path: Path,
) -> None:
    with http_server(tmp_path / "notes.txt", token="s3cret") as url:
        connection = McpConnection(McpSettings(name="remote", url=url))
        await connection.start()
        try:
            result = await connection.call("save_note", {"text": "x"}, "r:c", 10)
        finally:
            await connection.stop()
    assert result.is_error
    assert "bearer token" in str(result.content[0])


async def test_a_server_that_cannot_start_is_down_with_the_reason(tmp_path: Path) -> None:
    servers = McpServers(
        (
            McpSettings(name="broken", command=(str(tmp_path / "no-such-program"),)),
            stdio_settings(tmp_path / "notes.txt"),
        )
    )
    await servers.start()
    try:
        assert set(servers.down()) == {"broken"}
        assert servers.down()["broken"]
        assert {t.server for t in servers.tools()} == {"notes"}
        with pytest.raises(ToolUnavailable, match="broken"):
            await servers.connections["broken"].call("x", {}, "k", 1)
    finally:
        await servers.stop()


async def test_an_unreachable_url_is_down_not_a_crash() -> None:
    connection = McpConnection(McpSettings(name="gone", url="http://127.0.0.1:9/mcp"))
    await connection.start(timeout_s=10)
    try:
        assert connection.state == "down"
        assert connection.tools == ()
    finally:
        await connection.stop()


async def test_a_server_that_dies_is_said_down(tmp_path: Path) -> None:
    connection = McpConnection(stdio_settings(tmp_path / "notes.txt"))
    await connection.start()
    try:
        assert connection.state == "up"
        # NOTE: only the notes server: the session's PostgreSQL and Redis are children too
        notes_servers = _children(os.getpid(), running=str(SERVER))
        assert notes_servers
        for pid in notes_servers:
            os.kill(pid, signal.SIGKILL)
        for _ in range(200):
            if connection.state == "down":
                break
            await asyncio.sleep(0.05)
        assert connection.state == "down"
        assert connection.tools == ()
    finally:
        await connection.stop()


def _children(pid: int, *, running: str) -> list[int]:
    """The processes whose parent is ``pid`` and whose command line names ``running``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) != pid:
            continue
        try:
            command = (entry / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if running in command:
            found.append(int(entry.name))
    return found
