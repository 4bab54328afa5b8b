"""A small reverse proxy that spreads requests over several Riacho workers (round robin).

``python -m server.cli.proxy --port 8000 --upstream http://127.0.0.1:8101 --upstream …`` is the
front of the local cluster (``make run-cluster``): any worker may answer any request, because
runs go through Redis and everything else through the shared database, so nothing here is
sticky. Bodies stream both ways unbuffered (an SSE answer reaches the browser event by event,
and a client that goes away closes its upstream request, which the worker sees as a reader
leaving). A worker that refuses the connection is skipped for the next one; when none answers,
the client gets ``502`` with the error body the API uses.

NOTE: for local use and tests. In production put a real load balancer here (nginx, HAProxy,
a cloud balancer) with response buffering off for ``/api/respond/stream`` and
``/api/runs/*/events`` and a read timeout above the longest silence of an answer.
"""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Sequence

from aiohttp import (
    ClientConnectionError,
    ClientConnectorError,
    ClientPayloadError,
    ClientResponse,
    ClientSession,
    ClientTimeout,
    web,
)
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

log = logging.getLogger("riacho.proxy")

# Hop-by-hop headers (RFC 9110 §7.6.1) are the connection's own, never forwarded; the lengths
# and codings are recomputed by the side that writes the body.
HOP_BY_HOP = frozenset(
    name.lower()
    for name in (
        "Connection",
        "Keep-Alive",
        "Proxy-Authenticate",
        "Proxy-Authorization",
        "TE",
        "Trailer",
        "Transfer-Encoding",
        "Upgrade",
        "Content-Length",
    )
)
UPSTREAMS_KEY = web.AppKey("upstreams", list[str])
SESSION_KEY = web.AppKey("session", ClientSession)


class Turns:
    """Whose turn it is: 0, 1, 2, … (one per request)."""

    def __init__(self) -> None:
        self._next = 0

    def take(self) -> int:
        turn, self._next = self._next, self._next + 1
        return turn


TURNS_KEY = web.AppKey("turns", Turns)


def _end_to_end(name: str) -> bool:
    return name.lower() not in HOP_BY_HOP


def forwarded_headers(headers: CIMultiDictProxy[str], peer: str | None) -> CIMultiDict[str]:
    """The request headers a worker gets: hop-by-hop ones dropped, ``Host`` kept (the worker
    checks ``Origin`` against it), ``X-Forwarded-For`` extended with the client's address."""
    kept = CIMultiDict((name, value) for name, value in headers.items() if _end_to_end(name))
    if peer:
        earlier = headers.get("X-Forwarded-For")
        kept["X-Forwarded-For"] = f"{earlier}, {peer}" if earlier else peer
    return kept


def returned_headers(headers: CIMultiDictProxy[str]) -> CIMultiDict[str]:
    """The response headers the client gets: the worker's, hop-by-hop ones dropped."""
    return CIMultiDict((name, value) for name, value in headers.items() if _end_to_end(name))


def _order(app: web.Application) -> list[str]:
    """Every upstream, starting with the next one in turn."""
    upstreams = app[UPSTREAMS_KEY]
    start = app[TURNS_KEY].take() % len(upstreams)
    return upstreams[start:] + upstreams[:start]


async def forward(request: web.Request) -> web.StreamResponse:
    """Send ``request`` to the next worker that accepts a connection; stream its answer."""
    headers = forwarded_headers(request.headers, request.remote)
    session = request.app[SESSION_KEY]
    for upstream in _order(request.app):
        try:
            upstream_response = await session.request(
                request.method,
                URL(upstream + request.rel_url.raw_path_qs, encoded=True),  # NOTE: as sent
                headers=headers,
                # NOTE: streamed, never buffered: a refused connection has sent none of it yet.
                data=request.content if request.body_exists else None,
                allow_redirects=False,
                auto_decompress=False,
            )
        except ClientConnectorError as error:
            log.warning("proxy: %s refused the connection (%s); trying the next", upstream, error)
            continue
        async with upstream_response:
            return await _relay(request, upstream, upstream_response)
    refused = {"error": {"code": "no_worker", "message": "No Riacho worker is answering."}}
    return web.json_response(refused, status=502)


async def _relay(
    request: web.Request, upstream: str, upstream_response: ClientResponse
) -> web.StreamResponse:
    """Stream a worker's answer to the client: a known length stays known (a file is sent
    with its ``Content-Length``, as the worker sent it); a worker cutting its answer short cuts
    the client's connection too, so the client sees the same broken answer."""
    response = web.StreamResponse(
        status=upstream_response.status,
        reason=upstream_response.reason,
        headers=returned_headers(upstream_response.headers),
    )
    if "Transfer-Encoding" not in upstream_response.headers:
        response.content_length = upstream_response.content_length
    await response.prepare(request)
    try:
        async for chunk in upstream_response.content.iter_any():
            await response.write(chunk)  # NOTE: each as it comes: SSE stays live
    except (ClientPayloadError, ClientConnectionError) as error:
        log.warning("proxy: %s cut its answer to %s short (%s)", upstream, request.path, error)
        if request.transport is not None:
            request.transport.abort()
        return response
    await response.write_eof()
    return response


async def _open_session(app: web.Application) -> None:
    # NOTE: no total timeout: an answer may stream for minutes; a worker that stops sending
    # is the worker's own idle timeout to end.
    # NOTE: headers the client did not send are not made up either: without Accept-Encoding a
    # worker must answer uncompressed, as it would to the client itself.
    app[SESSION_KEY] = ClientSession(
        timeout=ClientTimeout(total=None, sock_connect=5),
        skip_auto_headers=("Accept-Encoding", "User-Agent", "Content-Type"),
    )


async def _close_session(app: web.Application) -> None:
    await app[SESSION_KEY].close()


def make_proxy(upstreams: Sequence[str]) -> web.Application:
    """The proxy application over ``upstreams`` (``http://host:port``, no trailing slash)."""
    if not upstreams:
        raise ValueError("the proxy needs at least one upstream")
    app = web.Application()
    app[UPSTREAMS_KEY] = [upstream.rstrip("/") for upstream in upstreams]
    app[TURNS_KEY] = Turns()
    app.on_startup.append(_open_session)
    app.on_cleanup.append(_close_session)
    app.router.add_route("*", "/{tail:.*}", forward)
    return app


def run_proxy(upstreams: Sequence[str], host: str, port: int) -> None:
    """Serve the proxy until interrupted.

    # NOTE: ``handler_cancellation``: a client that goes away cancels its ``forward``, which
    # closes the upstream request at once. Without it (``run_app``'s default) the proxy notices
    # only at the worker's next write, so a worker holding a silent stream never learns that its
    # reader left (aiohttp's TestServer turns it on, so only a real run shows the difference).
    """
    web.run_app(make_proxy(upstreams), host=host, port=port, print=None, handler_cancellation=True)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m server.cli.proxy", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--upstream", action="append", required=True, help="a worker's URL")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    print(json.dumps({"proxy": f"http://{args.host}:{args.port}", "upstreams": args.upstream}))
    run_proxy(args.upstream, args.host, args.port)


if __name__ == "__main__":
    main()
