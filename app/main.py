"""Entry point run by PyScript: wires the browser adapter to the page."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import js  # type: ignore[import-not-found]

from app import browser
from app.sse import SSEDecoder

_tasks: set[asyncio.Task[None]] = set()
_chat_id: str | None = None


def _spawn(coroutine: Any) -> None:
    task = asyncio.ensure_future(coroutine)
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)


def _append_message(role: str, text: str = "") -> Any:
    js_message = js.document.createElement("article")
    js_message.className = "message"
    js_message.setAttribute("data-role", role)
    js_text = js.document.createElement("div")
    js_text.className = "message-text" if role == "assistant" else "user-text"
    js_text.textContent = text
    js_message.appendChild(js_text)
    browser.query("#messages").appendChild(js_message)
    return js_message


async def _ensure_chat() -> str:
    global _chat_id
    if _chat_id is None:
        chat = await browser.fetch_json("/api/chats", method="POST", payload={})
        _chat_id = str(chat["id"])
    return _chat_id


async def _stream_answer(prompt: str) -> None:
    chat_id = await _ensure_chat()
    run_id = f"run_{uuid.uuid4().hex}"
    _append_message("user", prompt)
    js_message = _append_message("assistant")
    js_message.setAttribute("data-run-id", run_id)
    js_message.setAttribute("data-status", "connecting")
    js_text = js_message.querySelector(".message-text")
    body = json.dumps({"chatId": chat_id, "prompt": prompt, "runId": run_id})
    headers = {"Content-Type": "application/json", "X-Run-Id": run_id}
    js_controller = js.AbortController.new()
    chunks = await browser.open_event_stream(
        "/api/respond/stream", method="POST", body=body, headers=headers, js_signal=js_controller.signal
    )
    decoder = SSEDecoder()
    status = "interrupted"
    async for chunk in chunks:
        for message in decoder.feed(chunk):
            event = json.loads(message.data)
            if event.get("type") == "text":
                js_message.setAttribute("data-status", "receiving")
                js_text.textContent = str(js_text.textContent) + event["text"]
            elif event.get("type") == "done":
                status = "completed"
            elif event.get("type") == "error":
                status = "failed"
    js_message.setAttribute("data-status", status)


def _on_submit(js_event: Any) -> None:
    js_event.preventDefault()
    js_prompt = browser.query("textarea[name=prompt]")
    prompt = str(js_prompt.value).strip()
    if prompt:
        js_prompt.value = ""
        _spawn(_stream_answer(prompt))


def _on_keydown(js_event: Any) -> None:
    if js_event.key == "Enter" and not js_event.shiftKey:
        _on_submit(js_event)


async def main() -> None:
    listeners = browser.Listeners()
    await browser.fetch_json("/api/session")
    listeners.on(browser.query("#composer"), "submit", _on_submit)
    listeners.on(browser.query("textarea[name=prompt]"), "keydown", _on_keydown)
    for selector in ("textarea[name=prompt]", "[data-action=send]"):
        browser.query(selector).disabled = False
    browser.query("#messages").innerHTML = ""
    browser.query("#boot-text").textContent = "Ready"
    js.document.documentElement.setAttribute("data-boot", "ready")
    js.document.documentElement.setAttribute("data-ready", "")


_spawn(main())
