"""An imported chat stored whole, or not at all (server/turns/chat_import.py makes its rows)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from server.store.db import Database, SqlValue

Rows = Sequence[Mapping[str, SqlValue]]


async def add_imported_chat(
    db: Database, chat: Mapping[str, SqlValue], messages: Rows, runs: Rows
) -> None:
    """The chat, its messages (in the file's order) and its ended runs, in one transaction."""
    async with db.transaction():
        await db.insert("chats", chat)
        for message in messages:
            await db.insert("messages", message)
        for run in runs:
            await db.insert("runs", run)
