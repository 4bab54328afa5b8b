"""Attachments: a user's uploaded files, until they expire."""

from __future__ import annotations

from server.store.db import Database, Row, SqlValue, now


async def add_attachment(db: Database, row: dict[str, SqlValue]) -> None:
    await db.insert("attachments", row)


async def attachments_of(db: Database, user_id: str, ids: list[str]) -> dict[str, Row]:
    """The user's unexpired attachments among ``ids`` (without their data), by id."""
    if not ids:
        return {}
    marks = ", ".join("?" * len(ids))
    rows = await db.all(
        f"SELECT id, name, size, mime_type FROM attachments"
        f" WHERE id IN ({marks}) AND user_id = ? AND expires_at > ?",
        (*ids, user_id, now()),
    )
    return {str(row["id"]): row for row in rows}


async def attachment_file(db: Database, attachment_id: str, user_id: str) -> Row | None:
    """The owner's unexpired file: ``name``, ``mime_type``, ``data``."""
    return await db.one(
        "SELECT name, mime_type, data FROM attachments WHERE id = ? AND user_id = ?"
        " AND expires_at > ?",
        (attachment_id, user_id, now()),
    )


async def attachment_data(db: Database, attachment_id: str) -> bytes | None:
    """An unexpired attachment's bytes (a turn already checked whose it is)."""
    row = await db.one(
        "SELECT data FROM attachments WHERE id = ? AND expires_at > ?", (attachment_id, now())
    )
    return None if row is None else bytes(row["data"])
