"""The ``Host`` allowlist: a request naming any other host is refused before any route runs.

A web page whose name is rebound to 127.0.0.1 (DNS rebinding) reaches a loopback server as a
same-origin page: its requests carry ``Host: rebind.example:PORT`` and the matching ``Origin``,
so origin checks alone (which compare ``Origin`` with ``Host``) would let it drive the API. So
the server answers only the names it is reached by:

    loopback    ``127.0.0.1``, ``localhost``, ``::1``: when it listens on loopback or on every
                address (``0.0.0.0``, ``::``)
    --host      the name or address it listens on, when a specific one
    --public-url / ``public_urls`` in the TOML: the names a proxy or users reach it by

Anything else: 421 ``host_refused`` (RFC 9110 §15.5.20: "not able to produce a response for
this target"). Only the name is compared, not the port: a rebound page reaches the very port
the server listens on, and a proxy in front may forward any port.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from aiohttp import web

from server.config import Config
from server.contract.errors import ApiError, Handler
from server.http.services import services

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
_EVERY_ADDRESS = frozenset({"", "0.0.0.0", "::"})


def host_name(value: str) -> str:
    """The name of a ``Host`` header's value, lowercased: ``[::1]:80`` → ``::1``."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    name, _, _port = value.partition(":")
    return name.rstrip(".")


def allowed_host_names(config: Config) -> frozenset[str]:
    """The host names this server answers to."""
    names = {urlsplit(url).hostname or "" for url in config.public_urls}
    bound = config.host.lower()
    if bound in LOOPBACK_NAMES or bound in _EVERY_ADDRESS:
        names |= LOOPBACK_NAMES
    else:
        names.add(host_name(bound))
    return frozenset(names - {""})


@web.middleware
async def host_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """421 ``host_refused`` for a ``Host`` (or none) that is not one of this server's names."""
    host = request.headers.get("Host")
    if host is None or host_name(host) not in services(request).allowed_hosts:
        raise ApiError(421, "host_refused", f"this server does not answer to {host!r}")
    return await handler(request)
