"""``GET/PATCH /api/settings``: the user's settings (app/wire/settings.py)."""

from __future__ import annotations

from aiohttp import web
from pydantic import ValidationError

from app.wire.settings import Settings, SettingsPatch
from server.contract.errors import ApiError
from server.contract.jsonio import answer_payload, read_json_body
from server.http.auth import current_user
from server.http.services import services
from server.store import settings as stored
from server.store.db import Database


async def _settings_of(db: Database, user_id: str) -> Settings:
    data = await stored.settings_data(db, user_id)
    if data is None:
        return Settings()
    try:
        return Settings.model_validate_json(data)
    except ValidationError:  # NOTE: a value an older server kept and this one refuses
        return Settings()


async def get_settings(request: web.Request) -> web.Response:
    """``GET /api/settings``: the user's settings (the defaults if none were saved)."""
    return answer_payload(await _settings_of(services(request).db, current_user(request)))


async def patch_settings(request: web.Request) -> web.Response:
    """``PATCH /api/settings``: change the fields sent; a bad one changes nothing (400)."""
    svc, user_id = services(request), current_user(request)
    body = await read_json_body(request)
    try:
        patch = SettingsPatch.model_validate(body)
    except ValidationError as error:
        raise ApiError(400, "invalid_body", _problem(error)) from error
    model_id = patch.default_model_id
    if model_id is not None and svc.catalog.find(model_id) is None:
        raise ApiError(400, "invalid_body", f"defaultModelId: no model {model_id!r}")
    settings = patch.applied_to(await _settings_of(svc.db, user_id))
    await stored.save_settings(svc.db, user_id, settings.model_dump_json(by_alias=True))
    return answer_payload(settings)


def _problem(error: ValidationError) -> str:
    """The first problem, in words, naming the field as the wire spells it."""
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "body"
    return f"{where}: {first['msg']}"
