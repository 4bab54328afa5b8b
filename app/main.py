"""Entry point run by PyScript: builds the store, the view and the page, then marks it ready."""

from __future__ import annotations

from collections.abc import Callable

from app import browser
from app.chat_stream import ChatStream
from app.coalesce import FrameCoalescer
from app.config import ClientConfig
from app.controller import Controller
from app.state import State
from app.trace import format_trace
from app.view import View


def _compact(api_base: str) -> Callable[[str], None]:
    def compact(chat_id: str) -> None:
        async def run() -> None:
            await browser.fetch_json(
                f"{api_base}/api/chats/{chat_id}/compact", method="POST", payload={}
            )

        browser.spawn(run())

    return compact


def _remember_active_chat(state: State, previous: State) -> None:
    if state.active_chat_id != previous.active_chat_id:
        browser.remember_chat(state.active_chat_id)


def _refresh_titles(stream: ChatStream) -> Callable[[State, State], None]:
    """The server names a chat after its first turn: fetch the list when an answer settles."""

    def on_change(state: State, previous: State) -> None:
        if previous.is_generating and not state.is_generating and browser.is_online():
            stream.refresh_chats()

    return on_change


async def _api_base() -> str:
    """``apiBase`` from ``config.json`` (a static deploy points it at the backend)."""
    try:
        config = await browser.fetch_json("./config.json")
    except Exception:  # NOTE: no config.json means same origin
        return ""
    return str(config.get("apiBase", "")) if isinstance(config, dict) else ""


async def main() -> None:
    config = ClientConfig.from_query(browser.query_params())
    for warning in config.warnings:
        browser.log(f"riacho config: {warning}")
    api_base = await _api_base()
    await browser.fetch_json(f"{api_base}/api/session")
    stream = ChatStream(
        browser.BrowserTransport(api_base),
        config=config,
        clock=browser.now_ms,
        is_online=browser.is_online,
        on_trace=lambda trace: browser.log(format_trace(trace)),
    )
    view = View(browser.BrowserDom())
    coalescer = FrameCoalescer(browser.request_frame, view.render)
    stream.subscribe(coalescer.on_change)
    stream.subscribe(_remember_active_chat)
    stream.subscribe(_refresh_titles(stream))
    controller = Controller(stream, browser.copy_to_clipboard, _compact(api_base))
    page = browser.Page(controller, api_base)
    page.bind()
    await browser.load_models(api_base)
    await stream.refresh_chats()
    chat_id = browser.active_chat_from_url()
    if chat_id is not None and chat_id in stream.get_state().chats:
        stream.select_chat(chat_id)
    view.render(stream.get_state())
    page.enable()
    browser.mark_ready()


async def boot() -> None:
    try:
        await main()
    except Exception as error:
        browser.mark_boot_failed(str(error))
        raise


browser.spawn(boot())
