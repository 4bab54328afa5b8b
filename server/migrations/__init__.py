"""Schema migrations for both engines: Alembic revisions in ``versions/``, run at start.

A database written before Alembic (SQLite counting its steps in ``PRAGMA user_version``) is
stamped at the revision that matches its count, then upgraded like any other.

# NOTE: every start upgrades to the newest revision inside one lock, so several processes
# starting together on one database apply each revision once: SQLite's write transaction on
# the file, PostgreSQL's transaction-level advisory lock.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import sqlalchemy
from alembic.config import Config
from alembic.runtime.environment import EnvironmentContext
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.pool import StaticPool

HERE = Path(__file__).resolve().parent
#: the revision a pre-Alembic SQLite file is at, by its ``user_version`` (0001 made its tables;
#: 0002… are the steps it counted)
LEGACY_REVISIONS: tuple[str, ...] = (
    "0001",
    "0002",
    "0003",
    "0004",
    "0005",
    "0006",
    "0007",
    "0008",
)
#: any number, the same in every process: PostgreSQL's lock for running migrations
ADVISORY_LOCK = 0x52_69_61_63_68_6F


def _config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(HERE))
    return config


def script_directory() -> ScriptDirectory:
    return ScriptDirectory.from_config(_config())


def upgrade(connection: sqlalchemy.Connection) -> None:
    """Run every revision past the database's current one (on a connection in a transaction)."""
    config = _config()
    script = ScriptDirectory.from_config(config)

    def steps(revision: Any, _context: MigrationContext) -> Any:
        return script._upgrade_revs("head", revision)

    with EnvironmentContext(config, script, fn=steps, destination_rev="head") as env:
        env.configure(connection=connection, transaction_per_migration=False)
        env.run_migrations()


def current_revision(connection: sqlalchemy.Connection) -> str | None:
    return MigrationContext.configure(connection).get_current_revision()


def head_revision() -> str:
    head = script_directory().get_current_head()
    assert head is not None
    return head


def upgrade_sqlite(conn: sqlite3.Connection) -> None:
    """Bring a SQLite database (an open autocommit connection) up to the newest revision."""
    engine = sqlalchemy.create_engine("sqlite://", creator=lambda: conn, poolclass=StaticPool)
    conn.execute("BEGIN IMMEDIATE")
    try:
        with engine.connect() as connection:
            _stamp_legacy_sqlite(conn, connection)
            upgrade(connection)
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    if conn.in_transaction:
        conn.execute("COMMIT")


def _stamp_legacy_sqlite(conn: sqlite3.Connection, connection: sqlalchemy.Connection) -> None:
    """Mark a file made before Alembic with the revision its ``user_version`` stands for."""
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if "chats" not in tables or "alembic_version" in tables:
        return
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    revision = LEGACY_REVISIONS[min(version, len(LEGACY_REVISIONS) - 1)]
    MigrationContext.configure(connection).stamp(script_directory(), revision)


async def upgrade_postgres(url: str) -> None:
    """Bring a PostgreSQL database up to the newest revision (asyncpg through SQLAlchemy)."""
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(_sqlalchemy_url(url))
    try:
        async with engine.begin() as connection:
            await connection.execute(
                sqlalchemy.text(f"SELECT pg_advisory_xact_lock({ADVISORY_LOCK})")
            )
            await connection.run_sync(upgrade)
    finally:
        await engine.dispose()


def _sqlalchemy_url(url: str) -> str:
    """``postgresql://…`` as SQLAlchemy's name for the same database through asyncpg."""
    rest = url.split("://", 1)[1]
    return f"postgresql+asyncpg://{rest}"
