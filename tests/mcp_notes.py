"""The example notes MCP server (examples/notes_server.py), started for tests: stdio or HTTP.

Each test gets its own notes file: every line in it is one execution of ``save_note``, so a
test counts executions by counting lines.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from server.config.tools import McpSettings

ROOT = Path(__file__).resolve().parents[1]
SERVER = ROOT / "examples" / "notes_server.py"


def stdio_settings(notes: Path, *, slow_s: float = 0, **extra: Any) -> McpSettings:
    """The notes server over stdio, writing ``notes``."""
    env = {"NOTES_FILE": str(notes), "NOTES_SLOW_S": str(slow_s)}
    return McpSettings(name="notes", command=(sys.executable, str(SERVER)), env=env, **extra)


def saved(notes: Path) -> list[dict[str, Any]]:
    """Every execution of ``save_note`` so far (one line each)."""
    if not notes.exists():
        return []
    return [json.loads(line) for line in notes.read_text(encoding="utf-8").splitlines() if line]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def http_server(notes: Path, token: str | None = None) -> Iterator[str]:
    """The notes server on Streamable HTTP in a process of its own; yields its URL."""
    port = _free_port()
    env = {"NOTES_FILE": str(notes), "PATH": "/usr/bin:/bin"}
    if token:
        env["NOTES_TOKEN"] = token
    process = subprocess.Popen(
        [sys.executable, str(SERVER), "--http", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_listening(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(10)


def _wait_listening(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError("the notes server exited")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError("the notes server did not listen")


def cancelled(notes: Path) -> list[dict[str, Any]]:
    """The calls the server saw cancelled (MCP cancellation) while it waited to save them."""
    path = notes.with_name(notes.name + ".cancelled")
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
