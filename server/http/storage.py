"""A storage failure before a stream opens answers ``503 storage_unavailable`` with
``Retry-After`` (server.store.faults), never a bare 500: the request may be sent again once
the operator has freed space or brought the database back, and nothing stored was lost."""

from __future__ import annotations

import logging

from aiohttp import web

from server.contract.errors import ApiError, Handler
from server.store.faults import RETRY_AFTER_S, is_storage_failure

log = logging.getLogger("riacho.storage")


@web.middleware
async def storage_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Turn a storage failure raised by a route into 503 ``storage_unavailable``."""
    try:
        return await handler(request)
    except Exception as error:
        if not is_storage_failure(error):
            raise
        log.warning("storage unavailable for %s %s: %s", request.method, request.path, error)
        raise ApiError(
            503,
            "storage_unavailable",
            "the server cannot store anything right now; try again in a moment",
            {"Retry-After": str(RETRY_AFTER_S)},
        ) from error
