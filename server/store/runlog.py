"""Persistence of runs: status, event log, and the assistant message they write.

A run is stored under :func:`run_key` (the user's id and the client's run id): a run id is
unique per user only, so one user's id never names, nor reveals, another user's run.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from app.wire.api import ServerRunStatus
from app.wire.codes import RunEndCause
from app.wire.parts import Parts, answer_text, fold, parts_to_json
from app.wire.protocol import (
    ErrorEvent,
    ParsedEvent,
    StreamEvent,
    encode_event,
    end_error,
    parse_event,
)
from server.store import tool_calls
from server.store.db import Database, Row, now


@dataclass(frozen=True, slots=True)
class Frame:
    """One logged event: its SSE id (``None`` if the seq is not an integer) and JSON text."""

    seq: int | None
    data: str


@dataclass(slots=True)
class AnswerFold:
    """A run's answer folded as the page folds it: this run's events, each seq once, in order."""

    run_id: str
    parts: Parts = ()
    last_seq: int = 0

    def apply(self, event: StreamEvent) -> None:
        # NOTE: the page drops foreign runs' events and repeated seqs (SPEC §5); so does this.
        if event.run_id != self.run_id or event.seq <= self.last_seq:
            return
        self.last_seq = event.seq
        self.parts = fold(self.parts, event)

    def apply_data(self, data: str) -> StreamEvent | None:
        """Validate one logged event's JSON (an invalid one changes nothing) and apply it."""
        parsed = parse_event(data)
        if not isinstance(parsed, ParsedEvent):
            return None
        self.apply(parsed.event)
        return parsed.event


def run_key(user_id: str, run_id: str) -> str:
    """A run's key in the database: run ids are the client's, unique per user only."""
    return f"{user_id}/{run_id}"


RUN_KEY_SQL = "{user} || '/' || {run}"
""":func:`run_key` as an SQL expression of two columns (``.format(user=…, run=…)``)."""


async def run_status(db: Database, key: str) -> str | None:
    """The persisted status of the run ``key``."""
    row = await db.one("SELECT status FROM runs WHERE id = ?", (key,))
    return None if row is None else str(row["status"])


def public_id(key: str) -> str:
    """The client's run id of a key (user ids hold no ``/``)."""
    return key.split("/", 1)[1]


async def insert_event(db: Database, run_id: str, seq: int | None, data: str) -> int | None:
    """Append one event to a run's log; its row id (log order across processes), or ``None``
    when the run is persisted ended (another process may have ended it: nothing is appended).

    # NOTE: PostgreSQL reads the run's status under a share lock, so an append waits for a
    # concurrent end (another process's ``interrupt``) and then sees it, as SQLite's single
    # writer does.
    """
    return await db.insert_id(
        "INSERT INTO run_events (run_id, seq, data, created_at)"
        " SELECT ?, CAST(? AS BIGINT), ?, CAST(? AS DOUBLE PRECISION)"
        f" WHERE COALESCE((SELECT status FROM runs WHERE id = ?{db.for_share}), 'running')"
        " = 'running'",
        (run_id, seq, data, now(), run_id),
    )


async def load_frames(db: Database, run_id: str, after: int) -> list[Frame]:
    """The logged events of a run with ``seq > after``, in log order."""
    rows = await db.all(
        "SELECT seq, data FROM run_events WHERE run_id = ? AND (seq IS NULL OR seq > ?)"
        " ORDER BY id",
        (run_id, after),
    )
    return [Frame(row["seq"], row["data"]) for row in rows]


async def load_rows(db: Database, run_id: str, after_row: int) -> list[tuple[int, Frame]]:
    """The logged events of a run past row id ``after_row``, in log order, with their row ids."""
    rows = await db.all(
        "SELECT id, seq, data FROM run_events WHERE run_id = ? AND id > ? ORDER BY id",
        (run_id, after_row),
    )
    return [(int(row["id"]), Frame(row["seq"], row["data"])) for row in rows]


async def max_seq(db: Database, run_id: str) -> int:
    """The highest seq logged for a run (0 when none)."""
    row = await db.one("SELECT MAX(seq) AS s FROM run_events WHERE run_id = ?", (run_id,))
    return int(row["s"]) if row is not None and row["s"] is not None else 0


async def save_progress(
    db: Database, run_id: str, message_id: str, last_seq: int, parts: Parts
) -> None:
    """Persist a running run's last seq and its message's parts so far (and their text)."""
    async with db.transaction():
        await _save_progress(db, run_id, message_id, last_seq, parts)


async def _save_progress(
    db: Database, run_id: str, message_id: str, last_seq: int, parts: Parts
) -> None:
    await db.execute("UPDATE runs SET last_seq = ? WHERE id = ?", (last_seq, run_id))
    await db.execute(
        "UPDATE messages SET parts = ?, content = ?, updated_at = ? WHERE id = ?",
        (json.dumps(parts_to_json(parts)), answer_text(parts), now(), message_id),
    )


async def finish(
    db: Database,
    run_id: str,
    message_id: str,
    status: ServerRunStatus,
    reason: str | None = None,
    error: str | None = None,
) -> bool:
    """Persist a terminal status and why (``reason``: a code such as ``orphaned``); ``False``
    when the run had already ended (the first one wins)."""
    async with db.transaction():
        return await _finish(db, run_id, message_id, status, reason, error)


async def _finish(
    db: Database,
    run_id: str,
    message_id: str,
    status: ServerRunStatus,
    reason: str | None,
    error: str | None,
) -> bool:
    stamp = now()
    changed = await db.execute(
        "UPDATE runs SET status = ?, reason = ?, error = ?, ended_at = ?"
        " WHERE id = ? AND status = 'running'",
        (status, reason, error, stamp, run_id),
    )
    if changed:
        await db.execute(
            "UPDATE messages SET status = ?, updated_at = ? WHERE id = ?",
            (status, stamp, message_id),
        )
    return changed == 1


async def set_stop_reason(db: Database, message_id: str, stop_reason: str | None) -> None:
    await db.execute("UPDATE messages SET stop_reason = ? WHERE id = ?", (stop_reason, message_id))


async def run_row(db: Database, user_id: str, run_id: str) -> Row | None:
    """The user's persisted run (another user's run of the same id is another run)."""
    return await db.one("SELECT * FROM runs WHERE id = ?", (run_key(user_id, run_id),))


async def chat_name(db: Database, chat_key: str) -> str:
    """The public id of the chat whose key is ``chat_key`` (its owner's name for it)."""
    row = await db.one("SELECT public_id FROM chats WHERE id = ?", (chat_key,))
    return chat_key if row is None else str(row["public_id"])


def is_expired(row: Row, retention_s: float) -> bool:
    """Whether a run's event log is gone (or due to be dropped)."""
    if row["events_expired"]:
        return True
    ended_at = row["ended_at"]
    return ended_at is not None and now() - float(ended_at) > retention_s


async def expire_logs(db: Database, retention_s: float) -> int:
    """Drop the logs of runs that ended more than ``retention_s`` ago; returns how many."""
    cutoff = now() - retention_s
    async with db.transaction():
        rows = await db.all(
            "SELECT id FROM runs WHERE events_expired = 0 AND ended_at IS NOT NULL"
            " AND ended_at < ?",
            (cutoff,),
        )
        for row in rows:
            await db.execute("DELETE FROM run_events WHERE run_id = ?", (row["id"],))
            await db.execute("UPDATE runs SET events_expired = 1 WHERE id = ?", (row["id"],))
    return len(rows)


async def recover_after_restart(db: Database) -> list[str]:
    """Runs left ``running`` by a previous process become ``interrupted``; returns their ids."""
    rows = await db.all("SELECT id FROM runs WHERE status = 'running'")
    return [
        public_id(row["id"])
        for row in rows
        if await interrupt(db, row["id"], restart_event, "server_restarted") is not None
    ]


async def interrupt(
    db: Database, run_id: str, ending: Callable[[str, int], ErrorEvent], reason: RunEndCause
) -> tuple[int, Frame] | None:
    """End a run whose process is gone: log ``ending`` after its last seq, keep its answer so
    far, persist ``interrupted``. The logged ending with its row id; ``None`` if it had ended.

    # NOTE: one write transaction, so of several processes noticing the same loss one wins.
    """
    async with db.transaction():
        row = await db.one(
            f"SELECT message_id FROM runs WHERE id = ? AND status = 'running'{db.for_update}",
            (run_id,),
        )
        if row is None:
            return None
        answer = AnswerFold(public_id(run_id))
        for frame in await load_frames(db, run_id, -(2**62)):
            answer.apply_data(frame.data)
        seq = await max_seq(db, run_id) + 1
        # NOTE: the log ends with why, so a resume of this run ends with a terminal event too.
        frame = Frame(seq, encode_event(ending(public_id(run_id), seq)))
        row_id = await insert_event(db, run_id, seq, frame.data)
        assert row_id is not None  # NOTE: still running in this transaction
        await _save_progress(db, run_id, row["message_id"], seq, answer.parts)
        await _finish(db, run_id, row["message_id"], "interrupted", reason, None)
        # NOTE: its tool calls end with it: a running one may have acted (``unknown``).
        await tool_calls.lose_open_calls(db, run_id, "the worker ended before the tool answered")
    return row_id, frame


async def running_count(db: Database, user_id: str) -> int:
    """How many of the user's runs are persisted ``running``."""
    row = await db.one(
        "SELECT COUNT(*) AS n FROM runs WHERE user_id = ? AND status = 'running'", (user_id,)
    )
    return int(row["n"]) if row is not None else 0


async def running_runs(db: Database, started_before: float) -> list[str]:
    """The keys of runs persisted ``running`` that started before ``started_before``."""
    rows = await db.all(
        "SELECT id FROM runs WHERE status = 'running' AND created_at < ?", (started_before,)
    )
    return [row["id"] for row in rows]


def restart_event(run_id: str, seq: int) -> ErrorEvent:
    """The terminal event of a run the server was restarted under."""
    return end_error(
        "The server restarted before this answer was complete.", "server_restarted", run_id, seq
    )


def worker_lost_event(run_id: str, seq: int) -> ErrorEvent:
    """The terminal event of a run whose server process stopped answering (another saw it)."""
    return end_error(
        "The server process writing this answer stopped before it was complete.",
        "worker_lost",
        run_id,
        seq,
    )
