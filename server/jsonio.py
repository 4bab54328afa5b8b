"""JSON in and out of handlers: a body that is not JSON is 400, answers are compact JSON."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from aiohttp import web
from pydantic import BaseModel

from app.wire.api import encode_payload
from server.errors import ApiError

JSON_TYPE = "application/json"


def dumps(value: object) -> str:
    """Compact JSON, as every event and answer is written."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


async def read_json_body(request: web.Request) -> object:
    """The request's JSON, or 400 ``invalid_body``."""
    try:
        return await request.json(loads=json.loads)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ApiError(400, "invalid_body", f"body is not JSON: {exc}") from exc


def answer(
    data: object, status: int = 200, headers: Mapping[str, str] | None = None
) -> web.Response:
    """A JSON answer from plain data."""
    return web.Response(text=dumps(data), status=status, content_type=JSON_TYPE, headers=headers)


def answer_payload(payload: BaseModel | Sequence[BaseModel], status: int = 200) -> web.Response:
    """A JSON answer from a contract model (or a list of them), camelCase."""
    if isinstance(payload, BaseModel):
        text = encode_payload(payload)
    else:
        text = "[" + ",".join(encode_payload(item) for item in payload) + "]"
    return web.Response(text=text, status=status, content_type=JSON_TYPE)
