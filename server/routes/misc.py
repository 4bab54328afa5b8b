"""Models and attachments."""

from __future__ import annotations

import mimetypes

from aiohttp import BodyPartReader, web

from app.wire.api import AttachmentInfo
from server.auth import current_user
from server.db import new_id, now
from server.errors import ApiError
from server.jsonio import answer_payload
from server.services import services


async def list_models(request: web.Request) -> web.Response:
    """``GET /api/models``."""
    return answer_payload(services(request).catalog.infos())


async def _file_part(request: web.Request) -> BodyPartReader:
    try:
        reader = await request.multipart()
    except (AssertionError, ValueError, KeyError) as exc:
        raise ApiError(400, "invalid_body", "expected a multipart/form-data body") from exc
    while (part := await reader.next()) is not None:
        if isinstance(part, BodyPartReader) and part.filename:
            return part
    raise ApiError(400, "invalid_body", "the form has no file field")


def _mime_type(part: BodyPartReader, name: str) -> str:
    declared = (part.headers.get("Content-Type") or "").split(";")[0].strip().lower()
    if declared in ("", "application/octet-stream"):
        declared = mimetypes.guess_type(name)[0] or "application/octet-stream"
    return declared


async def _read_limited(part: BodyPartReader, limit: int) -> bytes:
    data = bytearray()
    while chunk := await part.read_chunk(64 * 1024):
        data += chunk
        if len(data) > limit:
            raise ApiError(413, "attachment_too_large", f"attachments are limited to {limit} bytes")
    return bytes(data)


def _check_type(mime_type: str, accepted: frozenset[str]) -> None:
    if mime_type not in accepted:
        allowed = ", ".join(sorted(accepted))
        raise ApiError(
            400,
            "attachment_type_unsupported",
            f"type {mime_type!r} is not accepted (accepted: {allowed})",
        )


async def upload_attachment(request: web.Request) -> web.Response:
    """``POST /api/attachments`` (multipart, one file): size and type checked."""
    svc = services(request)
    limits = svc.config.limits
    part = await _file_part(request)
    name = (part.filename or "file")[:255]
    mime_type = _mime_type(part, name)
    _check_type(mime_type, limits.attachment_types)
    data = await _read_limited(part, limits.attachment_max_bytes)
    if not data:
        raise ApiError(400, "attachment_empty", "the file is empty")
    info = AttachmentInfo(
        attachment_id=new_id("att"), name=name, size=len(data), mime_type=mime_type
    )
    stamp = now()
    svc.db.insert(
        "attachments",
        {
            "id": info.attachment_id,
            "user_id": current_user(request),
            "name": name,
            "size": info.size,
            "mime_type": mime_type,
            "data": data,
            "created_at": stamp,
            "expires_at": stamp + limits.attachment_ttl_s,
        },
    )
    return answer_payload(info, status=201)
