"""A database written by an older Riacho is brought up to date on start, losing nothing."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from server.db import MIGRATIONS, SCHEMA, Database
from server.runs.log import load_frames, run_row


def test_an_older_database_is_migrated_and_its_runs_keyed_per_user(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as old:  # NOTE: the schema before any migration
        old.executescript(SCHEMA)
        old.execute("INSERT INTO users VALUES ('usr_a', 'ana', 0)")
        old.execute(
            "INSERT INTO runs (id, user_id, chat_id, message_id, user_message_id, attempt,"
            " kind, status, created_at) VALUES ('run_1', 'usr_a', 'c1', 'm1', 'u1', 1,"
            " 'demo', 'completed', 0)"
        )
        old.execute(
            "INSERT INTO run_events (run_id, seq, data, created_at)"
            " VALUES ('run_1', 1, '{\"type\":\"text\"}', 0)"
        )
    db = Database(str(path))
    try:
        assert db.one("PRAGMA user_version")[0] == len(MIGRATIONS)
        row = run_row(db, "usr_a", "run_1")
        assert row is not None and row["reason"] is None
        assert [frame.seq for frame in load_frames(db, row["id"], 0)] == [1]
        assert db.one("SELECT password_hash FROM users WHERE id = 'usr_a'")[0] is None
    finally:
        db.close()
    reopened = Database(str(path))  # NOTE: a second start changes nothing
    try:
        assert run_row(reopened, "usr_a", "run_1") is not None
    finally:
        reopened.close()


def test_user_messages_of_an_older_database_follow_the_latest_attempt_before_them(
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
        old.executescript(SCHEMA)
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
    db = Database(str(path))
    try:
        parents = dict(db.all("SELECT id, reply_to FROM messages"))
        assert parents == {"q1": None, "a1": "q1", "a1b": "q1", "q2": "a1b", "a2": "q2"}
    finally:
        db.close()
