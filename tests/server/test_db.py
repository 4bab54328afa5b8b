"""The SQL both engines take: ``?`` placeholders numbered for PostgreSQL, row counts read."""

from __future__ import annotations

import pytest

from server.store.db import SqliteDatabase, _changed_rows, numbered
from server.store.runlog import RUN_KEY_SQL, run_key


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT 1", "SELECT 1"),
        ("SELECT * FROM t WHERE a = ?", "SELECT * FROM t WHERE a = $1"),
        ("UPDATE t SET a = ?, b = ? WHERE c = ?", "UPDATE t SET a = $1, b = $2 WHERE c = $3"),
        ("SELECT '?' FROM t WHERE a = ?", "SELECT '?' FROM t WHERE a = $1"),
        ("SELECT 'it''s ?' || ? FROM t", "SELECT 'it''s ?' || $1 FROM t"),
        ("SELECT ? LIKE ? ESCAPE '\\'", "SELECT $1 LIKE $2 ESCAPE '\\'"),
    ],
)
def test_placeholders_are_numbered_outside_string_literals(sql: str, expected: str) -> None:
    assert numbered(sql) == expected


@pytest.mark.parametrize(
    ("status", "rows"),
    [("UPDATE 3", 3), ("INSERT 0 1", 1), ("DELETE 0", 0), ("CREATE TABLE", 0), ("SELECT 12", 12)],
)
def test_changed_rows_are_read_from_the_command_tag(status: str, rows: int) -> None:
    assert _changed_rows(status) == rows


@pytest.mark.parametrize(("user_id", "run_id"), [("usr_1", "run_a"), ("u", "run_with/slash")])
async def test_the_run_key_in_sql_is_the_run_key(user_id: str, run_id: str) -> None:
    db = SqliteDatabase(":memory:")
    await db.open()
    try:
        expression = RUN_KEY_SQL.format(user="?", run="?")
        row = await db.one(f"SELECT {expression} AS k", (user_id, run_id))
    finally:
        await db.close()
    assert row is not None and row["k"] == run_key(user_id, run_id)
