"""Chats: found by their owner's name for them, listed, searched, renamed, deleted with all
they hold; the compaction marks, the summary and the model's reported usage of each."""

from __future__ import annotations

from server.store.db import Database, Row, SqlValue, now


async def chat_named(db: Database, user_id: str, public_id: str) -> Row | None:
    """The user's chat named ``public_id`` (its ``id``, the key messages and runs use, is the
    same name unless another user's chat had it: migration 0009)."""
    return await db.one(
        "SELECT * FROM chats WHERE user_id = ? AND public_id = ?", (user_id, public_id)
    )


async def chats_with_name(db: Database, user_id: str, name: str) -> list[Row]:
    """In one read: the user's chat named ``name``, and any chat whose key is ``name``."""
    return await db.all(
        "SELECT * FROM chats WHERE (user_id = ? AND public_id = ?) OR id = ?",
        (user_id, name, name),
    )


async def newest_chats(db: Database, user_id: str) -> list[Row]:
    """The user's chats, the pinned ones first, each part most recently updated first."""
    return await db.all(
        "SELECT * FROM chats WHERE user_id = ?"
        " ORDER BY (pinned_at IS NULL), updated_at DESC, rowid DESC",
        (user_id,),
    )


async def chats_containing(db: Database, user_id: str, words: str) -> list[Row]:
    """The user's chats whose title or messages contain ``words`` (case-blind on both engines:
    PostgreSQL's LIKE minds case, SQLite's does not), most recently updated first."""
    pattern = like_pattern(words)
    return await db.all(
        "SELECT * FROM chats c WHERE c.user_id = ? AND (lower(c.title) LIKE lower(?) ESCAPE '\\'"
        " OR EXISTS (SELECT 1 FROM messages m WHERE m.chat_id = c.id"
        " AND lower(m.content) LIKE lower(?) ESCAPE '\\'))"
        " ORDER BY c.updated_at DESC, c.rowid DESC",
        (user_id, pattern, pattern),
    )


async def add_chat(db: Database, row: dict[str, SqlValue]) -> None:
    await db.insert("chats", row)


async def rename_chat(db: Database, key: str, title: str) -> None:
    await db.execute("UPDATE chats SET title = ? WHERE id = ?", (title, key))


async def pin_chat(db: Database, key: str, stamp: float | None) -> None:
    """Pin the chat (at ``stamp``) or, with ``None``, unpin it."""
    await db.execute("UPDATE chats SET pinned_at = ? WHERE id = ?", (stamp, key))


async def first_match(db: Database, key: str, words: str) -> str | None:
    """The text of the chat's first message containing ``words`` (as :func:`chats_containing`
    matches them), if any."""
    row = await db.one(
        "SELECT content FROM messages WHERE chat_id = ? AND lower(content) LIKE lower(?)"
        " ESCAPE '\\' ORDER BY rowid LIMIT 1",
        (key, like_pattern(words)),
    )
    return None if row is None else str(row["content"])


def like_pattern(words: str) -> str:
    """``words`` as a LIKE pattern matching them anywhere, literally."""
    return "%" + words.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


async def name_chat_if_unnamed(db: Database, key: str, title: str, unnamed: str) -> None:
    """Give the chat ``title`` if it still has the title of a chat nobody named."""
    await db.execute("UPDATE chats SET title = ? WHERE id = ? AND title = ?", (title, key, unnamed))


async def touch_chat(db: Database, key: str, stamp: float, model_id: str) -> None:
    """The chat was answered now, by ``model_id``."""
    await db.execute(
        "UPDATE chats SET updated_at = ?, last_model_id = ? WHERE id = ?", (stamp, model_id, key)
    )


async def running_run_keys(db: Database, key: str) -> list[str]:
    """The keys of the chat's runs still going."""
    rows = await db.all("SELECT id FROM runs WHERE chat_id = ? AND status = 'running'", (key,))
    return [str(row["id"]) for row in rows]


async def delete_chat(db: Database, key: str) -> None:
    """The chat and everything it holds: runs, their event logs, messages."""
    async with db.transaction():
        await db.execute(
            "DELETE FROM run_events WHERE run_id IN (SELECT id FROM runs WHERE chat_id = ?)",
            (key,),
        )
        await db.execute("DELETE FROM runs WHERE chat_id = ?", (key,))
        await db.execute("DELETE FROM messages WHERE chat_id = ?", (key,))
        await db.execute("DELETE FROM chats WHERE id = ?", (key,))


async def delete_if_empty(db: Database, key: str) -> None:
    """Drop a chat that holds no message (a first turn undone)."""
    if await db.one("SELECT 1 FROM messages WHERE chat_id = ?", (key,)) is None:
        await db.execute("DELETE FROM chats WHERE id = ?", (key,))


# --- compaction and usage ----------------------------------------------------------------------


async def compaction_of(db: Database, key: str) -> Row | None:
    """When the chat was last compacted (``compacted_at``) and its summary's tokens."""
    return await db.one("SELECT compacted_at, summary_tokens FROM chats WHERE id = ?", (key,))


async def mark_compacted(db: Database, key: str, stamp: float, summary_tokens: int) -> None:
    """The demo's compaction: the turns before ``stamp`` now count as ``summary_tokens``."""
    await db.execute(
        "UPDATE chats SET compacted_at = ?, summary_tokens = ? WHERE id = ?",
        (stamp, summary_tokens, key),
    )


async def save_summary(db: Database, key: str, text: str, stamp: float) -> None:
    """A real model's compaction: its summary replaces the turns before ``stamp``."""
    async with db.transaction():
        await db.execute(
            "INSERT INTO chat_summaries (chat_id, text, created_at) VALUES (?, ?, ?)"
            " ON CONFLICT(chat_id) DO UPDATE SET text = excluded.text,"
            " created_at = excluded.created_at",
            (key, text, stamp),
        )
        await db.execute("UPDATE chats SET compacted_at = ? WHERE id = ?", (stamp, key))


async def summary_of(db: Database, key: str) -> Row | None:
    """The chat's summary (``text``) and when it was made (``compacted_at``)."""
    return await db.one(
        "SELECT s.text, c.compacted_at FROM chat_summaries s JOIN chats c ON c.id = s.chat_id"
        " WHERE s.chat_id = ?",
        (key,),
    )


async def save_model_usage(db: Database, key: str, used_tokens: int, max_tokens: int) -> None:
    """The usage a real model reported for the chat's last turn."""
    await db.execute(
        "INSERT INTO chat_model_usage (chat_id, used_tokens, max_tokens, updated_at)"
        " VALUES (?, ?, ?, ?) ON CONFLICT(chat_id) DO UPDATE SET"
        " used_tokens = excluded.used_tokens, max_tokens = excluded.max_tokens,"
        " updated_at = excluded.updated_at",
        (key, used_tokens, max_tokens, now()),
    )


async def model_usage_of(db: Database, key: str) -> Row | None:
    """The usage a real model last reported for the chat (``used_tokens``, ``max_tokens``)."""
    return await db.one(
        "SELECT used_tokens, max_tokens FROM chat_model_usage WHERE chat_id = ?", (key,)
    )
