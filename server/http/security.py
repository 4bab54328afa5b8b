"""What every response and every state-changing request must satisfy.

- **Cross-site requests.** ``POST``/``PUT``/``PATCH``/``DELETE`` under ``/api`` and ``/__test__``
  carry no foreign ``Origin`` (the page's own, or one of ``--allowed-origin``) and, when they
  have a body, are JSON (``multipart/form-data`` for ``/api/attachments``): a form on another
  site can neither send JSON nor hide its origin, so it cannot act for a signed-in user.
- **CORS** with credentials only for ``--allowed-origin`` (a static deploy on another origin).
- **Headers** on every response: a Content-Security-Policy with no remote origin (Pyodide
  needs ``'wasm-unsafe-eval'`` to compile WebAssembly and ``'unsafe-eval'`` for its dynamic
  linker; PyScript needs inline styles and ``blob:`` workers), ``nosniff``, no referrer, no
  framing, and a ``Server`` header without versions; COEP (``credentialless``) with COOP, so the
  page is cross-origin isolated (``--no-cross-origin-isolation`` leaves COEP out).
"""

from __future__ import annotations

from aiohttp import web

from server.contract.errors import ApiError, Handler
from server.http.services import services

_CHANGES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_UPLOAD_PATH = "/api/attachments"
CODE_SANDBOX_BOOTSTRAP = "sha256-mzHpEobMN5Du2zgeFokCX1L96c7dKmVW1VKi1/EiEDo="


def content_security_policy(api_origin: str | None = None, *, in_meta: bool = False) -> str:
    """The page's Content-Security-Policy: no remote origin but ``api_origin`` (a static deploy's
    API, for its requests and its attachment previews); ``in_meta`` leaves out what a
    ``<meta http-equiv>`` cannot carry (``frame-ancestors``: browsers ignore it there and say
    so in the console)."""
    api = f" {api_origin}" if api_origin else ""
    directives = [
        "default-src 'self'",
        # NOTE: Pyodide compiles WebAssembly ('wasm-unsafe-eval') and its dynamic linker evals
        # the EM_ASM snippets of shared libraries such as pydantic-core ('unsafe-eval').
        # NOTE: and the one inline script of the code sandbox's frame (static/code/host.mjs's
        # BOOTSTRAP; a srcdoc frame inherits this policy), by its hash
        f"script-src 'self' 'wasm-unsafe-eval' 'unsafe-eval' '{CODE_SANDBOX_BOOTSTRAP}'",
        "style-src 'self' 'unsafe-inline'",
        f"img-src 'self' data: blob:{api}",
        "font-src 'self' data:",
        f"connect-src 'self'{api}",
        "worker-src 'self' blob:",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
    ]
    if not in_meta:
        directives.append("frame-ancestors 'none'")
    return "; ".join(directives)


CONTENT_SECURITY_POLICY = content_security_policy()
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
}


def _own_origin(request: web.Request) -> str:
    return f"{request.scheme}://{request.host}"


def _allowed(request: web.Request, origin: str) -> bool:
    return origin == _own_origin(request) or origin in services(request).config.allowed_origins


def _check_change(request: web.Request) -> None:
    origin = request.headers.get("Origin")
    if origin is not None and not _allowed(request, origin):
        raise ApiError(403, "origin_refused", f"requests from {origin!r} are not accepted")
    if request.method in ("POST", "PUT", "PATCH"):
        _check_content_type(request)


def _check_content_type(request: web.Request) -> None:
    if not request.body_exists or request.content_length == 0:
        return  # NOTE: nothing to read, whatever type a client names for it
    kind = (request.headers.get("Content-Type") or "").split(";")[0].strip().lower()
    wanted = "multipart/form-data" if request.path == _UPLOAD_PATH else "application/json"
    if kind != wanted:
        raise ApiError(415, "unsupported_media_type", f"send {wanted} (got {kind or 'nothing'})")


def _cors_headers(request: web.Request) -> dict[str, str]:
    origin = request.headers.get("Origin")
    if origin is None or origin not in services(request).config.allowed_origins:
        return {}
    return {
        "Access-Control-Allow-Origin": origin,
        "Access-Control-Allow-Credentials": "true",
        # NOTE: the page reads how long to wait before trying again (429, 503)
        "Access-Control-Expose-Headers": "Retry-After, Content-Disposition",
    }


def _preflight(request: web.Request) -> web.Response:
    headers = _cors_headers(request)
    if not headers:
        raise ApiError(403, "origin_refused", "this origin may not call the API")
    headers.update(
        {
            "Access-Control-Allow-Methods": "GET, POST, PATCH, DELETE",
            "Access-Control-Allow-Headers": "Content-Type, Last-Event-ID, X-Run-Id",
            "Access-Control-Max-Age": "600",
        }
    )
    return web.Response(status=204, headers=headers)


@web.middleware
async def security_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Refuse cross-site state changes; answer CORS preflights for the allowed origins."""
    is_api = request.path.startswith(("/api/", "/__test__/"))
    if is_api and request.method == "OPTIONS":
        return _preflight(request)
    if is_api and request.method in _CHANGES:
        _check_change(request)
    return await handler(request)


def _merged_vary(current: str | None, extra: str) -> str:
    """A ``Vary`` header naming ``extra`` too (a page file already varies by encoding)."""
    names = [name.strip() for name in (current or "").split(",") if name.strip()]
    if extra.lower() not in (name.lower() for name in names):
        names.append(extra)
    return ", ".join(names)


async def add_response_headers(request: web.Request, response: web.StreamResponse) -> None:
    """``on_response_prepare``: every per-request header, set as the headers are sent.

    # NOTE: here, not in a middleware after the handler: a streamed answer (SSE, a resume) has
    # sent its headers before its handler returns, and an error answered by aiohttp itself
    # never returns through a middleware. So CORS, ``Vary: Origin`` and the security headers
    # reach every response, whichever way it was made.
    """
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    response.headers["Server"] = "Riacho"
    if services(request).config.cross_origin_isolation:
        # NOTE: with COOP, cross-origin isolation: Stop interrupts code run in the page and
        # keeps its state (SPEC §13); credentialless, as the page loads nothing cross-origin
        response.headers.setdefault("Cross-Origin-Embedder-Policy", "credentialless")
    for name, value in _cors_headers(request).items():
        response.headers.setdefault(name, value)
    # NOTE: on every response, allowed origin or not: a shared cache must not hand one
    # origin's answer (with or without CORS headers) to another.
    response.headers["Vary"] = _merged_vary(response.headers.get("Vary"), "Origin")
