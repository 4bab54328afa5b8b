"""Pre-stream API errors: ``{"error": {"code", "message"}}`` with the status of SPEC §4."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping

from aiohttp import web

from app.wire.codes import ApiErrorCode

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

_HTTP_CODES: dict[int, ApiErrorCode] = {
    400: "invalid_body",
    404: "not_found",
    405: "method_not_allowed",
    413: "body_too_large",
}


class ApiError(Exception):
    """An error answered as JSON before any stream starts."""

    def __init__(
        self,
        status: int,
        code: ApiErrorCode,
        message: str,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.headers = dict(headers or {})


def error_response(error: ApiError) -> web.Response:
    """The JSON response of one ``ApiError``."""
    body = {"error": {"code": error.code, "message": error.message}}
    text = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
    return web.Response(
        text=text, status=error.status, headers=error.headers, content_type="application/json"
    )


@web.middleware
async def error_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Turn ``ApiError`` and aiohttp's own HTTP errors under ``/api`` into JSON errors."""
    try:
        return await handler(request)
    except ApiError as error:
        return error_response(error)
    except web.HTTPException as exc:
        is_api = request.path.startswith(("/api/", "/__test__/"))
        if not is_api or exc.status < 400:
            raise
        code = _HTTP_CODES.get(exc.status, "http_error")
        return error_response(ApiError(exc.status, code, exc.reason))
