"""Which exceptions mean "the storage failed" rather than "the code is wrong".

A full disk, a file made read-only, a database file or server that is gone: the request could
not be stored, nothing stored was lost, and the same request may succeed once the operator
frees space (SQLite: ``OperationalError`` — "database or disk is full", "attempt to write a
readonly database", "unable to open database file", "disk I/O error", "database is locked";
PostgreSQL: a lost or refused connection, ``DiskFullError``, ``ReadOnlySQLTransactionError``,
a server shutting down). Such failures are answered ``503 storage_unavailable`` before a
stream (server.http.storage) and end a running answer with an ``error`` event of that code
(server.runs.unstored); any other exception stays a bug.
"""

from __future__ import annotations

import sqlite3

RETRY_AFTER_S = 10


def _postgres_failures() -> tuple[type[BaseException], ...]:
    try:
        from asyncpg import exceptions as pg
    except ImportError:  # pragma: no cover - asyncpg is a pinned dependency
        return ()
    return (
        pg.PostgresConnectionError,
        pg.CannotConnectNowError,
        pg.DiskFullError,
        pg.InsufficientResourcesError,
        pg.ReadOnlySQLTransactionError,
        pg.AdminShutdownError,
        pg.CrashShutdownError,
    )


_FAILURES: tuple[type[BaseException], ...] = (sqlite3.OperationalError, *_postgres_failures())


def is_storage_failure(error: BaseException) -> bool:
    """``error`` (or what caused it) is the storage failing, not a bug."""
    seen: BaseException | None = error
    for _ in range(8):  # NOTE: a few causes deep, never a cycle
        if seen is None:
            return False
        if isinstance(seen, _FAILURES) or (isinstance(seen, OSError) and _from_postgres(error)):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _from_postgres(error: BaseException) -> bool:
    """An ``OSError`` raised while asyncpg connects (the server is gone)."""
    traceback = error.__traceback__
    while traceback is not None:
        if "asyncpg" in traceback.tb_frame.f_code.co_filename:
            return True
        traceback = traceback.tb_next
    return False
