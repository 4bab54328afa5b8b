"""The database: SQLite (the default, one file) or PostgreSQL (``--db postgresql://…``).

Both engines sit behind one async interface (:class:`Database`) and take the same SQL: ``?``
placeholders, which the PostgreSQL side numbers (``$1``…) for asyncpg. The schema and its
changes are Alembic revisions (``server/store/migrations``) that run on both engines at start.

# NOTE: SQLite calls are short and run on the event loop thread, as they always did: its
# methods never suspend, so a transaction is never interleaved with another task's statements.
# WAL with synchronous=NORMAL keeps a commit per event cheap, and autocommit mode makes every
# single statement durable at once. Several processes may share one file (``--redis-url``):
# a writer that finds it locked waits up to ``BUSY_TIMEOUT_MS``.
"""

from __future__ import annotations

import asyncio
import contextvars
import re
import secrets
import sqlite3
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import asyncpg

SqlValue = str | int | float | bytes | None
BUSY_TIMEOUT_MS = 5000
POOL_MAX = 20


class Conflict(Exception):
    """A write met a row of the same unique key (another request wrote it first)."""


class Row(Protocol):
    """A result row: columns by name (``row["id"]``) or position; ``dict(row)`` works."""

    def __getitem__(self, key: str, /) -> Any: ...

    def keys(self) -> Iterable[str]: ...


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


def is_postgres_url(target: str) -> bool:
    return target.startswith(("postgresql://", "postgres://"))


class Database(ABC):
    """One database: statements, single-row and all-row reads, transactions."""

    #: appended to a ``SELECT`` that reads a row the transaction then changes (PostgreSQL
    #: locks it; SQLite's write transaction already holds the whole file)
    for_update: str = ""
    #: the same for a row read only to decide whether to write elsewhere
    for_share: str = ""

    @abstractmethod
    async def open(self) -> None:
        """Connect and bring the schema up to date."""

    @abstractmethod
    async def close(self) -> None: ...

    @abstractmethod
    async def execute(self, sql: str, params: Sequence[SqlValue] = ()) -> int:
        """Run one statement; returns the number of changed rows."""

    @abstractmethod
    async def one(self, sql: str, params: Sequence[SqlValue] = ()) -> Row | None: ...

    @abstractmethod
    async def all(self, sql: str, params: Sequence[SqlValue] = ()) -> list[Row]: ...

    @abstractmethod
    def transaction(self) -> AbstractAsyncContextManager[None]:
        """Several statements as one atomic unit (``async with db.transaction():``)."""

    @abstractmethod
    async def insert_id(self, sql: str, params: Sequence[SqlValue] = ()) -> int | None:
        """Run one ``INSERT`` into a table whose key is an ``id`` the database assigns; that id,
        or ``None`` when the statement inserted no row."""

    async def insert(self, table: str, values: Mapping[str, SqlValue]) -> None:
        """Insert one row; ``table`` and the column names come from code, never from input."""
        names, marks = ", ".join(values), ", ".join("?" * len(values))
        await self.execute(
            f"INSERT INTO {table} ({names}) VALUES ({marks})", tuple(values.values())
        )


TABLES_OF_USERS = ("run_events", "runs", "messages", "chats", "attachments", "sessions", "users")
"""Every table of what users made, children first."""


async def wipe(db: Database) -> None:
    """Delete every user and all they made (the test hooks' reset)."""
    async with db.transaction():
        for table in TABLES_OF_USERS:
            await db.execute(f"DELETE FROM {table}")


def open_database(target: str) -> Database:
    """The database named by ``--db``: a PostgreSQL URL, else a SQLite path (or ``:memory:``)."""
    if is_postgres_url(target):
        return PostgresDatabase(target)
    return SqliteDatabase(target)


class SqliteDatabase(Database):
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
        from server.store.migrations import upgrade_sqlite

        upgrade_sqlite(self.conn)

    async def open(self) -> None:
        """Nothing left to do: the file was opened and upgraded on construction."""

    async def close(self) -> None:
        self.conn.close()

    async def execute(self, sql: str, params: Sequence[SqlValue] = ()) -> int:
        try:
            return self.conn.execute(sql, params).rowcount
        except sqlite3.IntegrityError as error:
            if str(error).startswith("UNIQUE"):
                raise Conflict(str(error)) from error
            raise

    async def one(self, sql: str, params: Sequence[SqlValue] = ()) -> Row | None:
        row: sqlite3.Row | None = self.conn.execute(sql, params).fetchone()
        return row

    async def insert_id(self, sql: str, params: Sequence[SqlValue] = ()) -> int | None:
        # NOTE: the cursor knows the row id: cheaper than RETURNING (a quarter of an append)
        cursor = self.conn.execute(sql, params)
        return cursor.lastrowid if cursor.rowcount == 1 else None

    async def all(self, sql: str, params: Sequence[SqlValue] = ()) -> list[Row]:
        return list(self.conn.execute(sql, params).fetchall())

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")


class PostgresDatabase(Database):
    """A pool of asyncpg connections; a transaction holds one connection for its task."""

    for_update = " FOR UPDATE"
    for_share = " FOR SHARE"

    def __init__(self, url: str) -> None:
        self.url = url
        self._pool: asyncpg.Pool[Any] | None = None
        # NOTE: the connection of the transaction the current task is in. A task started
        # inside a transaction inherits this context but not the transaction: the owning task
        # is kept with it.
        self._transaction: contextvars.ContextVar[_Held | None] = contextvars.ContextVar(
            f"riacho_transaction_{id(self)}", default=None
        )

    async def open(self) -> None:
        import asyncpg

        from server.store.migrations import upgrade_postgres

        await upgrade_postgres(self.url)
        self._pool = await asyncpg.create_pool(self.url, min_size=1, max_size=POOL_MAX)

    @property
    def pool(self) -> asyncpg.Pool[Any]:
        if self._pool is None:
            raise RuntimeError("PostgreSQL database used before open()")
        return self._pool

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()

    def _held(self) -> asyncpg.Connection[Any] | None:
        """The connection of this task's transaction, if it is in one."""
        held = self._transaction.get()
        return held.conn if held is not None and held.task is asyncio.current_task() else None

    async def execute(self, sql: str, params: Sequence[SqlValue] = ()) -> int:
        from asyncpg import UniqueViolationError  # NOTE: imported already by open()

        conn = self._held()
        try:
            if conn is not None:
                status = await conn.execute(numbered(sql), *params)
            else:
                status = await self.pool.execute(numbered(sql), *params)
        except UniqueViolationError as error:
            raise Conflict(str(error)) from error
        return _changed_rows(status)

    async def one(self, sql: str, params: Sequence[SqlValue] = ()) -> Row | None:
        conn = self._held()
        if conn is not None:
            row: Row | None = await conn.fetchrow(numbered(sql), *params)
        else:
            row = await self.pool.fetchrow(numbered(sql), *params)
        return row

    async def insert_id(self, sql: str, params: Sequence[SqlValue] = ()) -> int | None:
        row = await self.one(sql + " RETURNING id", params)
        return None if row is None else int(row["id"])

    async def all(self, sql: str, params: Sequence[SqlValue] = ()) -> list[Row]:
        conn = self._held()
        if conn is not None:
            return list(await conn.fetch(numbered(sql), *params))
        return list(await self.pool.fetch(numbered(sql), *params))

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        if self._held() is not None:
            raise RuntimeError("nested transaction")
        async with self.pool.acquire() as conn, conn.transaction():
            token = self._transaction.set(_Held(asyncio.current_task(), conn))
            try:
                yield
            finally:
                self._transaction.reset(token)


@dataclass(frozen=True, slots=True)
class _Held:
    task: asyncio.Task[Any] | None
    conn: asyncpg.Connection[Any]


_PLACEHOLDER = re.compile(r"'(?:[^']|'')*'|\?")


@lru_cache(maxsize=512)
def numbered(sql: str) -> str:
    """``?`` placeholders as PostgreSQL's ``$1``, ``$2``… (none inside string literals)."""
    count = 0

    def number(match: re.Match[str]) -> str:
        nonlocal count
        if match.group() != "?":
            return match.group()
        count += 1
        return f"${count}"

    return _PLACEHOLDER.sub(number, sql)


def _changed_rows(status: str) -> int:
    """The row count of a command tag such as ``UPDATE 3`` or ``INSERT 0 1`` (else 0)."""
    last = status.rsplit(" ", 1)[-1]
    return int(last) if last.isdigit() else 0
