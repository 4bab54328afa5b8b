"""Entry point run by PyScript: builds the store, the view and the page, then marks it ready."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC

from app.browser import chat_files, device, edge, net, page
from app.browser.chat_menu import ChatMenus
from app.browser.client_tool import ClientTools, CodeSettingsKept
from app.browser.code_runner import CodeRunner, DataFiles
from app.browser.dom import BrowserDom
from app.browser.enhance import Enhancer
from app.browser.settings_panel import SettingsPanel
from app.run.chat_stream import ChatStream
from app.run.config import ClientConfig
from app.run.kept import KeptApi
from app.run.notices import NoticeTimer
from app.state.history import view_of
from app.state.state import State
from app.state.trace import format_trace
from app.ui import answer_meta, markdown
from app.ui.coalesce import FrameCoalescer
from app.ui.controller import Controller
from app.ui.view import View
from app.wire import parts, protocol
from app.wire.api import SessionInfo
from app.wire.errors import ChatError, TransportError

PREPARED_LANGUAGE = "python"  # NOTE: its lexer is prepared before any answer needs it


def _remember_active_chat(state: State, previous: State) -> None:
    if state.active_chat_id != previous.active_chat_id:
        edge.remember_chat(state.active_chat_id)


def _refresh_titles(stream: ChatStream, kept: KeptApi) -> Callable[[State, State], None]:
    """The server names a chat after its first turn: fetch the list when an answer settles,
    and keep the chat on the device as it is now."""

    def on_change(state: State, previous: State) -> None:
        if previous.is_generating and not state.is_generating and edge.is_online():
            stream.refresh_chats()
            chat = state.active_chat
            # NOTE: only a chat the server has (a first send it refused made none)
            if chat is not None and any(run.last_seq for run in chat.runs.values()):
                edge.spawn(kept.refresh_copy(chat.chat_id))

    return on_change


def _switch_drafts(drafts: page.Drafts) -> Callable[[State, State], None]:
    """Each chat keeps its own unsent prompt."""

    def on_change(state: State, previous: State) -> None:
        if state.active_chat_id != previous.active_chat_id:
            made_here = state.active_chat_id not in previous.chats  # NOTE: by a first send
            drafts.switch(state.active_chat_id, made_here=made_here)

    return on_change


def _keep_views(views: page.LocalViews) -> Callable[[State, State], None]:
    """Each chat remembers the branch and the attempts on screen (a reload shows the same)."""

    def on_change(state: State, previous: State) -> None:
        chat, before = state.active_chat, previous.active_chat
        if chat is None or not chat.loaded or before is None or before.chat_id != chat.chat_id:
            return
        if chat.branches is before.branches and chat.messages is before.messages:
            return
        view = view_of(chat)
        if view != view_of(before):
            views.save(chat.chat_id, view)

    return on_change


def _keep_outbox(user_id: str) -> Callable[[State, State], None]:
    """The queued prompts are kept on the device as they change."""

    def on_change(state: State, previous: State) -> None:
        if state.outbox != previous.outbox:
            device.keep_outbox(user_id, state.outbox)

    return on_change


def _back_online(stream: ChatStream) -> None:
    stream.resume_offline()
    stream.probe()


async def _session(api: net.BrowserApi) -> tuple[SessionInfo, bool]:
    """Who is signed in, and whether the server could not be asked (the session this
    browser last had is used then, to open the chats kept on the device)."""
    try:
        session = await page.signed_in(api)
    except TransportError:
        kept = device.kept_session()
        if kept is None:
            raise
        return kept, True
    await device.keep_only(session)
    return session, False


def _teardown(
    stream: ChatStream,
    bindings: page.Page,
    dom: BrowserDom,
    notices: NoticeTimer,
    *listeners: edge.Listeners,
) -> Callable[[], None]:
    """Leaving the page: stop every task (aborting its requests) and every listener."""

    def teardown() -> None:
        stream.close()
        notices.close()
        bindings.teardown()
        dom.teardown()
        for group in listeners:
            group.teardown()

    return teardown


async def _backend() -> net.Backend:
    """Where the API is: ``apiBase`` from ``config.json`` (a static deploy points it there)."""
    try:
        config = await net.fetch_json("./config.json")
    except (ChatError, ValueError):  # NOTE: no (or no valid) config.json means same origin
        return net.Backend()
    return net.Backend(str(config.get("apiBase", "")) if isinstance(config, dict) else "")


async def main() -> None:
    config = ClientConfig.from_query(edge.query_params())
    for warning in config.warnings:
        edge.log(f"riacho config: {warning}")
    backend = await _backend()
    server_api = net.BrowserApi(backend)
    session, offline = await _session(server_api)
    page.show_account(session)
    views = page.LocalViews()
    stream: ChatStream | None = None

    def reached(answered: bool) -> None:
        if stream is not None:  # NOTE: the stream is made with the API that reports here
            stream.server_reached(answered)

    api = KeptApi(server_api, device.CacheShelf(session.user_id), reached)
    stream = ChatStream(
        net.BrowserStreams(backend),
        api,
        views=views,
        config=config,
        clock=edge.now_ms,
        is_online=edge.is_online,
        on_trace=lambda trace: edge.log(format_trace(trace)),
    )
    answer_meta.use_zone(edge.local_now().tzinfo or UTC)
    enhancer = Enhancer()
    dom = BrowserDom(enhancer)
    view = View(
        dom,
        now=edge.local_now,
        attachment_src=lambda attachment_id: backend.url(f"/api/attachments/{attachment_id}"),
    )
    coalescer = FrameCoalescer(edge.request_frame, view.render)
    stream.subscribe(coalescer.on_change)
    stream.subscribe(_remember_active_chat)
    if offline:
        stream.server_reached(False)
    stream.subscribe(_refresh_titles(stream, api))
    stream.subscribe(_keep_views(views))
    notices = NoticeTimer(stream.get_state, stream.dismiss_notice, config.notice_ms)
    stream.subscribe(notices.on_change)
    controller = Controller(stream, page.copy_to_clipboard, page.picked_model)
    code_settings = CodeSettingsKept(session.user_id)
    code = CodeRunner(
        DataFiles(
            lambda attachment_id: backend.url(f"/api/attachments/{attachment_id}"),
            lambda: [a for m in stream.get_state().messages for a in m.attachments],
            device.DEVICE_CACHE + session.user_id,
        ),
        lambda: code_settings.of(stream.get_state().active_chat_id),
    )
    client_tools = ClientTools(api, code, stream.get_state, code_settings)
    stream.subscribe(client_tools.on_change)
    files = chat_files.for_stream(backend, stream)
    bindings = page.Page(controller, api, dom, session.limits, code, files)
    menus, settings = ChatMenus(stream, backend), SettingsPanel(backend, controller)
    queued = edge.take_queued_prompts()  # NOTE: with bind(), one synchronous step: none lost
    bindings.bind()
    menus.bind()
    stream.subscribe(settings.on_change)
    edge.on_page_hide(menus.teardown)
    edge.on_page_hide(settings.teardown)
    stream.subscribe(_switch_drafts(bindings.drafts))
    back_online = edge.on_back_online(lambda: _back_online(stream))
    went_offline = edge.on_offline(lambda: stream.server_reached(False))
    edge.on_page_hide(
        _teardown(stream, bindings, dom, notices, back_online, went_offline, client_tools.listeners)
    )
    models, *_ = await asyncio.gather(
        api.list_models(), stream.refresh_chats(), settings.load(offline=offline)
    )
    page.show_models(models)
    settings.bind(models)
    stream.set_models(models)
    stream.restore_outbox(device.kept_outbox(session.user_id))
    stream.subscribe(_keep_outbox(session.user_id))
    chat_id = edge.active_chat_from_url()
    if chat_id is not None and chat_id in stream.get_state().chats:
        stream.select_chat(chat_id)
    view.render(stream.get_state())
    bindings.enable()
    for prompt in queued:
        bindings.send_queued(prompt)
    if not stream.get_state().offline:
        stream.send_queued()  # NOTE: what an earlier page queued, now the server answers
    edge.mark_ready()
    edge.spawn(_load_deferred(enhancer))


async def _load_deferred(enhancer: Enhancer) -> None:
    """Once the page is ready and painted, build the validators deferred at import; then, in
    idle moments, import the markdown parsers the first screen did not need and get code
    highlighting ready for the most common language of answers."""
    await asyncio.sleep(0.05)
    protocol.build_validators()
    await asyncio.sleep(0)  # NOTE: two tasks of ~30 and ~20 ms in the browser, not one of 50
    parts.build_validators()
    await edge.when_idle()
    markdown.load_parser()
    enhancer.prepare(PREPARED_LANGUAGE)


async def boot() -> None:
    try:
        await main()
    except Exception as error:
        edge.mark_boot_failed(str(error))
        raise


edge.spawn(boot())
