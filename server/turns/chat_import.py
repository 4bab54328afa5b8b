"""A chat file made into a new chat's rows (``POST /api/chats/import``).

Nothing from the file names a row: the chat, every message, run and attachment gets a new id,
and the tree is linked again through them. Each answer's run is stored ended, with the status,
reason and error the file says (a run still going when it was exported is ``interrupted``), and
its event log marked gone, so a resume answers ``410 events_expired`` and offers Regenerate.
Tool calls keep the effects the file shows; they never run again (no ledger row is made).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from app.wire.chat_file import ImportedChat, ImportedMessage
from app.wire.parts import Part, parts_to_json
from server.store.db import SqlValue, new_id, now
from server.store.runlog import run_key

Rows = list[dict[str, SqlValue]]
UNNAMED = "Imported chat"


@dataclass(slots=True)
class ImportRows:
    """The rows of an imported chat, in the order they are inserted."""

    chat: dict[str, SqlValue]
    messages: Rows = field(default_factory=list)
    runs: Rows = field(default_factory=list)


def import_rows(user_id: str, chat: ImportedChat, parts: list[tuple[Part, ...]]) -> ImportRows:
    """Every row of the new chat; the file's ids are replaced, its links kept."""
    stamp, key = now(), new_id("chat")
    title = " ".join(chat.title.split())[:200] or UNNAMED
    rows = ImportRows(
        {
            "id": key,
            "public_id": key,
            "user_id": user_id,
            "title": title,
            "created_at": stamp,
            "updated_at": stamp,
            "last_model_id": chat.model_id,
        }
    )
    ids = {message.id: new_id("msg") for message in chat.messages}
    for message, its_parts in zip(chat.messages, parts, strict=True):
        row: dict[str, SqlValue] = {
            "id": ids[message.id],
            "chat_id": key,
            "role": message.role,
            "reply_to": None if message.parent_id is None else ids[message.parent_id],
            "content": message.text,
            "created_at": stamp,
            "updated_at": stamp,
        }
        if message.role == "user":
            row["attachments"] = _attachments(message)
        else:
            run = _run(user_id, key, row, message, stamp)
            rows.runs.append(run)
            row |= {
                "run_id": str(run["id"]).split("/", 1)[1],
                "attempt": message.attempt,
                "status": run["status"],
                "stop_reason": message.stop_reason,
                "model_id": message.model_id,
                "parts": json.dumps(parts_to_json(its_parts)),
            }
        rows.messages.append(row)
    return rows


def _attachments(message: ImportedMessage) -> str:
    """The files listed on a prompt (the file holds their names, not their bytes)."""
    listed = [
        {**attachment.model_dump(by_alias=True), "attachmentId": new_id("att")}
        for attachment in message.attachments
    ]
    return json.dumps(listed)


def _run(
    user_id: str, chat_key: str, answer: dict[str, SqlValue], message: ImportedMessage, stamp: float
) -> dict[str, SqlValue]:
    status = "interrupted" if message.status == "running" else message.status
    return {
        "id": run_key(user_id, new_id("run")),
        "user_id": user_id,
        "chat_id": chat_key,
        "message_id": answer["id"],
        "user_message_id": answer["reply_to"],
        "attempt": message.attempt,
        "kind": "imported",
        "status": status,
        "reason": message.reason,
        "error": message.error_message,
        "created_at": stamp,
        "ended_at": stamp,
        "events_expired": 1,
    }
