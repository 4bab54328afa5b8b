"""The sign-in form: shown until a name and password match; while the server imposes a wait
(429 ``too_many_attempts``), it counts the seconds down with Sign in disabled."""

from __future__ import annotations

import asyncio
import math

from app.browser.edge import JsValue, Listeners, query
from app.run.transport import ChatApi
from app.ui.sign_in import sign_in_refusal
from app.wire.api import SessionInfo
from app.wire.errors import HttpStatusError, TransportError


async def sign_in_form(api: ChatApi) -> SessionInfo:
    """Show the sign-in form until a name and password match (the boot waits here)."""
    js_form = query("form[name=sign-in]")
    query("#boot-text").textContent = "Sign in to continue"
    js_form.hidden = False
    query("input[name=username]").focus()
    listeners = Listeners()
    submitted: asyncio.Queue[tuple[str, str]] = asyncio.Queue()

    def on_submit(js_event: JsValue) -> None:
        js_event.preventDefault()
        name = str(query("input[name=username]").value).strip()
        submitted.put_nowait((name, str(query("input[name=password]").value)))

    listeners.on(js_form, "submit", on_submit)
    try:
        while True:
            name, password = await submitted.get()
            try:
                session = await api.sign_in(name, password)
            except (HttpStatusError, TransportError) as error:
                await _refused(error)
                continue
            js_form.hidden = True
            return session
    finally:
        listeners.teardown()
        query("input[name=password]").value = ""


async def _refused(error: HttpStatusError | TransportError) -> None:
    """Say why; when the server said how long to wait, count it down with Sign in disabled."""
    js_error = query("#sign-in-error")
    code, message = error.code or "network_error", str(error.message)
    wait = math.ceil(error.retry_after or 0) if isinstance(error, HttpStatusError) else 0
    js_button = query("form[name=sign-in] button[type=submit]")
    js_button.disabled = wait > 0
    for left in range(wait, 0, -1):
        js_error.textContent = sign_in_refusal(code, message, left)
        await asyncio.sleep(1)
    js_error.textContent = sign_in_refusal(code, message)
    js_button.disabled = False
