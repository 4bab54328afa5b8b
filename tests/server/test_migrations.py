"""A database written by an older Riacho is brought up to date on start, losing nothing."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from server.store import migrations
from server.store.db import SqliteDatabase
from server.store.migrations import head_revision
from server.store.runlog import load_frames, run_row
from server.store.users import Lifetime, token_hash, user_of_session
from server.turns.start import chat_of

ROOT = Path(__file__).resolve().parents[2]

# NOTE: the tables as the first Riacho wrote them (``PRAGMA user_version`` 0), kept verbatim:
# a file made then must still open.
FIRST_SCHEMA = """
CREATE TABLE IF NOT EXISTS users (
    id TEXT PRIMARY KEY, name TEXT UNIQUE NOT NULL, created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (
    token TEXT PRIMARY KEY, user_id TEXT NOT NULL REFERENCES users(id), created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS chats (
    id TEXT PRIMARY KEY, user_id TEXT NOT NULL, title TEXT NOT NULL,
    created_at REAL NOT NULL, updated_at REAL NOT NULL, last_model_id TEXT,
    compacted_at REAL, summary_tokens INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS chats_user ON chats(user_id, updated_at);
CREATE TABLE IF NOT EXISTS messages (
    id TEXT PRIMARY KEY, chat_id TEXT NOT NULL REFERENCES chats(id) ON DELETE CASCADE,
    role TEXT NOT NULL, content TEXT NOT NULL DEFAULT '', attachments TEXT NOT NULL DEFAULT '[]',
    reply_to TEXT, run_id TEXT, attempt INTEGER, status TEXT, stop_reason TEXT,
    parts TEXT NOT NULL DEFAULT '[]', model_id TEXT,
    created_at REAL NOT NULL, updated_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS messages_chat ON messages(chat_id);
CREATE INDEX IF NOT EXISTS messages_run ON messages(run_id);
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY, user_id TEXT NOT NULL, chat_id TEXT NOT NULL,
    message_id TEXT NOT NULL, user_message_id TEXT NOT NULL, attempt INTEGER NOT NULL,
    kind TEXT NOT NULL, status TEXT NOT NULL, last_seq INTEGER NOT NULL DEFAULT 0,
    error TEXT, created_at REAL NOT NULL, ended_at REAL,
    events_expired INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS runs_chat ON runs(chat_id);
CREATE TABLE IF NOT EXISTS run_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL, seq INTEGER,
    data TEXT NOT NULL, created_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS run_events_run ON run_events(run_id, id);
CREATE TABLE IF NOT EXISTS chat_model_usage (
    chat_id TEXT PRIMARY KEY REFERENCES chats(id) ON DELETE CASCADE,
    used_tokens INTEGER NOT NULL, max_tokens INTEGER NOT NULL, updated_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS chat_summaries (
    chat_id TEXT PRIMARY KEY REFERENCES chats(id) ON DELETE CASCADE,
    text TEXT NOT NULL, created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS attachments (
    id TEXT PRIMARY KEY, user_id TEXT NOT NULL, name TEXT NOT NULL, size INTEGER NOT NULL,
    mime_type TEXT NOT NULL, data BLOB NOT NULL, created_at REAL NOT NULL,
    expires_at REAL NOT NULL);
"""


async def test_an_older_database_is_migrated_and_its_runs_keyed_per_user(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as old:  # NOTE: the schema before any migration
        old.executescript(FIRST_SCHEMA)
        old.execute("INSERT INTO users VALUES ('usr_a', 'ana', 0)")
        old.execute(
            "INSERT INTO chats (id, user_id, title, created_at, updated_at)"
            " VALUES ('c1', 'usr_a', 'Old', 0, 0)"
        )
        old.execute(
            "INSERT INTO runs (id, user_id, chat_id, message_id, user_message_id, attempt,"
            " kind, status, created_at) VALUES ('run_1', 'usr_a', 'c1', 'm1', 'u1', 1,"
            " 'demo', 'completed', 0)"
        )
        old.execute(
            "INSERT INTO run_events (run_id, seq, data, created_at)"
            " VALUES ('run_1', 1, '{\"type\":\"text\"}', 0)"
        )
    db = SqliteDatabase(str(path))
    try:
        assert await revision_of(db) == head_revision()
        row = await run_row(db, "usr_a", "run_1")
        assert row is not None and row["reason"] is None
        assert [frame.seq for frame in await load_frames(db, row["id"], 0)] == [1]
        found = await db.one("SELECT password_hash FROM users WHERE id = 'usr_a'")
        assert found is not None and found["password_hash"] is None
        assert (await chat_of(db, "usr_a", "c1"))["id"] == "c1", "named by its old id"
    finally:
        await db.close()
    reopened = SqliteDatabase(str(path))  # NOTE: a second start changes nothing
    try:
        assert await run_row(reopened, "usr_a", "run_1") is not None
    finally:
        await reopened.close()


async def test_user_messages_of_an_older_database_follow_the_latest_attempt_before_them(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.db"
    rows = [  # id, role, reply_to, attempt: q1, two attempts, then q2 and its answer
        ("q1", "user", None, None),
        ("a1", "assistant", "q1", 1),
        ("a1b", "assistant", "q1", 2),
        ("q2", "user", None, None),
        ("a2", "assistant", "q2", 1),
    ]
    with sqlite3.connect(path) as old:
        old.executescript(FIRST_SCHEMA)
        old.execute(
            "INSERT INTO chats (id, user_id, title, created_at, updated_at)"
            " VALUES ('c1', 'u', 't', 0, 0)"
        )
        for message_id, role, reply_to, attempt in rows:
            old.execute(
                "INSERT INTO messages (id, chat_id, role, reply_to, attempt, created_at,"
                " updated_at) VALUES (?, 'c1', ?, ?, ?, 0, 0)",
                (message_id, role, reply_to, attempt),
            )
    db = SqliteDatabase(str(path))
    try:
        parents = {row["id"]: row["reply_to"] for row in await db.all("SELECT * FROM messages")}
        assert parents == {"q1": None, "a1": "q1", "a1b": "q1", "q2": "a1b", "a2": "q2"}
    finally:
        await db.close()


async def revision_of(db: SqliteDatabase) -> str:
    row = await db.one("SELECT version_num FROM alembic_version")
    assert row is not None
    return str(row["version_num"])


async def test_a_file_part_way_through_the_old_steps_gets_only_the_steps_after_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as old:  # NOTE: the first two old steps were applied already
        old.executescript(FIRST_SCHEMA)
        old.execute("ALTER TABLE users ADD COLUMN password_hash TEXT")
        old.execute("ALTER TABLE runs ADD COLUMN reason TEXT")
        old.execute("PRAGMA user_version = 2")
        old.execute(
            "INSERT INTO users (id, name, created_at, password_hash) VALUES ('u', 'ana', 0, 'h')"
        )
    db = SqliteDatabase(str(path))  # NOTE: re-adding a column would fail: "duplicate column"
    try:
        assert await revision_of(db) == head_revision()
        row = await db.one("SELECT password_hash FROM users WHERE id = 'u'")
        assert row is not None and row["password_hash"] == "h"
    finally:
        await db.close()


async def test_a_new_file_is_made_at_the_newest_revision(tmp_path: Path) -> None:
    db = SqliteDatabase(str(tmp_path / "new.db"))
    try:
        assert await revision_of(db) == head_revision()
        columns = {row["name"] for row in await db.all("PRAGMA table_info(runs)")}
        assert {"reason", "events_expired", "last_seq"} <= columns
    finally:
        await db.close()


def test_the_revisions_run_inside_the_file_s_write_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conn = sqlite3.connect(tmp_path / "new.db", isolation_level=None)
    locked: list[bool] = []
    upgrade = migrations.command.upgrade

    def noting(config: Any, revision: str) -> None:
        locked.append(conn.in_transaction)
        upgrade(config, revision)
        locked.append(conn.in_transaction)

    monkeypatch.setattr(migrations.command, "upgrade", noting)
    migrations.upgrade_sqlite(conn)
    assert locked == [True, True], "another process could migrate the file at the same time"
    assert not conn.in_transaction
    conn.close()


def test_processes_starting_together_on_a_new_file_all_start(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.db")
    code = "import sys; from server.store.db import SqliteDatabase; SqliteDatabase(sys.argv[1])"
    starts = [
        subprocess.Popen([sys.executable, "-c", code, path], cwd=ROOT, stderr=subprocess.PIPE)
        for _ in range(3)
    ]
    failures = [p.stderr.read().decode()[-500:] for p in starts if p.wait() != 0 and p.stderr]
    assert failures == []


async def test_sessions_issued_before_are_hashed_in_place_and_still_work(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as old:
        old.executescript(FIRST_SCHEMA)
        old.execute("INSERT INTO users VALUES ('usr_a', 'ana', 0)")
        old.execute("INSERT INTO sessions VALUES ('tok-en', 'usr_a', ?)", (time.time(),))
    db = SqliteDatabase(str(path))
    try:
        rows = await db.all("SELECT token_hash FROM sessions")
        assert [row["token_hash"] for row in rows] == [token_hash("tok-en")], "no token kept"
        day = Lifetime(idle_s=86400.0, absolute_s=86400.0)
        assert await user_of_session(db, "tok-en", day) == ("usr_a", "ana"), "nobody signed out"
    finally:
        await db.close()
