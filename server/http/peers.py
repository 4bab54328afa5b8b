"""Who is on the other end: the peer of the connection, and the client behind a trusted proxy.

A proxy in front (``--trusted-proxy``, default loopback) is the peer of every request it
forwards; the client it serves is the last address of its ``X-Forwarded-For``. Only a trusted
proxy's header counts: from anyone else it is the client's own claim.
"""

from __future__ import annotations

import ipaddress

from aiohttp import web

from server.http.services import services


def from_trusted_proxy(request: web.Request) -> bool:
    """The peer is one of ``--trusted-proxy`` (addresses or networks)."""
    try:
        peer = ipaddress.ip_address(request.remote or "")
    except ValueError:
        return False
    proxies = services(request).config.trusted_proxies
    return any(peer in ipaddress.ip_network(proxy, strict=False) for proxy in proxies)


def client_address(request: web.Request) -> str | None:
    """The client's address: what a trusted proxy saw (the last ``X-Forwarded-For`` entry),
    else the peer's."""
    forwarded = request.headers.get("X-Forwarded-For", "")
    if forwarded and from_trusted_proxy(request):
        last = forwarded.split(",")[-1].strip()
        if last:
            return last
    return request.remote
