"""Which exceptions are the storage failing (503 storage_unavailable) and which are bugs."""

from __future__ import annotations

import sqlite3

import pytest
from asyncpg import exceptions as pg

from server.store.faults import is_storage_failure


def _caused_by(cause: BaseException) -> BaseException:
    try:
        try:
            raise cause
        except BaseException as inner:
            raise RuntimeError("while saving") from inner
    except RuntimeError as outer:
        return outer


@pytest.mark.parametrize(
    ("error", "storage"),
    [
        pytest.param(sqlite3.OperationalError("database or disk is full"), True, id="disk-full"),
        pytest.param(
            sqlite3.OperationalError("attempt to write a readonly database"), True, id="read-only"
        ),
        pytest.param(sqlite3.OperationalError("unable to open database file"), True, id="gone"),
        pytest.param(pg.DiskFullError("could not extend file"), True, id="postgres-disk-full"),
        pytest.param(pg.ConnectionDoesNotExistError("closed"), True, id="postgres-gone"),
        pytest.param(pg.AdminShutdownError("shutting down"), True, id="postgres-shutdown"),
        pytest.param(pg.ReadOnlySQLTransactionError("read only"), True, id="postgres-read-only"),
        pytest.param(_caused_by(sqlite3.OperationalError("disk I/O error")), True, id="as-a-cause"),
        pytest.param(sqlite3.IntegrityError("UNIQUE constraint failed"), False, id="conflict"),
        pytest.param(pg.UniqueViolationError("duplicate key"), False, id="postgres-conflict"),
        pytest.param(ValueError("a bug"), False, id="a-bug"),
        pytest.param(ConnectionRefusedError("not from asyncpg"), False, id="another-socket"),
    ],
)
def test_is_storage_failure(error: BaseException, storage: bool) -> None:
    assert is_storage_failure(error) is storage
