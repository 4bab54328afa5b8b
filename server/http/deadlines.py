"""Read deadlines, so slow or idle clients are cut and never starve real users of sockets.

- **Headers**: a connection must deliver a whole request line and headers within
  ``header_deadline_s`` of opening (or of its previous answer, on a kept-alive connection).
  aiohttp's protocol closes a connection whose keep-alive timer fires while it still waits for
  a complete request, and the timer starts when the connection opens, so that timer *is* the
  header deadline (``handler_options``); it never fires while a handler runs, so an event
  stream is never cut for being long.
- **Bodies**: once past ``body_grace_s``, a request body must keep arriving at
  ``body_min_bytes_per_s`` on average (``body_rate_middleware`` watches the request's payload
  until its last byte, whichever route reads it: JSON or an upload). A body that falls behind
  has its connection closed; its handler's read fails and nothing is stored.

These hold for clients sharing real users' address (every client on loopback): nothing here is
per address. A per-address connection cap, if wanted, belongs to the proxy in front (many users
share one address behind a NAT) — see docs/security.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from aiohttp import web

from server.config.limits import Limits
from server.contract.errors import Handler
from server.http.services import services

log = logging.getLogger("riacho.deadlines")


def handler_options(limits: Limits) -> dict[str, Any]:
    """The options of aiohttp's request handler (``AppRunner(app, **options)``)."""
    return {"keepalive_timeout": limits.header_deadline_s}


def _behind(received: int, elapsed: float, limits: Limits) -> bool:
    """A body with ``received`` bytes after ``elapsed`` seconds is below the minimum rate."""
    return received < limits.body_min_bytes_per_s * (elapsed - limits.body_grace_s)


async def _watch_body(request: web.Request, limits: Limits) -> None:
    """Close the connection when the body falls behind the minimum rate."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    every = max(0.05, min(1.0, limits.body_grace_s / 4))
    content = request.content
    while not content.is_eof():
        await asyncio.sleep(every)
        if not content.is_eof() and _behind(content.total_bytes, loop.time() - started, limits):
            log.info("body too slow: %s %s from %s", request.method, request.path, request.remote)
            if request.transport is not None:
                request.transport.close()
            return


@web.middleware
async def body_rate_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Hold a request's body to the minimum rate while it is read."""
    if not request.body_exists:
        return await handler(request)
    watch = asyncio.get_running_loop().create_task(
        _watch_body(request, services(request).config.limits)
    )
    try:
        return await handler(request)
    finally:
        watch.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watch
