"""What this browser keeps of the signed-in user (SPEC §11): the session, the API reads and
the prompts queued offline.

The reads (:class:`~app.run.kept.KeptApi`'s shelf) are kept in Cache Storage, in a cache named
after the user (``riacho-device-<user id>``), never in the service worker's caches, which hold
only the page's files and are the same for everyone. The last session is kept in
``localStorage`` so that the page can start with no server, and the queued prompts under the
user's id there. Sign-out forgets all of it, and a
page started by another user forgets the previous user's first (:func:`keep_only`).
"""

from __future__ import annotations

import json

import js
from pydantic import ValidationError
from pyodide.ffi import JsException

from app.browser.edge import js_object, present
from app.state.outbox import Outbox
from app.state.outbox import kept_outbox as outbox_from_json
from app.wire.api import SessionInfo

DEVICE_CACHE = "riacho-device-"
SESSION_KEY = "riacho.session"
OUTBOX_KEY = "riacho.outbox."
KEY_PREFIX = "riacho."
# NOTE: a URL of the page's own folder that nothing serves: a cache needs a URL per entry
ENTRY_PATH = "./__device__/"


class CacheShelf:
    """A :class:`~app.run.kept.Shelf` in the user's own cache. Where the browser refuses
    (no Cache Storage outside a secure context, storage full), nothing is kept: the page
    works as it would without the device's copies."""

    def __init__(self, user_id: str) -> None:
        self._name = DEVICE_CACHE + user_id

    async def read(self, key: str) -> str | None:
        try:
            js_cache = await js.caches.open(self._name)
            js_response = await js_cache.match(ENTRY_PATH + key)
            return str(await js_response.text()) if present(js_response) else None
        except (JsException, AttributeError):  # NOTE: AttributeError: no js.caches at all
            return None

    async def write(self, key: str, text: str) -> None:
        headers = js_object({"Content-Type": "application/json; charset=utf-8"})
        js_response = js.Response.new(text, js_object({"headers": headers}))
        try:
            js_cache = await js.caches.open(self._name)
            await js_cache.put(ENTRY_PATH + key, js_response)
        except (JsException, AttributeError):
            return

    async def remove(self, key: str) -> None:
        try:
            js_cache = await js.caches.open(self._name)
            await js_cache.delete(ENTRY_PATH + key)
        except (JsException, AttributeError):
            return


def kept_outbox(user_id: str) -> Outbox:
    """The prompts ``user_id`` queued offline on an earlier page, in order."""
    text = js.localStorage.getItem(OUTBOX_KEY + user_id)
    if not present(text):
        return ()
    try:
        return outbox_from_json(json.loads(str(text)))
    except ValueError:
        return ()


def keep_outbox(user_id: str, outbox: Outbox) -> None:
    """Keep the queued prompts (a reload or a closed tab loses none of them)."""
    if outbox:
        kept = json.dumps([item.to_json() for item in outbox])
        js.localStorage.setItem(OUTBOX_KEY + user_id, kept)
    else:
        js.localStorage.removeItem(OUTBOX_KEY + user_id)


def kept_session() -> SessionInfo | None:
    """The session this browser last had, if any (read when the server cannot be reached)."""
    text = js.localStorage.getItem(SESSION_KEY)
    if not present(text):
        return None
    try:
        return SessionInfo.model_validate_json(str(text))
    except ValidationError:
        return None


def remember_session(session: SessionInfo) -> None:
    js.localStorage.setItem(SESSION_KEY, session.model_dump_json(by_alias=True))


async def keep_only(session: SessionInfo) -> None:
    """Start keeping for ``session``'s user: what another user left here is forgotten first."""
    previous = kept_session()
    if previous is not None and previous.user_id != session.user_id:
        await forget()
    remember_session(session)


async def forget() -> None:
    """Everything of Riacho's that belongs to a user: the kept reads of every user, and every
    ``riacho.*`` key (the session, drafts, views, options, queued prompts)."""
    try:
        names = [str(name) for name in await js.caches.keys()]
        for name in names:
            if name.startswith(DEVICE_CACHE):
                await js.caches.delete(name)
    except (JsException, AttributeError):
        pass  # NOTE: no Cache Storage here: nothing was kept in it
    storage = js.localStorage
    keys = [str(storage.key(index)) for index in range(int(storage.length))]
    for key in keys:
        if key.startswith(KEY_PREFIX):
            storage.removeItem(key)
