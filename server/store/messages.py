"""Messages: the tree of a chat (a user message follows the answer it was sent after, an answer
replies to its user message, one per attempt), the rows a turn creates, each answer's model
steps."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

from server.store.db import Database, Row, SqlValue, iso
from server.store.runlog import RUN_KEY_SQL


async def chat_message_rows(db: Database, chat_key: str) -> list[Row]:
    """The chat's messages in order, each answer with its run's ending (``run_reason``,
    ``run_error``)."""
    run_key = RUN_KEY_SQL.format(user="c.user_id", run="m.run_id")
    return await db.all(
        "SELECT m.*, r.reason AS run_reason, r.error AS run_error FROM messages m"
        f" JOIN chats c ON c.id = m.chat_id LEFT JOIN runs r ON r.id = {run_key}"
        " WHERE m.chat_id = ? ORDER BY m.rowid",
        (chat_key,),
    )


async def messages_by_id(db: Database, chat_key: str) -> dict[str, Row]:
    """Every message of the chat, by id (to walk its tree)."""
    return {
        row["id"]: row
        for row in await db.all("SELECT * FROM messages WHERE chat_id = ?", (chat_key,))
    }


async def newest_answer_id(db: Database, chat_key: str) -> str | None:
    """The id of the chat's newest answer."""
    row = await db.one(
        "SELECT id FROM messages WHERE chat_id = ? AND role = 'assistant'"
        " ORDER BY rowid DESC LIMIT 1",
        (chat_key,),
    )
    return None if row is None else str(row["id"])


async def message_row(db: Database, message_id: str) -> Row | None:
    return await db.one("SELECT * FROM messages WHERE id = ?", (message_id,))


async def has_messages(db: Database, chat_key: str) -> bool:
    return await db.one("SELECT 1 FROM messages WHERE chat_id = ?", (chat_key,)) is not None


async def next_attempt(db: Database, user_message_id: str) -> int:
    """The attempt number of a new answer to ``user_message_id``."""
    row = await db.one(
        "SELECT MAX(attempt) AS a FROM messages WHERE reply_to = ?", (user_message_id,)
    )
    return int(row["a"] or 0) + 1 if row else 1


async def add_turn_rows(
    db: Database,
    chat: dict[str, SqlValue] | None,
    prompt: dict[str, SqlValue],
    answer: dict[str, SqlValue],
    run: dict[str, SqlValue],
    then: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """A turn's rows in one transaction: its chat (when the turn makes it), its user message
    (unless it is stored already: a retry), its answer and its run; ``then``, in the same
    transaction."""
    async with db.transaction():
        if chat is not None:
            await db.insert("chats", chat)
        if await message_row(db, str(prompt["id"])) is None:
            await db.insert("messages", prompt)
        await db.insert("messages", answer)
        await db.insert("runs", run)
        if then is not None:
            await then()


async def delete_turn_rows(
    db: Database, run_key: str, answer_id: str, prompt_id: str | None, chat_key: str | None
) -> None:
    """Undo :func:`add_turn_rows`: the run, its events, the answer, and (when given) the user
    message and the chat, if it then holds nothing."""
    async with db.transaction():
        await db.execute("DELETE FROM run_events WHERE run_id = ?", (run_key,))
        await db.execute("DELETE FROM runs WHERE id = ?", (run_key,))
        await db.execute("DELETE FROM messages WHERE id = ?", (answer_id,))
        if prompt_id is not None:
            await db.execute("DELETE FROM messages WHERE id = ?", (prompt_id,))
        if chat_key is not None and not await has_messages(db, chat_key):
            await db.execute("DELETE FROM chats WHERE id = ?", (chat_key,))


async def save_steps(db: Database, answer_id: str, steps: list[dict[str, object]]) -> None:
    """The records of the model calls an answer made so far."""
    await db.execute("UPDATE messages SET steps = ? WHERE id = ?", (json.dumps(steps), answer_id))


async def answer_stamp(db: Database, answer_id: str) -> dict[str, str]:
    """What a terminal event says of its answer, as the chat read will: its stored time
    (``created_at``) and model (``model_id``); empty if the answer is not stored."""
    row = await db.one("SELECT created_at, model_id FROM messages WHERE id = ?", (answer_id,))
    if row is None:
        return {}
    stamp = {"created_at": iso(row["created_at"])}
    return stamp | ({"model_id": str(row["model_id"])} if row["model_id"] else {})
