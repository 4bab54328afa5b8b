"""Chat routes: list, create, read with messages, delete, compact."""

from __future__ import annotations

import json

from aiohttp import web

from app.wire.api import ChatDetail, ChatSummary, CompactionResult, MessageOut
from app.wire.api import ContextUsage as ContextUsagePayload
from server.contract.errors import ApiError
from server.contract.jsonio import answer_payload, read_json_body
from server.http.auth import current_user
from server.http.services import Services, services
from server.model.catalog import ProviderModel
from server.model.compaction import compact_with_model
from server.model.loop import pre_stream_error
from server.model.providers.base import ProviderFailure
from server.routes.tool_calls import with_ledger_effects
from server.store import chats
from server.store.db import Database, Row, iso, new_id, now
from server.store.messages import chat_message_rows
from server.store.runlog import public_id
from server.turns.context import ContextUsage, chat_usage, compact, model_usage
from server.turns.snippets import snippet_of
from server.turns.start import DEFAULT_TITLE, chat_of


def _summary(row: Row, snippet: str | None = None) -> ChatSummary:
    pinned = row["pinned_at"]
    return ChatSummary(
        id=row["public_id"],
        title=row["title"],
        created_at=iso(row["created_at"]),
        updated_at=iso(row["updated_at"]),
        pinned_at=None if pinned is None else iso(pinned),
        snippet=snippet,
    )


def _message(row: Row) -> MessageOut:
    status = row["status"]
    assistant = row["role"] == "assistant"
    return MessageOut(
        id=row["id"],
        role=row["role"],
        text=row["content"],
        parts=json.loads(row["parts"]),
        status=status,
        run_id=row["run_id"],
        parent_id=row["reply_to"],
        attempt=row["attempt"] or 1,
        partial=assistant and status != "completed",
        reason=row["run_reason"],
        error_message=row["run_error"],
        stop_reason=row["stop_reason"],
        created_at=iso(row["created_at"]),
        attachments=json.loads(row["attachments"]),
        model_id=row["model_id"] if assistant else None,
    )


async def chat_messages(db: Database, chat_id: str) -> list[MessageOut]:
    """A chat's messages in order (every assistant attempt is its own message)."""
    return [_message(row) for row in await chat_message_rows(db, chat_id)]


MAX_QUERY = 200


async def list_chats(request: web.Request) -> web.Response:
    """``GET /api/chats[?q=words]``: the user's chats, most recently updated first; with ``q``
    only those whose title or messages contain it (case-insensitive)."""
    db, user_id = services(request).db, current_user(request)
    query = " ".join(request.query.get("q", "").split())
    if len(query) > MAX_QUERY:
        raise ApiError(400, "invalid_body", f"a search is at most {MAX_QUERY} characters")
    if not query:
        return answer_payload([_summary(row) for row in await chats.newest_chats(db, user_id)])
    found = []
    for row in await chats.chats_containing(db, user_id, query):
        text = await chats.first_match(db, row["id"], query)
        found.append(_summary(row, None if text is None else snippet_of(text, query)))
    return answer_payload(found)


async def rename_chat(request: web.Request) -> web.Response:
    """``PATCH /api/chats/{chatId}`` ``{"title"?, "pinned"?}``: the renamed or (un)pinned
    chat; a bad field changes nothing."""
    db, user_id = services(request).db, current_user(request)
    row = await chat_of(db, user_id, request.match_info["chat_id"])
    body = await read_json_body(request)
    if not isinstance(body, dict) or not {"title", "pinned"} & body.keys():
        raise ApiError(400, "invalid_body", "send a 'title' or 'pinned'")
    title, pinned = body.get("title"), body.get("pinned")
    if "title" in body and (not isinstance(title, str) or not " ".join(title.split())):
        raise ApiError(400, "invalid_body", "a chat needs a 'title' with some text")
    if "pinned" in body and not isinstance(pinned, bool):
        raise ApiError(400, "invalid_body", "'pinned' is true or false")
    if isinstance(title, str):
        await chats.rename_chat(db, row["id"], " ".join(title.split())[:200])
    if isinstance(pinned, bool) and pinned != (row["pinned_at"] is not None):
        await chats.pin_chat(db, row["id"], now() if pinned else None)
    return answer_payload(_summary(await chat_of(db, user_id, row["public_id"])))


async def create_chat(request: web.Request) -> web.Response:
    """``POST /api/chats`` (optional body ``{"title"}``)."""
    title = DEFAULT_TITLE
    if request.can_read_body:
        body = await read_json_body(request)
        if not isinstance(body, dict) or not isinstance(body.get("title", ""), str):
            raise ApiError(400, "invalid_body", "body must be an object with a string 'title'")
        title = " ".join(str(body.get("title", "")).split())[:200] or DEFAULT_TITLE
    db, chat_id, stamp = services(request).db, new_id("chat"), now()
    await chats.add_chat(
        db,
        {
            "id": chat_id,
            "public_id": chat_id,
            "user_id": current_user(request),
            "title": title,
            "created_at": stamp,
            "updated_at": stamp,
        },
    )
    row = await chat_of(db, current_user(request), chat_id)
    return answer_payload(_summary(row), status=201)


async def get_chat(request: web.Request) -> web.Response:
    """``GET /api/chats/{chatId}``: the chat and its messages."""
    svc = services(request)
    row = await chat_of(svc.db, current_user(request), request.match_info["chat_id"])
    return answer_payload(await read_chat(svc, row, current_user(request)))


async def read_chat(svc: Services, row: Row, user_id: str) -> ChatDetail:
    """The chat read of the chat ``row`` (also the body of its JSON export)."""
    usage = await _shown_usage(svc, row)
    summary = _summary(row)
    return ChatDetail(
        id=summary.id,
        title=summary.title,
        created_at=summary.created_at,
        updated_at=summary.updated_at,
        messages=await with_ledger_effects(
            svc.db, row["id"], user_id, await chat_messages(svc.db, row["id"])
        ),
        context_info=ContextUsagePayload(**usage.fields()),
        model_id=row["last_model_id"],
    )


async def _shown_usage(svc: Services, chat: Row) -> ContextUsage:
    """A real model's last reported usage; the demo's estimate otherwise."""
    model = svc.catalog.find(chat["last_model_id"] or "")
    if isinstance(model, ProviderModel):
        return await model_usage(svc.db, chat["id"]) or ContextUsage(0, model.context_window)
    return await chat_usage(svc.db, chat["id"], svc.config.context_window_tokens)


async def delete_chat(request: web.Request) -> web.Response:
    """``DELETE /api/chats/{chatId}``: cancels its runs still going (on whichever process
    writes them), then drops everything."""
    svc, user_id = services(request), current_user(request)
    row = await chat_of(svc.db, user_id, request.match_info["chat_id"])
    for key in await chats.running_run_keys(svc.db, row["id"]):
        await svc.runs.cancel(user_id, public_id(key))
    await chats.delete_chat(svc.db, row["id"])
    return web.Response(status=204)


async def compact_chat(request: web.Request) -> web.Response:
    """``POST /api/chats/{chatId}/compact``: summarise the context; the usage before and after."""
    svc = services(request)
    row = await chat_of(svc.db, current_user(request), request.match_info["chat_id"])
    model = svc.catalog.find(row["last_model_id"] or "")
    if isinstance(model, ProviderModel):
        try:
            before, after = await compact_with_model(svc.db, model, row["id"])
        except ProviderFailure as failure:
            raise pre_stream_error(failure) from failure
    else:
        before, after = await compact(svc.db, row["id"], svc.config.context_window_tokens)
    result = CompactionResult(
        chat_id=row["public_id"], used_tokens_before=before.used_tokens, **after.fields()
    )
    return answer_payload(result)
