"""Pre-stream checks of ``POST /api/respond/stream`` (SPEC §4) and the rows a turn creates."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from app.wire.api import RespondStreamBody
from server.config import Limits
from server.contract.errors import ApiError
from server.model.catalog import RETRY_AFTER_S, Catalog, DemoModel, Model, ProviderModel
from server.runs.live import RunMeta
from server.store import chats, messages
from server.store.attachments import attachments_of
from server.store.db import Conflict, Database, Row, SqlValue, new_id, now
from server.store.runlog import run_row
from server.turns.titles import title_for

DEFAULT_TITLE = "New chat"
_RUN_ID_RE = re.compile(r"[A-Za-z0-9_.:-]{1,128}")


@dataclass(frozen=True, slots=True)
class Turn:
    """A validated turn: the run to create and what the model is asked."""

    meta: RunMeta
    prompt: str
    attachments: list[dict[str, object]]
    model: Model
    previous_model_label: str | None
    is_first_turn: bool
    new_chat: bool = False  # the chat is made with this turn (the page named it)
    chat_name: str = ""  # the chat's public id (the page's name for it)
    parent_id: str | None = None  # a new user message follows this assistant message


async def chat_of(db: Database, user_id: str, chat_id: str) -> Row:
    """The user's chat named ``chat_id`` (its public id), or 404 ``chat_not_found``.

    # NOTE: a chat is found by its owner's name for it; the row's ``id`` (the key messages and
    # runs use) is the same name unless another user's chat had it (migration 0009).
    """
    row = await chats.chat_named(db, user_id, chat_id)
    if row is None:
        raise ApiError(404, "chat_not_found", f"chat {chat_id!r} not found")
    return row


async def check_turn(
    db: Database,
    models: Catalog,
    limits: Limits,
    user_id: str,
    body: RespondStreamBody,
    run_id: str,
) -> Turn:
    """Every check of SPEC §4, in order; raises ``ApiError`` with the first failure."""
    _check_sizes(limits, body)
    chat, new_chat = await _chat_of_turn(db, user_id, body)
    await _check_run_id(db, user_id, run_id)
    parent_id = None
    if body.retry_of_run_id is not None:
        user_message = await _retried_message(db, user_id, chat["id"], body.retry_of_run_id)
        prompt, attachments = user_message["content"], json.loads(user_message["attachments"])
    else:
        user_message = None
        parent_id = await _parent_of_prompt(db, user_id, chat["id"], body)
        prompt = body.prompt
        if not prompt.strip() and not body.attachment_ids:
            raise ApiError(400, "empty_prompt", "the prompt is empty and there is no attachment")
        attachments = await _attachments(db, user_id, body.attachment_ids)
    model = _model(models, body.model_id or chat["last_model_id"] or models.default_id)
    previous = _previous_model(models, chat, model)
    user_message_id = user_message["id"] if user_message else new_id("msg")
    meta = RunMeta(
        run_id,
        user_id,
        chat["id"],
        new_id("msg"),
        user_message_id,
        await messages.next_attempt(db, user_message_id),
        "model" if isinstance(model, ProviderModel) else "demo",
    )
    first = new_chat or not await messages.has_messages(db, chat["id"])
    return Turn(
        meta, prompt, attachments, model, previous, first, new_chat, body.chat_id, parent_id
    )


async def _parent_of_prompt(
    db: Database, user_id: str, chat_id: str, body: RespondStreamBody
) -> str | None:
    """The assistant message a new prompt follows: ``afterRunId``'s answer, none with ``atTop``
    (the prompt starts the chat anew), else the chat's newest answer."""
    if body.at_top:
        if body.after_run_id is not None:
            raise ApiError(400, "invalid_body", "afterRunId and atTop exclude each other")
        return None
    if body.after_run_id is None:
        return await messages.newest_answer_id(db, chat_id)
    run = await run_row(db, user_id, body.after_run_id)
    if run is None or run["chat_id"] != chat_id:
        raise ApiError(
            400, "invalid_body", f"afterRunId {body.after_run_id!r} is not a run of this chat"
        )
    return str(run["message_id"])


_CHAT_ID_RE = re.compile(r"chat_[A-Za-z0-9_-]{8,64}")


async def _chat_of_turn(db: Database, user_id: str, body: RespondStreamBody) -> tuple[Row, bool]:
    """The turn's chat, and whether this turn makes it: a chat the page named and nobody has
    yet comes into being with its first answer (so a refused first send leaves nothing)."""
    # NOTE: one read, so a chat made meanwhile by a racing request is either seen or not at all
    rows = await chats.chats_with_name(db, user_id, body.chat_id)
    mine = [row for row in rows if row["user_id"] == user_id and row["public_id"] == body.chat_id]
    if mine:
        return mine[0], False
    if body.retry_of_run_id is not None or not _CHAT_ID_RE.fullmatch(body.chat_id):
        raise ApiError(404, "chat_not_found", f"chat {body.chat_id!r} not found")
    # NOTE: another user's chat of that name is not this user's business: a new chat, as for
    # a name nobody has used, under a key of its own
    key = new_id("chat") if rows else body.chat_id
    stamp = now()
    fresh = {
        "id": key,
        "public_id": body.chat_id,
        "user_id": user_id,
        "title": DEFAULT_TITLE,
        "created_at": stamp,
        "updated_at": stamp,
        "last_model_id": None,
        "compacted_at": None,
        "summary_tokens": 0,
    }
    return fresh, True


def _check_sizes(limits: Limits, body: RespondStreamBody) -> None:
    size = len(body.prompt.encode("utf-8"))
    if size > limits.prompt_max_bytes:
        raise ApiError(
            413,
            "prompt_too_large",
            f"the prompt is {size} bytes; the limit is {limits.prompt_max_bytes}",
        )
    if len(body.attachment_ids) > limits.attachments_per_request:
        raise ApiError(
            400,
            "too_many_attachments",
            f"at most {limits.attachments_per_request} attachments go with one message",
        )


async def _check_run_id(db: Database, user_id: str, run_id: str) -> None:
    if not _RUN_ID_RE.fullmatch(run_id):
        raise ApiError(400, "invalid_body", "runId must be 1-128 of [A-Za-z0-9_.:-]")
    if await run_row(db, user_id, run_id) is not None:
        raise ApiError(409, "run_exists", f"you already have a run {run_id!r}")


async def _retried_message(db: Database, user_id: str, chat_id: str, run_id: str) -> Row:
    run = await run_row(db, user_id, run_id)
    if run is None:
        raise ApiError(404, "run_not_found", f"run {run_id!r} not found")
    if run["chat_id"] != chat_id:
        raise ApiError(400, "invalid_body", "retryOfRunId belongs to another chat")
    message = await messages.message_row(db, run["user_message_id"])
    if message is None:
        raise ApiError(404, "run_not_found", f"the message of run {run_id!r} is gone")
    return message


async def _attachments(db: Database, user_id: str, ids: list[str]) -> list[dict[str, object]]:
    """The attachments, in the order given (a repeated id once), in one query."""
    wanted = list(dict.fromkeys(ids))
    found = await attachments_of(db, user_id, wanted)
    missing = next((attachment_id for attachment_id in wanted if attachment_id not in found), None)
    if missing is not None:
        raise ApiError(
            400,
            "attachment_unavailable",
            f"attachment {missing!r} is missing, not yours or expired",
        )
    return [
        {
            "attachmentId": row["id"],
            "name": row["name"],
            "size": row["size"],
            "mimeType": row["mime_type"],
        }
        for row in (found[attachment_id] for attachment_id in wanted)
    ]


def _model(models: Catalog, model_id: str) -> Model:
    model = models.find(model_id)
    if model is None:
        raise ApiError(400, "model_not_found", f"model {model_id!r} does not exist")
    if isinstance(model, DemoModel) and not model.info.available:
        raise ApiError(
            503,
            "model_unavailable",
            f"model {model_id!r} is unavailable right now",
            {"Retry-After": str(RETRY_AFTER_S)},
        )
    reason = model.unavailable_reason() if isinstance(model, ProviderModel) else None
    if reason is not None:
        raise ApiError(503, "model_unavailable", f"model {model_id!r} is unavailable: {reason}")
    return model


def _previous_model(models: Catalog, chat: Row, model: Model) -> str | None:
    last = chat["last_model_id"]
    if last is None or last == model.info.id:
        return None
    previous = models.find(last)
    return previous.info.label if previous else last


async def create_rows(db: Database, turn: Turn, *, touch_chat: bool = True) -> None:
    """Persist the user message (unless a retry), the assistant message and the run.

    ``touch_chat`` also records the turn on the chat (model, title, order); a model turn does
    that only once its provider accepted the request (:func:`touch_chat`).
    """
    try:
        await _create_rows(db, turn, touch_chat)
    except Conflict as conflict:  # NOTE: a request racing this one (the same runId or chat)
        if await run_row(db, turn.meta.user_id, turn.meta.run_id) is not None:
            raise ApiError(
                409, "run_exists", f"you already have a run {turn.meta.run_id!r}"
            ) from conflict
        raise ApiError(
            409, "conflict", "another request changed this chat at the same moment; send again"
        ) from conflict


async def _create_rows(db: Database, turn: Turn, touch_chat: bool) -> None:
    meta, stamp = turn.meta, now()
    chat: dict[str, SqlValue] | None = None
    if turn.new_chat:
        chat = {
            "id": meta.chat_id,
            "public_id": turn.chat_name,
            "user_id": meta.user_id,
            "title": DEFAULT_TITLE,
            "created_at": stamp,
            "updated_at": stamp,
        }
    rows = _user_row(turn, stamp), _assistant_row(turn, stamp), _run_row(meta, stamp)

    async def touch() -> None:
        await _touch_chat(db, turn, stamp)

    await messages.add_turn_rows(db, chat, *rows, then=touch if touch_chat else None)


async def touch_chat(db: Database, turn: Turn) -> None:
    """Record the turn on its chat: last model, title after the first prompt, ``updated_at``."""
    await _touch_chat(db, turn, now())


async def discard_rows(db: Database, turn: Turn, *, keep_user_message: bool) -> None:
    """Undo :func:`create_rows` (without ``touch_chat``) for a turn the provider refused."""
    meta = turn.meta
    await messages.delete_turn_rows(
        db,
        meta.key,
        meta.message_id,
        None if keep_user_message else meta.user_message_id,
        meta.chat_id if turn.new_chat else None,
    )


def _user_row(turn: Turn, stamp: float) -> dict[str, SqlValue]:
    return {
        "id": turn.meta.user_message_id,
        "chat_id": turn.meta.chat_id,
        "role": "user",
        "reply_to": turn.parent_id,
        "content": turn.prompt,
        "attachments": json.dumps(turn.attachments),
        "created_at": stamp,
        "updated_at": stamp,
    }


def _assistant_row(turn: Turn, stamp: float) -> dict[str, SqlValue]:
    meta = turn.meta
    return {
        "id": meta.message_id,
        "chat_id": meta.chat_id,
        "role": "assistant",
        "reply_to": meta.user_message_id,
        "run_id": meta.run_id,
        "attempt": meta.attempt,
        "status": "running",
        "model_id": turn.model.info.id,
        "created_at": stamp,
        "updated_at": stamp,
    }


def _run_row(meta: RunMeta, stamp: float) -> dict[str, SqlValue]:
    return {
        "id": meta.key,
        "user_id": meta.user_id,
        "chat_id": meta.chat_id,
        "message_id": meta.message_id,
        "user_message_id": meta.user_message_id,
        "attempt": meta.attempt,
        "kind": meta.kind,
        "status": "running",
        "created_at": stamp,
    }


async def _touch_chat(db: Database, turn: Turn, stamp: float) -> None:
    await chats.touch_chat(db, turn.meta.chat_id, stamp, turn.model.info.id)
    if turn.is_first_turn and turn.prompt.strip():
        await chats.name_chat_if_unnamed(
            db, turn.meta.chat_id, title_for(turn.prompt), DEFAULT_TITLE
        )
