"""Who is asking: sessions and the three ways a user is known (``--auth``).

    anonymous   each browser gets its own user on ``GET /api/session`` (the loopback default)
    password    accounts made with ``python -m server users add NAME`` (argon2 hashes); the page
                signs in with ``POST /api/session/sign-in`` and out with ``…/sign-out``
    proxy       an SSO proxy in front names the user in ``--trusted-user-header``: honoured
                only from the peers of ``--trusted-proxy`` (default: loopback), and a header
                given twice is refused (400 ``invalid_header``)

The session cookie is ``HttpOnly``, ``SameSite=Lax``, ``Secure`` over https (or when the name
it is reached by is an https ``--public-url``: TLS ends at a proxy), and a new one is issued at
sign-in (the old one is dropped). Sessions end when unused for ``session_idle_s`` or older
than ``session_absolute_s`` (anonymous ones live as long as their cookie); ``…/sign-out-
everywhere`` ends all of a user's. ``?as=NAME`` switches user only with
``--test-hooks``. Passwords are checked off the event loop and wrong ones throttled
(server.http.passwords, server.http.throttle). Every ``/api`` route but the session's own
needs a user: 401 ``unauthenticated`` otherwise.
"""

from __future__ import annotations

import re
import secrets
import time
from urllib.parse import urlsplit

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.wire.api import AuthMode, SessionInfo, UploadLimits
from server.config import Config, Limits
from server.contract.errors import ApiError, Handler
from server.contract.jsonio import answer_payload, read_json_body
from server.http.hosts import host_name
from server.http.peers import client_address, from_trusted_proxy
from server.http.services import services
from server.http.throttle import attempt_keys
from server.store.db import Database
from server.store.users import (
    Lifetime,
    end_session,
    end_sessions_of,
    ensure_user,
    find_user,
    open_session,
    user_of_session,
)

COOKIE_NAME = "riacho_session"
USER_KEY = web.RequestKey("riacho_user_id", str)
NAME_PATTERN = r"[A-Za-z0-9_.-]{1,64}"
_NAME_RE = re.compile(NAME_PATTERN)
_PUBLIC = frozenset({"/api/session", "/api/session/sign-in", "/api/session/sign-out"})


class SignIn(BaseModel):
    """``POST /api/session/sign-in``."""

    model_config = ConfigDict(extra="forbid", strict=True)

    name: str = Field(pattern=f"^{NAME_PATTERN}$")
    password: str = Field(min_length=1, max_length=1024)


# --- users and sessions in the database ---------------------------------------------------------


def session_lifetime(config: Config) -> Lifetime:
    """How long a session lives in this auth mode (an anonymous one: as long as its cookie)."""
    limits = config.limits
    if config.auth == "anonymous":
        forever = limits.anonymous_session_absolute_s
        return Lifetime(idle_s=forever, absolute_s=forever)
    return Lifetime(idle_s=limits.session_idle_s, absolute_s=limits.session_absolute_s)


async def _user_of_token(request: web.Request, token: str | None) -> tuple[str, str] | None:
    if not token:
        return None
    svc = services(request)
    return await user_of_session(svc.db, token, session_lifetime(svc.config))


async def _open_session(db: Database, user_id: str) -> str:
    token = secrets.token_urlsafe(24)
    await open_session(db, token, user_id)
    return token


async def _drop_session(db: Database, token: str | None) -> None:
    if token:
        await end_session(db, token)


def _over_https(request: web.Request) -> bool:
    """The page reached the server over https: directly, or through a proxy that terminates
    TLS in front of it (the request's name is one of the https ``--public-url``s)."""
    if request.secure:
        return True
    host = host_name(request.headers.get("Host", ""))
    public = services(request).config.public_urls
    return any(u.startswith("https://") and urlsplit(u).hostname == host for u in public)


def _set_cookie(request: web.Request, response: web.StreamResponse, token: str) -> None:
    lifetime = session_lifetime(services(request).config)
    response.set_cookie(
        COOKIE_NAME,
        token,
        httponly=True,
        samesite="Lax",
        secure=_over_https(request),
        path="/",
        max_age=int(lifetime.absolute_s),
    )


# --- who is asking ------------------------------------------------------------------------------


async def _proxy_user(request: web.Request) -> tuple[str, str] | None:
    """The user named by the proxy's header: only from a trusted proxy, and only once."""
    svc = services(request)
    header = svc.config.trusted_user_header or ""
    if not from_trusted_proxy(request):
        return None  # NOTE: anyone can write the header; only the proxy's copy counts
    values = request.headers.getall(header, [])
    if len(values) > 1:
        raise ApiError(400, "invalid_header", f"{header} is given {len(values)} times")
    name = values[0].strip() if values else ""
    if not _NAME_RE.fullmatch(name):
        return None
    return await ensure_user(svc.db, name), name


async def _known_user(request: web.Request) -> tuple[str, str] | None:
    """The user a request is from (``None``: nobody yet)."""
    svc = services(request)
    if svc.config.auth == "proxy":
        return await _proxy_user(request)
    return await _user_of_token(request, request.cookies.get(COOKIE_NAME))


def _session_info(user: tuple[str, str], mode: AuthMode, limits: Limits) -> SessionInfo:
    upload = UploadLimits(
        attachment_max_bytes=limits.attachment_max_bytes,
        attachments_per_message=limits.attachments_per_request,
        attachment_types=sorted(limits.attachment_types),
    )
    return SessionInfo(user_id=user[0], name=user[1], auth=mode, limits=upload)


async def get_session(request: web.Request) -> web.Response:
    """``GET /api/session``: the current user; an anonymous one is made in anonymous mode."""
    svc = services(request)
    mode = svc.config.auth
    wanted = request.query.get("as") if svc.config.test_hooks else None
    if wanted is not None and not _NAME_RE.fullmatch(wanted):
        raise ApiError(400, "invalid_body", "'as' must be 1-64 letters, digits, '_', '.' or '-'")
    current = await _known_user(request)
    if current and (wanted is None or current[1] == wanted):
        return answer_payload(_session_info(current, mode, svc.config.limits))
    if wanted is None and mode != "anonymous":
        raise ApiError(401, "unauthenticated", _SIGN_IN_HINT[mode])
    name = wanted or f"anon-{secrets.token_hex(4)}"
    user_id = await ensure_user(svc.db, name)
    response = answer_payload(_session_info((user_id, name), mode, svc.config.limits))
    _set_cookie(request, response, await _open_session(svc.db, user_id))
    return response


_SIGN_IN_HINT: dict[AuthMode, str] = {
    "anonymous": "",
    "password": "sign in with your name and password",
    "proxy": "the sign-in proxy did not name a user",
}


async def sign_in(request: web.Request) -> web.Response:
    """``POST /api/session/sign-in`` ``{"name", "password"}``: a new session for the account."""
    svc = services(request)
    if svc.config.auth != "password":
        raise ApiError(404, "not_found", "this server has no password accounts")
    try:
        body = SignIn.model_validate(await read_json_body(request))
    except ValidationError as exc:
        raise ApiError(400, "invalid_body", "give a 'name' and a 'password'") from exc
    keys = attempt_keys(body.name, client_address(request))
    _check_throttle(request, keys)
    svc.throttle.failed(keys, time.monotonic())  # NOTE: until the check says otherwise
    found = await find_user(svc.db, body.name)
    if not await svc.passwords.matches(found[1] if found else None, body.password):
        raise ApiError(401, "invalid_credentials", "that name and password do not match")
    assert found is not None  # NOTE: an unknown name never matches (the dummy hash)
    svc.throttle.succeeded(keys)
    await _drop_session(svc.db, request.cookies.get(COOKIE_NAME))  # NOTE: rotated at sign-in
    response = answer_payload(_session_info((found[0], body.name), "password", svc.config.limits))
    _set_cookie(request, response, await _open_session(svc.db, found[0]))
    return response


def _check_throttle(request: web.Request, keys: tuple[str, str]) -> None:
    """429 ``too_many_attempts`` with ``Retry-After`` while wrong passwords impose a wait."""
    wait = services(request).throttle.wait_s(keys, time.monotonic())
    if wait > 0:
        raise ApiError(
            429,
            "too_many_attempts",
            f"too many wrong passwords; try again in {wait} s",
            {"Retry-After": str(wait)},
        )


async def sign_out(request: web.Request) -> web.Response:
    """``POST /api/session/sign-out``: the session ends (its cookie is cleared)."""
    await _drop_session(services(request).db, request.cookies.get(COOKIE_NAME))
    response = web.Response(status=204)
    response.del_cookie(COOKIE_NAME, path="/")
    return response


async def sign_out_everywhere(request: web.Request) -> web.Response:
    """``POST /api/session/sign-out-everywhere``: every session of the user ends (every
    browser and device); this one's cookie is cleared."""
    await end_sessions_of(services(request).db, current_user(request))
    response = web.Response(status=204)
    response.del_cookie(COOKIE_NAME, path="/")
    return response


@web.middleware
async def auth_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Resolve who asks for ``/api`` and ``/__test__`` routes; 401 ``unauthenticated``."""
    guarded = request.path.startswith(("/api/", "/__test__/")) and request.method != "OPTIONS"
    if guarded and request.path not in _PUBLIC:
        user = await _known_user(request)
        if user is None:
            raise ApiError(401, "unauthenticated", "no session: call GET /api/session first")
        request[USER_KEY] = user[0]
    return await handler(request)


def current_user(request: web.Request) -> str:
    """The authenticated user id of an ``/api`` request."""
    return request[USER_KEY]
