"""tools/postgres_server.py: a throwaway PostgreSQL serves asyncpg, then is gone."""

from __future__ import annotations

import socket
from pathlib import Path
from urllib.parse import urlsplit

import asyncpg
import pytest

from tests.server.workers import postgres_server


async def test_a_throwaway_postgres_serves_then_stops(tmp_path: Path) -> None:
    with postgres_server(tmp_path) as url:
        port = urlsplit(url).port
        assert port is not None and url.endswith("/riacho")
        connection = await asyncpg.connect(url)
        try:
            assert await connection.fetchval("SELECT 1") == 1
            await connection.execute("CREATE TABLE notes (id serial PRIMARY KEY, body text)")
            await connection.execute("INSERT INTO notes (body) VALUES ($1)", "água corrente")
            rows = await connection.fetch("SELECT id, body FROM notes")
            assert [tuple(row) for row in rows] == [(1, "água corrente")]
        finally:
            await connection.close()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    assert "database system is shut down" in (tmp_path / "postgres.log").read_text()
