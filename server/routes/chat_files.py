"""A chat as a file (SPEC §14): ``GET /api/chats/{id}/export?format=markdown|json`` answers a
download; ``POST /api/chats/import`` makes a new chat of a JSON export.

An import that is not a chat export (not JSON, another ``exportVersion``, wrong types, a parent
not in the file, a cycle, over :data:`~app.wire.chat_file.MAX_IMPORT_BYTES`) is ``400
invalid_import`` with words saying what is wrong, and stores nothing.
"""

from __future__ import annotations

import json
from typing import get_args

from aiohttp import web

from app.wire.api import human_size
from app.wire.chat_file import (
    EXPORT_VERSION,
    MAX_IMPORT_BYTES,
    ChatExport,
    ExportFormat,
    ImportAnswer,
    ImportRefused,
    check_import,
)
from server.contract.errors import ApiError
from server.contract.jsonio import DEFAULT_MAX_DEPTH, answer_payload, json_problem, read_body
from server.http.auth import current_user
from server.http.services import services
from server.routes.chats import read_chat
from server.store.imports import add_imported_chat
from server.turns.chat_import import import_rows
from server.turns.chat_markdown import UnknownLeaf, chat_markdown, file_name
from server.turns.start import chat_of

FORMATS: tuple[str, ...] = get_args(ExportFormat)


async def export_chat(request: web.Request) -> web.Response:
    """The chat as a download: Markdown of the branch ending at ``leaf`` (default: the newest
    answer's), or JSON of the whole chat (the chat read, ``instructions``, ``exportVersion``)."""
    svc, user_id = services(request), current_user(request)
    row = await chat_of(svc.db, user_id, request.match_info["chat_id"])
    kind = request.query.get("format", "")
    if kind not in FORMATS:
        raise ApiError(400, "unknown_format", f"format must be one of {', '.join(FORMATS)}")
    detail = await read_chat(svc, row, user_id)
    if kind == "json":
        body = ChatExport(
            **detail.model_dump(), instructions=None, export_version=EXPORT_VERSION
        ).model_dump_json(by_alias=True, indent=1)
        return _download(body, "application/json", file_name(detail.title, "json"))
    try:
        text = chat_markdown(detail.title, detail.messages, request.query.get("leaf") or None)
    except UnknownLeaf as missing:
        raise ApiError(400, "invalid_body", f"no message {missing} in this chat") from None
    return _download(text, "text/markdown", file_name(detail.title, "md"))


def _download(body: str, mime_type: str, name: str) -> web.Response:
    return web.Response(
        text=body,
        content_type=mime_type,
        charset="utf-8",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )


async def import_chat(request: web.Request) -> web.Response:
    """``POST /api/chats/import`` (a JSON export as the body): ``{"id"}`` of the new chat, 201."""
    svc, user_id = services(request), current_user(request)
    try:
        chat, parts = check_import(await _read_file(request))
    except ImportRefused as refused:
        raise ApiError(400, "invalid_import", str(refused)) from None
    rows = import_rows(user_id, chat, parts)
    await add_imported_chat(svc.db, rows.chat, rows.messages, rows.runs)
    return answer_payload(ImportAnswer(id=str(rows.chat["id"])), status=201)


async def _read_file(request: web.Request) -> object:
    try:
        data = await read_body(request, MAX_IMPORT_BYTES)
    except ApiError:
        raise ImportRefused(f"a chat file is at most {human_size(MAX_IMPORT_BYTES)}") from None
    try:
        value = json.loads(data.decode("utf-8"), parse_constant=_no_constant)
    except (ValueError, UnicodeDecodeError) as error:
        raise ImportRefused(f"the file is not JSON ({error})") from None
    except RecursionError:
        raise ImportRefused("the JSON is nested too deeply") from None
    problem = json_problem(value, DEFAULT_MAX_DEPTH)
    if problem is not None:
        raise ImportRefused(problem)
    return value


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not a JSON number")
