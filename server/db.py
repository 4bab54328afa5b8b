"""SQLite access: one connection, the schema, and small typed helpers.

# NOTE: calls are short and run on the event loop thread. WAL with synchronous=NORMAL keeps a
# commit per event cheap, and autocommit mode makes every single statement durable at once.
# Several server processes may share one file (``--redis-url``): WAL lets readers run beside
# the one writer, and a writer that finds the file locked waits up to ``BUSY_TIMEOUT_MS``.
"""

from __future__ import annotations

import secrets
import sqlite3
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime

SqlValue = str | int | float | bytes | None
BUSY_TIMEOUT_MS = 5000
Row = sqlite3.Row

SCHEMA = """
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


# NOTE: appended to, never edited: a database at version N runs the steps after N on start.
MIGRATIONS: tuple[str, ...] = (
    "ALTER TABLE users ADD COLUMN password_hash TEXT",
    "ALTER TABLE runs ADD COLUMN reason TEXT",
    # NOTE: runs are keyed per user (server.runs.log.run_key), events follow their run.
    "UPDATE run_events SET run_id = (SELECT r.user_id || '/' || r.id FROM runs r"
    " WHERE r.id = run_events.run_id) WHERE run_id IN (SELECT id FROM runs)",
    "UPDATE runs SET id = user_id || '/' || id WHERE instr(id, '/') = 0",
    # NOTE: messages form a tree (edits branch): a user message follows the answer shown
    # before it, which in a chat stored before branches is the latest attempt of the prompt
    # before it.
    "UPDATE messages SET reply_to = (SELECT a.id FROM messages a WHERE a.chat_id ="
    " messages.chat_id AND a.role = 'assistant' AND a.reply_to = (SELECT p.id FROM messages p"
    " WHERE p.chat_id = messages.chat_id AND p.role = 'user' AND p.rowid < messages.rowid"
    " ORDER BY p.rowid DESC LIMIT 1) ORDER BY a.attempt DESC, a.rowid DESC LIMIT 1)"
    " WHERE role = 'user' AND reply_to IS NULL",
    "CREATE INDEX IF NOT EXISTS messages_parent ON messages(reply_to)",
    # NOTE: every process looks for running runs (lost owners, per-user limits) now and then.
    "CREATE INDEX IF NOT EXISTS runs_status ON runs(status, user_id)",
)


def new_id(prefix: str) -> str:
    """A random id such as ``chat_3f9a…``."""
    return f"{prefix}_{secrets.token_hex(8)}"


def now() -> float:
    """Wall-clock seconds (persisted timestamps)."""
    return time.time()


def iso(ts: float) -> str:
    """A persisted timestamp as ISO 8601 UTC with millisecond precision."""
    text = datetime.fromtimestamp(ts, tz=UTC).isoformat(timespec="milliseconds")
    return text.replace("+00:00", "Z")


class Database:
    """One SQLite connection in autocommit mode, with the schema applied."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.conn.row_factory = sqlite3.Row
        self.conn.execute("PRAGMA foreign_keys = ON")
        self.conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if path != ":memory:":
            self.conn.execute("PRAGMA journal_mode = WAL")
            self.conn.execute("PRAGMA synchronous = NORMAL")
        self.conn.executescript(SCHEMA)
        self._migrate()

    def _migrate(self) -> None:
        """Bring an older database up to ``MIGRATIONS`` (``PRAGMA user_version`` counts them).

        # NOTE: the version is read inside the write transaction: two processes starting on one
        # file together apply each step once.
        """
        with self.transaction():
            version = int(self.conn.execute("PRAGMA user_version").fetchone()[0])
            for statement in MIGRATIONS[version:]:
                self.conn.execute(statement)
            if version < len(MIGRATIONS):
                self.conn.execute(f"PRAGMA user_version = {len(MIGRATIONS)}")

    def close(self) -> None:
        self.conn.close()

    def execute(self, sql: str, params: Sequence[SqlValue] = ()) -> int:
        """Run one statement; returns the number of changed rows."""
        return self.conn.execute(sql, params).rowcount

    def last_row_id(self) -> int:
        """The row id of the last row this connection inserted."""
        return int(self.conn.execute("SELECT last_insert_rowid()").fetchone()[0])

    def insert(self, table: str, values: Mapping[str, SqlValue]) -> None:
        """Insert one row; ``table`` and the column names come from code, never from input."""
        names, marks = ", ".join(values), ", ".join("?" * len(values))
        self.conn.execute(f"INSERT INTO {table} ({names}) VALUES ({marks})", tuple(values.values()))

    def one(self, sql: str, params: Sequence[SqlValue] = ()) -> Row | None:
        row: Row | None = self.conn.execute(sql, params).fetchone()
        return row

    def all(self, sql: str, params: Sequence[SqlValue] = ()) -> list[Row]:
        return list(self.conn.execute(sql, params).fetchall())

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Several statements as one atomic unit."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")
