"""JSON in and out of handlers: a body that is not JSON is 400, answers are compact JSON."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from aiohttp import web
from pydantic import BaseModel

from app.wire.api import encode_payload
from server.contract.errors import ApiError

JSON_TYPE = "application/json"


def dumps(value: object) -> str:
    """Compact JSON, as every event and answer is written."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


DEFAULT_MAX_BYTES = 1024 * 1024
DEFAULT_MAX_DEPTH = 64
INT_RANGE = (-(2**63), 2**63 - 1)  # NOTE: what SQLite stores; a larger one is refused here


async def read_body(request: web.Request, max_bytes: int) -> bytes:
    """The whole body, or 413 ``body_too_large`` past ``max_bytes`` (read no further)."""
    declared = request.content_length
    if declared is not None and declared > max_bytes:
        raise ApiError(413, "body_too_large", f"bodies are limited to {max_bytes} bytes here")
    data = bytearray()
    while chunk := await request.content.read(64 * 1024):
        data += chunk
        if len(data) > max_bytes:
            raise ApiError(413, "body_too_large", f"bodies are limited to {max_bytes} bytes here")
    return bytes(data)


async def read_json_body(
    request: web.Request,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> object:
    """The request's JSON: bounded in size and depth, strings of Unicode scalar values only,
    integers SQLite can hold, no NaN or Infinity; else a 4xx with a code, never a 500."""
    data = await read_body(request, max_bytes)
    try:
        value = json.loads(data.decode("utf-8"), parse_constant=_no_constant)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ApiError(400, "invalid_body", f"body is not JSON: {exc}") from exc
    except RecursionError as exc:
        raise ApiError(400, "invalid_body", "the JSON is nested too deeply") from exc
    problem = json_problem(value, max_depth)
    if problem is not None:
        raise ApiError(400, "invalid_body", problem)
    return value


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not a JSON number")


def json_problem(value: object, max_depth: int) -> str | None:
    """What makes parsed JSON unusable here (``None``: nothing); iterative, so never deep."""
    pending: list[tuple[object, int]] = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if depth > max_depth:
            return f"the JSON is nested deeper than {max_depth} levels"
        if isinstance(item, str) and not _is_scalar_text(item):
            return "strings must be valid Unicode (no lone surrogates)"
        if type(item) is int and not INT_RANGE[0] <= item <= INT_RANGE[1]:
            return "integers must fit in 64 bits"
        if isinstance(item, dict):
            pending += [(key, depth) for key in item]
            pending += [(child, depth + 1) for child in item.values()]
        elif isinstance(item, list):
            pending += [(child, depth + 1) for child in item]
    return None


def _is_scalar_text(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


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
