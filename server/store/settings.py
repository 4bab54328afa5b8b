"""Each user's settings: one JSON object per user (migration 0013)."""

from __future__ import annotations

from server.store.db import Database, now


async def settings_data(db: Database, user_id: str) -> str | None:
    """The user's stored settings (JSON text), if they ever saved any."""
    row = await db.one("SELECT data FROM user_settings WHERE user_id = ?", (user_id,))
    return None if row is None else str(row["data"])


async def save_settings(db: Database, user_id: str, data: str) -> None:
    await db.execute(
        "INSERT INTO user_settings (user_id, data, updated_at) VALUES (?, ?, ?)"
        " ON CONFLICT(user_id) DO UPDATE SET data = excluded.data,"
        " updated_at = excluded.updated_at",
        (user_id, data, now()),
    )
