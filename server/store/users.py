"""Users and their sessions: found by name, made on first sight, given a password, removed
with everything they own."""

from __future__ import annotations

from server.store.db import Database, new_id, now


async def find_user(db: Database, name: str) -> tuple[str, str | None] | None:
    """(id, password hash) of the user named ``name``."""
    row = await db.one("SELECT id, password_hash FROM users WHERE name = ?", (name,))
    return (str(row["id"]), row["password_hash"]) if row else None


async def ensure_user(db: Database, name: str, password_hash: str | None = None) -> str:
    """The id of the user named ``name``, created if missing.

    # NOTE: two first requests of one name may race (two processes, or two tasks on
    # PostgreSQL): the second insert yields to the first, and both read its id.
    """
    found = await find_user(db, name)
    if found is None:
        await db.execute(
            "INSERT INTO users (id, name, created_at, password_hash) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (name) DO NOTHING",
            (new_id("usr"), name, now(), password_hash),
        )
        found = await find_user(db, name)
    assert found is not None  # NOTE: only `users remove` deletes one, never mid-request
    return found[0]


async def account_names(db: Database) -> list[str]:
    """The names of the users who have a password, in order."""
    rows = await db.all("SELECT name FROM users WHERE password_hash IS NOT NULL ORDER BY name")
    return [str(row["name"]) for row in rows]


async def set_password(db: Database, user_id: str, password_hash: str) -> None:
    """A new password; every session of the user ends."""
    await db.execute("UPDATE users SET password_hash = ? WHERE id = ?", (password_hash, user_id))
    await db.execute("DELETE FROM sessions WHERE user_id = ?", (user_id,))


async def remove_user(db: Database, user_id: str) -> None:
    """The user and everything they own: runs and events, chats and messages, attachments,
    sessions."""
    async with db.transaction():
        for statement in (
            "DELETE FROM run_events WHERE run_id IN (SELECT id FROM runs WHERE user_id = ?)",
            "DELETE FROM runs WHERE user_id = ?",
            "DELETE FROM messages WHERE chat_id IN (SELECT id FROM chats WHERE user_id = ?)",
            "DELETE FROM chats WHERE user_id = ?",
            "DELETE FROM attachments WHERE user_id = ?",
            "DELETE FROM sessions WHERE user_id = ?",
            "DELETE FROM users WHERE id = ?",
        ):
            await db.execute(statement, (user_id,))


async def user_of_session(db: Database, token: str) -> tuple[str, str] | None:
    """(id, name) of the user whose session ``token`` is."""
    row = await db.one(
        "SELECT u.id, u.name FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.token = ?",
        (token,),
    )
    return (str(row["id"]), str(row["name"])) if row else None


async def open_session(db: Database, token: str, user_id: str) -> None:
    await db.insert("sessions", {"token": token, "user_id": user_id, "created_at": now()})


async def end_session(db: Database, token: str) -> None:
    await db.execute("DELETE FROM sessions WHERE token = ?", (token,))
