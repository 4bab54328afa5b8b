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

import sqlalchemy
from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy.pool import StaticPool

HERE = Path(__file__).resolve().parent
#: how many steps a pre-Alembic SQLite file could count in its ``user_version``: revision 0001
#: made its tables, 0002… are those steps, so a file at version N is at revision N + 1
LEGACY_STEPS = 7
#: any number, the same in every process: PostgreSQL's lock for running migrations
ADVISORY_LOCK = 0x52_69_61_63_68_6F


def _config(connection: sqlalchemy.Connection | None = None) -> Config:
    """Alembic's settings; ``env.py`` runs the commands on ``connection``."""
    config = Config()
    config.set_main_option("script_location", str(HERE))
    config.attributes["connection"] = connection
    return config


def upgrade(connection: sqlalchemy.Connection) -> None:
    """Run every revision past the database's current one (on a connection in a transaction)."""
    command.upgrade(_config(connection), "head")


def head_revision() -> str:
    head = ScriptDirectory.from_config(_config()).get_current_head()
    assert head is not None
    return head


def upgrade_sqlite(conn: sqlite3.Connection) -> None:
    """Bring a SQLite database (an open autocommit connection) up to the newest revision."""
    engine = sqlalchemy.create_engine("sqlite://", creator=lambda: conn, poolclass=StaticPool)
    # NOTE: the write lock is taken once SQLAlchemy holds the connection (its checkout rolls
    # back whatever was open) and inside its transaction, which issues no BEGIN of its own over
    # an autocommit connection: so Alembic sees a transaction it does not own, and the one
    # commit at the end of the block releases the lock after the last revision.
    with engine.connect() as connection, connection.begin():
        conn.execute("BEGIN IMMEDIATE")
        _stamp_legacy_sqlite(conn, connection)
        upgrade(connection)


def _stamp_legacy_sqlite(conn: sqlite3.Connection, connection: sqlalchemy.Connection) -> None:
    """Mark a file made before Alembic with the revision its ``user_version`` stands for."""
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if "chats" not in tables or "alembic_version" in tables:
        return
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    revision = f"{min(version, LEGACY_STEPS) + 1:04d}"
    command.stamp(_config(connection), revision)


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
