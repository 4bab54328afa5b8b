"""Users and their sessions: found by name, made on first sight, given a password, removed
with everything they own. A session is kept by its token's sha256 and ends when unused for its
idle lifetime or older than its absolute one."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from server.store.db import Database, new_id, now

_SEEN_EVERY_S = 60.0  # a session's last use is written at most this often


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


@dataclass(frozen=True, slots=True)
class Lifetime:
    """How long a session lives: ``idle_s`` unused, ``absolute_s`` at most."""

    idle_s: float
    absolute_s: float

    def over(self, created_at: float, last_seen_at: float, at: float) -> bool:
        return at - last_seen_at > self.idle_s or at - created_at > self.absolute_s


def token_hash(token: str) -> str:
    """What the database keeps of a session token (a copy of it holds no live session)."""
    return hashlib.sha256(token.encode()).hexdigest()


async def user_of_session(db: Database, token: str, lifetime: Lifetime) -> tuple[str, str] | None:
    """(id, name) of the user whose live session ``token`` is; an ended one is dropped."""
    row = await db.one(
        "SELECT u.id, u.name, s.created_at, s.last_seen_at FROM sessions s"
        " JOIN users u ON u.id = s.user_id WHERE s.token_hash = ?",
        (token_hash(token),),
    )
    if row is None:
        return None
    at = now()
    if lifetime.over(row["created_at"], row["last_seen_at"], at):
        await end_session(db, token)
        return None
    if at - row["last_seen_at"] > _SEEN_EVERY_S:  # NOTE: not a write per request
        await db.execute(
            "UPDATE sessions SET last_seen_at = ? WHERE token_hash = ?", (at, token_hash(token))
        )
    return str(row["id"]), str(row["name"])


async def open_session(db: Database, token: str, user_id: str) -> None:
    at = now()
    await db.insert(
        "sessions",
        {"token_hash": token_hash(token), "user_id": user_id, "created_at": at, "last_seen_at": at},
    )


async def end_session(db: Database, token: str) -> None:
    await db.execute("DELETE FROM sessions WHERE token_hash = ?", (token_hash(token),))


async def end_sessions_of(db: Database, user_id: str) -> int:
    """Every session of the user ends ("sign out everywhere"); how many there were."""
    return await db.execute("DELETE FROM sessions WHERE user_id = ?", (user_id,))


async def expire_sessions(db: Database, lifetime: Lifetime) -> int:
    """Sessions past their lifetime are deleted (the sweep); how many."""
    at = now()
    return await db.execute(
        "DELETE FROM sessions WHERE last_seen_at < ? OR created_at < ?",
        (at - lifetime.idle_s, at - lifetime.absolute_s),
    )
