"""Models and attachments."""

from __future__ import annotations

import json
import mimetypes
import re
from urllib.parse import quote

from aiohttp import BodyPartReader, web
from aiohttp.http_exceptions import HttpProcessingError

from app.wire.api import AttachmentInfo, human_size
from server.contract.errors import ApiError
from server.contract.jsonio import answer_payload
from server.http.auth import current_user
from server.http.services import services
from server.store.attachments import add_attachment, attachment_file
from server.store.db import new_id, now
from server.tools.connections import tools_note


async def list_models(request: web.Request) -> web.Response:
    """``GET /api/models``."""
    svc = services(request)
    note = tools_note(svc.mcp)
    infos = svc.catalog.infos()
    if note is not None:
        infos = [
            i.model_copy(update={"tools_note": note}) if i.supports_tools else i for i in infos
        ]
    return answer_payload(infos)


# NOTE: aiohttp's multipart reader raises these for a malformed body or part header.
_MALFORMED = (AssertionError, ValueError, KeyError, LookupError, UnicodeError, HttpProcessingError)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


async def _file_part(request: web.Request) -> BodyPartReader:
    try:
        reader = await request.multipart()
        while (part := await reader.next()) is not None:
            if isinstance(part, BodyPartReader) and part.filename:
                return part
    except _MALFORMED as exc:
        raise ApiError(400, "invalid_body", f"the multipart body is malformed: {exc}") from exc
    raise ApiError(400, "invalid_body", "the form has no file field")


def _file_name(part: BodyPartReader) -> str:
    try:
        name = part.filename or "file"
    except _MALFORMED as exc:
        raise ApiError(400, "invalid_body", "the file name cannot be read") from exc
    if _CONTROL.search(name) or not _is_text(name):
        raise ApiError(400, "invalid_body", "the file name has control or invalid characters")
    return name[:255]


def _is_text(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _mime_type(part: BodyPartReader, name: str) -> str:
    declared = (part.headers.get("Content-Type") or "").split(";")[0].strip().lower()
    if declared in ("", "application/octet-stream"):
        declared = mimetypes.guess_type(name)[0] or "application/octet-stream"
    return declared


async def _read_limited(part: BodyPartReader, limit: int) -> bytes:
    data = bytearray()
    try:
        while chunk := await part.read_chunk(64 * 1024):
            data += chunk
            if len(data) > limit:
                raise ApiError(
                    413,
                    "attachment_too_large",
                    f"the file is larger than {human_size(limit)}, the most an attachment may be",
                )
    except _MALFORMED as exc:
        raise ApiError(400, "invalid_body", f"the file part is malformed: {exc}") from exc
    return bytes(data)


_SIGNATURES: dict[str, tuple[bytes, ...]] = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "application/pdf": (b"%PDF-",),
}


def _content_matches(mime_type: str, data: bytes) -> bool:
    """Whether the bytes are what the type says (by signature; text must be UTF-8)."""
    if mime_type == "image/webp":
        return data[:4] == b"RIFF" and data[8:12] == b"WEBP"
    if mime_type in _SIGNATURES:
        return data.startswith(_SIGNATURES[mime_type])
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    if mime_type == "application/json":
        try:
            json.loads(text)
        except ValueError:
            return False
    return "\x00" not in text


def _check_type(mime_type: str, accepted: frozenset[str]) -> None:
    if mime_type not in accepted:
        allowed = ", ".join(sorted(accepted))
        raise ApiError(
            400,
            "attachment_type_unsupported",
            f"type {mime_type!r} is not accepted (accepted: {allowed})",
        )


INLINE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


async def get_attachment(request: web.Request) -> web.Response:
    """``GET /api/attachments/{attachmentId}``: the owner's file (images inline, for previews;
    anything else as a download)."""
    row = await attachment_file(
        services(request).db, request.match_info["attachment_id"], current_user(request)
    )
    if row is None:
        raise ApiError(404, "attachment_unavailable", "that attachment is missing or expired")
    mime_type = str(row["mime_type"])
    disposition = "inline" if mime_type in INLINE_TYPES else "attachment"
    quoted = quote(str(row["name"]), safe="")
    return web.Response(
        body=bytes(row["data"]),
        content_type=mime_type,
        headers={
            "Content-Disposition": f"{disposition}; filename*=UTF-8''{quoted}",
            "Cache-Control": "private, max-age=3600",
        },
    )


async def upload_attachment(request: web.Request) -> web.Response:
    """``POST /api/attachments`` (multipart, one file): size and type checked."""
    svc = services(request)
    limits = svc.config.limits
    part = await _file_part(request)
    name = _file_name(part)
    mime_type = _mime_type(part, name)
    _check_type(mime_type, limits.attachment_types)
    data = await _read_limited(part, limits.attachment_max_bytes)
    if not data:
        raise ApiError(400, "attachment_empty", "the file is empty")
    if not _content_matches(mime_type, data):
        raise ApiError(400, "attachment_type_mismatch", f"the file's content is not {mime_type}")
    info = AttachmentInfo(
        attachment_id=new_id("att"), name=name, size=len(data), mime_type=mime_type
    )
    stamp = now()
    await add_attachment(
        svc.db,
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
