"""Anonymous sessions: a cookie names a user; every ``/api`` route needs it."""

from __future__ import annotations

import re
import secrets

from aiohttp import web

from app.wire.api import SessionInfo
from server.db import Database, new_id, now
from server.errors import ApiError, Handler
from server.jsonio import answer_payload
from server.services import services

COOKIE_NAME = "riacho_session"
USER_KEY = web.RequestKey("riacho_user_id", str)
_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_PUBLIC = frozenset({"/api/session"})


def _user_of_token(db: Database, token: str | None) -> tuple[str, str] | None:
    if not token:
        return None
    row = db.one(
        "SELECT u.id, u.name FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.token = ?",
        (token,),
    )
    return (row["id"], row["name"]) if row else None


def _user_named(db: Database, name: str) -> str:
    row = db.one("SELECT id FROM users WHERE name = ?", (name,))
    if row:
        return str(row["id"])
    user_id = new_id("usr")
    db.execute("INSERT INTO users (id, name, created_at) VALUES (?, ?, ?)", (user_id, name, now()))
    return user_id


def _open_session(db: Database, user_id: str) -> str:
    token = secrets.token_urlsafe(24)
    db.execute(
        "INSERT INTO sessions (token, user_id, created_at) VALUES (?, ?, ?)",
        (token, user_id, now()),
    )
    return token


async def get_session(request: web.Request) -> web.Response:
    """``GET /api/session``: the current user, creating an anonymous one (``?as=NAME`` switches)."""
    db = services(request).db
    wanted = request.query.get("as")
    if wanted is not None and not _NAME_RE.match(wanted):
        raise ApiError(400, "invalid_body", "'as' must be 1-64 letters, digits, '_', '.' or '-'")
    current = _user_of_token(db, request.cookies.get(COOKIE_NAME))
    if current and (wanted is None or current[1] == wanted):
        return answer_payload(SessionInfo(user_id=current[0], name=current[1]))
    name = wanted or f"anon-{secrets.token_hex(4)}"
    user_id = _user_named(db, name)
    response = answer_payload(SessionInfo(user_id=user_id, name=name))
    response.set_cookie(
        COOKIE_NAME,
        _open_session(db, user_id),
        httponly=True,
        samesite="Lax",
        path="/",
        max_age=365 * 24 * 3600,
    )
    return response


@web.middleware
async def auth_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Resolve the session cookie of ``/api`` requests; 401 ``unauthenticated`` without one."""
    if request.path.startswith("/api/") and request.path not in _PUBLIC:
        user = _user_of_token(services(request).db, request.cookies.get(COOKIE_NAME))
        if user is None:
            raise ApiError(401, "unauthenticated", "no session: call GET /api/session first")
        request[USER_KEY] = user[0]
    return await handler(request)


def current_user(request: web.Request) -> str:
    """The authenticated user id of an ``/api`` request."""
    return request[USER_KEY]
