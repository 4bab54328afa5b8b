"""The chat stream store with its commands: the Python ``useChatStream`` (SPEC §6).

``ChatStream`` owns a :class:`~app.state.store.Store` of :class:`~app.state.state.State` and
turns user commands into actions and background tasks (see :mod:`app.run.runner`). Commands
return at once: what they change first (a new user message, ``cancelling``) is dispatched
synchronously, the network work runs in a task that is returned (``None`` when the command
does not apply), so tests can await it and the browser can ignore it.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, replace
from typing import Any

from app.run.cancel import settle_cancel
from app.run.chats import ChatLoader, ViewMemory
from app.run.config import ClientConfig
from app.run.placement import place_of_prompt, settled_place
from app.run.runner import RunEnv, Window, drive, drive_queued, error_info, read_resumed
from app.run.transport import ChatApi, StreamTransport
from app.state.actions import (
    Action,
    AttemptShown,
    BranchShown,
    ChatCreated,
    ChatRenamed,
    ChatSelected,
    ComposerAction,
    ConnectionChanged,
    ContextMeasured,
    DraftGiven,
    EditingChanged,
    ErrorDismissed,
    ErrorRaised,
    NoticeDismissed,
    OutboxChanged,
    ResumeStarted,
    RunStarted,
    SearchChanged,
    StopRequested,
)
from app.state.client_tool import CLIENT_TOOLS
from app.state.outbox import Outbox, QueuedPrompt, find, marked, next_to_send, queued, without
from app.state.reducer import reduce
from app.state.state import (
    SETTLED,
    ChatState,
    Compacted,
    Editing,
    MessageState,
    NotEditing,
    RunState,
    State,
    context_of,
    settled_runs,
)
from app.state.store import Listener, Store, print_error
from app.state.trace import Clock, RunTrace, monotonic_ms
from app.wire.api import AttachmentInfo, ModelInfo, ReasoningEffort, RespondStreamBody
from app.wire.errors import ChatError, TransportError

Task = asyncio.Task[Any]


def new_id(prefix: str) -> str:
    """A fresh client-made id such as ``run_3f2a…`` (uuid4 hex)."""
    return f"{prefix}_{uuid.uuid4().hex}"


@dataclass(frozen=True, slots=True)
class SendOptions:
    """The composer's options sent with a prompt (reused by a regenerate of its answer); the
    one place they are named between the composer and the request body."""

    thinking_enabled: bool = False
    reasoning_effort: ReasoningEffort | None = None
    tool_intent: bool = False
    model_id: str | None = None
    attachments: tuple[AttachmentInfo, ...] = ()

    def body(
        self,
        chat_id: str,
        prompt: str,
        run_id: str,
        *,
        retry_of: str | None = None,
        after_run: str | None = None,
    ) -> RespondStreamBody:
        """The ``POST /api/respond/stream`` body for one run (a new prompt goes after the
        answer of ``after_run``, at the top of the chat when it is ``None``)."""
        return RespondStreamBody(
            chat_id=chat_id,
            prompt=prompt,
            thinking_enabled=self.thinking_enabled,
            # NOTE: an effort means nothing without thinking; it is not sent then.
            reasoning_effort=self.reasoning_effort if self.thinking_enabled else None,
            tool_intent=self.tool_intent,
            model_id=self.model_id,
            attachment_ids=[a.attachment_id for a in self.attachments],
            run_id=run_id,
            retry_of_run_id=retry_of,
            after_run_id=None if retry_of else after_run,
            at_top=retry_of is None and after_run is None,
            client_tools=list(CLIENT_TOOLS),
        )


class ChatStream:
    """The observable chat store: ``get_state``, ``subscribe`` and the chat commands."""

    def __init__(
        self,
        streams: StreamTransport,
        api: ChatApi,
        *,
        config: ClientConfig | None = None,
        clock: Clock = monotonic_ms,
        is_online: Callable[[], bool] = lambda: True,
        make_id: Callable[[str], str] = new_id,
        on_trace: Callable[[RunTrace], None] | None = None,
        on_error: Callable[[BaseException], None] = print_error,
        views: ViewMemory | None = None,
    ) -> None:
        self._store: Store[State, Action] = Store(State(), reduce, on_error)
        self._env = RunEnv(self._store, streams, api, config or ClientConfig(), clock, is_online)
        self._make_id = make_id
        self._on_error = on_error
        self._tasks: set[Task] = set()
        self._work: dict[str, Task] = {}  # run id -> the task reading or cancelling it
        self._chats = ChatLoader(
            self._store,
            api,
            self._track,
            lambda run: self._resume_run(run, automatic=True),
            views,
        )
        self._models: dict[str, ModelInfo] = {}
        self._asked_model: dict[str, str | None] = {}  # run id -> the model this page asked
        self._preparing = False
        self._probe: Task | None = None
        self._flushing: Task | None = None
        if on_trace is not None:
            self._store.subscribe(lambda state, previous: _report(on_trace, state, previous))

    # --- the store ------------------------------------------------------------------------------

    def get_state(self) -> State:
        """The current state."""
        return self._store.get_state()

    def subscribe(self, listener: Listener[State]) -> Callable[[], None]:
        """Call ``listener(state, previous)`` on every change; returns unsubscribe."""
        return self._store.subscribe(listener)

    # --- commands -------------------------------------------------------------------------------

    def send(self, prompt: str, options: SendOptions = SendOptions()) -> Task | None:
        """Send a prompt in the active chat (a new chat is named here and made on the server
        by its first answer); it follows the last answer on screen."""
        state = self.get_state()
        empty = not prompt.strip() and not options.attachments
        if empty:
            return None
        if state.offline or state.outbox:
            return self._queue(prompt, options)
        if state.is_generating or self._preparing:
            return None
        chat = state.active_chat
        if chat is None:
            chat_id = self._make_id("chat")
            self._store.dispatch(ChatCreated(chat_id))
            return self._start_send(chat_id, prompt, options, None)
        place = settled_place(chat) if chat.loaded else None
        if place is not None:
            return self._start_send(chat.chat_id, prompt, options, place.after_run)
        self._preparing = True
        return self._spawn(self._prepare_and_send(chat.chat_id, prompt, options))

    def edit(
        self, message_id: str, prompt: str, options: SendOptions = SendOptions()
    ) -> Task | None:
        """Send an edited prompt as a new branch beside ``message_id`` (a sent user message),
        with the composer's ``options`` now and the prompt's attachments; the old branch stays
        browsable."""
        chat = self.get_state().active_chat
        original = None if chat is None else chat.find_message(message_id)
        if chat is None or original is None or original.role != "user" or chat.is_generating:
            return None
        if not prompt.strip() and not original.attachments:
            return None
        options = replace(options, attachments=original.attachments)
        return self._start_send(chat.chat_id, prompt, options, original.after_run)

    def stop(self) -> Task | None:
        """Stop the active chat's generation: abort the reader, cancel on the server."""
        chat = self.get_state().active_chat
        live = [] if chat is None else [r for r in chat.live_runs if chat.runs[r].is_live]
        tasks = [self._stop_run(run_id) for run_id in live]
        return tasks[-1] if tasks else None

    def resume(self, message_id: str) -> Task | None:
        """Resume the shown attempt of an interrupted answer from its last seq."""
        run = self._answer(message_id)[2]
        if run is None or not run.can_resume:
            return None
        return self._resume_run(run.run_id, automatic=False)

    def resume_offline(self) -> list[Task]:
        """The connection is back: resume every answer (in any chat) that broke while the
        device was offline, automatically, each from its last seq."""
        offline = [
            run.run_id
            for chat in self.get_state().chats.values()
            for run in chat.runs.values()
            if run.status == "interrupted" and run.reason == "offline"
        ]
        tasks = [self._resume_run(run_id, automatic=True) for run_id in offline]
        return [task for task in tasks if task is not None]

    # --- the outbox: prompts sent while the server cannot be reached (app/state/outbox.py) ----

    def _queue(self, prompt: str, options: SendOptions) -> Task:
        """Keep the prompt, with its run id made now, to be sent when the server answers (it
        goes after the prompts queued before it)."""
        chat_id = self.get_state().active_chat_id
        if chat_id is None:
            chat_id = self._make_id("chat")
            self._store.dispatch(ChatCreated(chat_id))
        item = QueuedPrompt(self._make_id("run"), chat_id, prompt, *_queued_options(options))
        return self._enqueue(item)

    def _enqueue(self, item: QueuedPrompt) -> Task:
        self._set_outbox(queued(self.get_state().outbox, item))
        return self.send_queued()

    def restore_outbox(self, outbox: Outbox) -> None:
        """The prompts the device kept from an earlier page (a chat made by one of them, not on
        the server yet, is made here again)."""
        for chat_id in dict.fromkeys(item.chat_id for item in outbox):
            if chat_id not in self.get_state().chats:
                self._store.dispatch(ChatCreated(chat_id, shown=False))
        self._set_outbox(outbox)

    def edit_queued(self, run_id: str) -> None:
        """Take a queued prompt back into the composer (it is not sent)."""
        item = find(self.get_state().outbox, run_id)
        if item is None or item.sending:
            return
        self._set_outbox(without(self.get_state().outbox, run_id))
        self._store.dispatch(DraftGiven(item.prompt))

    def remove_queued(self, run_id: str) -> None:
        """Drop a queued prompt before it goes."""
        item = find(self.get_state().outbox, run_id)
        if item is not None and not item.sending:
            self._set_outbox(without(self.get_state().outbox, run_id))

    def send_queued(self) -> Task:
        """Send the queued prompts, one at a time and in order, while the server answers (the
        task already doing so, if there is one)."""
        if self._flushing is None or self._flushing.done():
            self._flushing = self._spawn(self._flush())
        return self._flushing

    async def _settled(self, chat_id: str) -> None:
        """Until no answer of the chat is on its way."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def check(state: State, _previous: State) -> None:
            chat = state.chats.get(chat_id)
            if (chat is None or not chat.is_generating) and not done.done():
                done.set_result(None)

        unsubscribe = self.subscribe(check)
        try:
            check(self.get_state(), self.get_state())
            await done
        finally:
            unsubscribe()

    def _set_outbox(self, outbox: Outbox) -> None:
        self._store.dispatch(OutboxChanged(outbox))

    async def _flush(self) -> None:
        while not self.get_state().offline:
            item = next_to_send(self.get_state().outbox)
            if item is None or not await self._send_one(item):
                return

    async def _send_one(self, item: QueuedPrompt) -> bool:
        """Send ``item``; whether the next may go (False: the server is out of reach again)."""
        state = self.get_state()
        chat = state.chats.get(item.chat_id)
        if chat is not None and not chat.loaded and not await self._chats.load(item.chat_id):
            return False
        await self._settled(item.chat_id)  # NOTE: it follows the answer on its way, if any
        chat = self.get_state().chats.get(item.chat_id)
        after_run = None if chat is None else await place_of_prompt(chat, self._env.api)
        options = SendOptions(*_queued_options(item))
        self._set_outbox(marked(self.get_state().outbox, item.run_id, sending=True))
        body = options.body(item.chat_id, item.prompt, item.run_id, after_run=after_run)

        def started() -> None:
            self._set_outbox(without(self.get_state().outbox, item.run_id))
            self._store.dispatch(
                RunStarted(
                    item.run_id,
                    self._env.clock(),
                    item.chat_id,
                    self._make_id("msg"),
                    item.prompt,
                    self._make_id("msg"),
                    after_run=after_run,
                    attachments=item.attachments,
                    model_id=item.model_id,
                    queued=True,
                )
            )

        self._asked_model[item.run_id] = item.model_id
        env = self._env_for(item.model_id)
        failed = await drive_queued(env, item.run_id, body, started)
        if isinstance(failed, TransportError):
            self._set_outbox(marked(self.get_state().outbox, item.run_id, sending=False))
            self.server_reached(False)
            return False
        if failed is not None:  # NOTE: refused: given back to the composer with the reason
            self._set_outbox(without(self.get_state().outbox, item.run_id))
            self._store.dispatch(ErrorRaised(error_info(failed), draft=item.prompt))
        return True

    # --- reaching the server ----------------------------------------------------------------

    def server_reached(self, reached: bool) -> None:
        """Whether the server answered the page's last request (``KeptApi`` reports each).
        Unreachable: the page says it is offline and asks again every ``reach_probe_ms``.
        Back: the chat list and every chat shown from the device's copies are fetched again,
        and answers that broke offline are resumed."""
        if self.get_state().offline != reached:
            return
        self._store.dispatch(ConnectionChanged(offline=not reached))
        if reached:
            if self._probe is not None:
                self._probe.cancel()
            self._spawn(self._back_online())
        elif self._probe is None or self._probe.done():
            self._probe = self._spawn(self._probe_until_reached())

    def probe(self) -> Task | None:
        """Ask the server at once whether it answers (the browser says it is online again)."""
        return self.refresh_chats() if self.get_state().offline else None

    async def _probe_until_reached(self) -> None:
        while self.get_state().offline:
            await asyncio.sleep(self._env.config.reach_probe_ms / 1000)
            if self.get_state().offline:
                await self._chats.refresh()

    async def _back_online(self) -> None:
        state = self.get_state()
        listed = set(state.chat_order)  # NOTE: a chat made here offline is not on the server
        shown = [c for c, chat in state.chats.items() if chat.loaded and c in listed]
        await asyncio.gather(
            self._chats.refresh(), *(self._chats.load_fresher(chat_id) for chat_id in shown)
        )
        self.resume_offline()
        self.send_queued()

    def regenerate(self, message_id: str, options: SendOptions = SendOptions()) -> Task | None:
        """A new attempt (new run, attempt + 1) at the answer ``message_id``, with the
        composer's ``options`` now (the server keeps the prompt's attachments)."""
        chat, message, run = self._answer(message_id)
        if chat is None or message is None or run is None or chat.is_generating:
            return None
        attempts = [chat.runs[r] for r in message.run_ids]
        prompt = chat.find_message(message.reply_to) if message.reply_to else None
        if prompt is None or not all(a.status in SETTLED for a in attempts):
            return None
        latest = max(attempts, key=lambda a: a.attempt)
        run_id = self._make_id("run")
        options = replace(options, attachments=())
        self._store.dispatch(
            RunStarted(
                run_id,
                self._env.clock(),
                chat.chat_id,
                message.id,
                prompt.text,
                attempt=latest.attempt + 1,
                retry_of_run_id=latest.run_id,
                model_id=options.model_id,
            )
        )
        self._asked_model[run_id] = options.model_id
        body = options.body(chat.chat_id, prompt.text, run_id, retry_of=latest.run_id)
        return self._begin(run_id, drive(self._env_for(options.model_id), run_id, body))

    def select_chat(self, chat_id: str) -> asyncio.Task[bool] | None:
        """Show a chat; its history is fetched the first time (a running run is re-attached)."""
        self._store.dispatch(ChatSelected(chat_id))
        chat = self.get_state().chats[chat_id]
        return None if chat.loaded or chat.messages else self._chats.load(chat_id)

    def new_chat(self) -> None:
        """Show an empty chat; it is made on the server by its first answer."""
        self._store.dispatch(ChatSelected(None))

    def refresh_chats(self) -> Task:
        """Fetch the chat list."""
        return self._spawn(self._chats.refresh())

    def show_attempt(self, message_id: str, index: int) -> None:
        """Show attempt ``index`` (0-based) of an answer in the active chat."""
        self._store.dispatch(AttemptShown(message_id, index))

    def show_branch(self, message_id: str, index: int) -> None:
        """Show branch ``index`` (0-based) of the prompts beside the user message."""
        self._store.dispatch(BranchShown(message_id, index))

    def compose(self, action: ComposerAction) -> None:
        """A change to the composer's files or options."""
        self._store.dispatch(action)

    def set_editing(self, editing: Editing) -> None:
        """Start or end an in-place edit (the title, a delete confirmation, a prompt)."""
        self._store.dispatch(EditingChanged(editing))

    def rename_chat(self, chat_id: str, title: str) -> Task | None:
        """Rename a chat (shown at once; put back if the server refuses)."""
        chat = self.get_state().chats.get(chat_id)
        words = " ".join(title.split())
        if chat is None or not words or words == chat.title:
            self._store.dispatch(EditingChanged(NotEditing()))
            return None
        self._store.dispatch(ChatRenamed(chat_id, words))
        if chat_id not in self.get_state().chat_order:
            return None  # NOTE: not on the server yet; its first answer names it
        return self._spawn(self._chats.rename(chat_id, words, chat.title))

    def delete_chat(self, chat_id: str) -> Task | None:
        """Delete a chat: its streams here are closed, the server cancels its runs."""
        state = self.get_state()
        chat = state.chats.get(chat_id)
        if chat is None:
            return None
        for run_id in chat.runs:
            reader = self._work.pop(run_id, None)
            if reader is not None:
                reader.cancel()
        return self._spawn(self._chats.delete(chat_id, chat_id in state.chat_order))

    def search(self, query: str) -> Task | None:
        """Search the chats by title and content (empty: back to the whole list)."""
        before = self.get_state()
        state = self._store.dispatch(SearchChanged(query))
        if state.search is None or state is before:
            return None
        return self._spawn(self._chats.search(state.search.query))

    def report_error(self, error: ChatError) -> None:
        """Show a request's error (one made outside a run, e.g. compaction) in the banner."""
        self._store.dispatch(ErrorRaised(error_info(error)))

    def dismiss_error(self) -> None:
        """Hide the error banner."""
        self._store.dispatch(ErrorDismissed())

    def dismiss_notice(self) -> None:
        """Hide the fallback toast."""
        self._store.dispatch(NoticeDismissed())

    async def wait_idle(self) -> None:
        """Wait until no background task is left (tests, teardown)."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def compact(self, chat_id: str) -> Task:
        """Ask the server to compact a chat; the next ``context_info`` shows the drop."""
        return self._spawn(self._compact(chat_id))

    def close(self) -> None:
        """Cancel every task, which aborts every request (page teardown); server runs go on."""
        for task in list(self._tasks):
            task.cancel()

    # --- internals ------------------------------------------------------------------------------

    def _start_send(
        self, chat_id: str, prompt: str, options: SendOptions, after_run: str | None
    ) -> Task:
        run_id, answer_id, prompt_id = (self._make_id(p) for p in ("run", "msg", "msg"))
        self._store.dispatch(
            RunStarted(
                run_id,
                self._env.clock(),
                chat_id,
                answer_id,
                prompt,
                prompt_id,
                after_run=after_run,
                attachments=options.attachments,
                model_id=options.model_id,
            )
        )
        body = options.body(chat_id, prompt, run_id, after_run=after_run)

        def unreachable() -> None:  # NOTE: the same run id: if it did arrive, 409 run_exists
            self._enqueue(QueuedPrompt(run_id, chat_id, prompt, *_queued_options(options)))
            self.server_reached(False)

        self._asked_model[run_id] = options.model_id
        env = self._env_for(options.model_id)
        return self._begin(run_id, drive(env, run_id, body, unreachable))

    async def _prepare_and_send(self, chat_id: str, prompt: str, options: SendOptions) -> None:
        try:
            ready = await self._chats.ensure_loaded(chat_id, prompt)
            chat = self.get_state().chats.get(chat_id)
            after = None if chat is None else await place_of_prompt(chat, self._env.api)
        finally:
            self._preparing = False
        chat = self.get_state().chats.get(chat_id)
        if ready is not None and chat is not None and not chat.is_generating:
            await self._start_send(chat_id, prompt, options, after)

    async def _compact(self, chat_id: str) -> None:
        try:
            result = await self._env.api.compact_chat(chat_id)
        except ChatError as error:
            self.report_error(error)
            return
        chat = self.get_state().chats.get(chat_id)
        turns = 0 if chat is None else sum(m.role == "user" for m in chat.visible())
        done = Compacted(result.used_tokens_before, turns)
        self._store.dispatch(ContextMeasured(chat_id, replace(context_of(result), compacted=done)))

    def _stop_run(self, run_id: str) -> Task:
        self._store.dispatch(StopRequested(run_id, self._env.clock()))
        reader = self._work.pop(run_id, None)
        if reader is not None:
            reader.cancel()
        return self._begin(run_id, settle_cancel(self._env, run_id))

    def _resume_run(self, run_id: str, *, automatic: bool) -> Task | None:
        before = self.get_state()
        if self._store.dispatch(ResumeStarted(run_id, self._env.clock(), automatic)) is before:
            return None
        return self._begin(run_id, self._read_resumed(run_id))

    async def _read_resumed(self, run_id: str) -> None:
        await read_resumed(self._env_for(self._model_of(run_id)), run_id, Window())

    def set_models(self, models: Sequence[ModelInfo]) -> None:
        """The models the server offers: how long it waits for each sets the page's timeouts
        for a run of that model."""
        self._models = {model.id: model for model in models}

    def _env_for(self, model_id: str | None) -> RunEnv:
        """The run environment for a run of ``model_id``: timeouts beyond the server's own."""
        model = self._models.get(model_id) if model_id is not None else None
        if model is None:
            return self._env
        config = self._env.config.waiting_longer_than(model.first_event_wait_ms, model.idle_wait_ms)
        return replace(self._env, config=config)

    def _model_of(self, run_id: str) -> str | None:
        """The model a run was asked of (by this page), else its chat's model as last read."""
        asked = self._asked_model.get(run_id)
        if asked is not None:
            return asked
        found = self.get_state().find_run(run_id)
        return None if found is None else found[0].model_id

    def _answer(
        self, message_id: str
    ) -> tuple[ChatState | None, MessageState | None, RunState | None]:
        chat = self.get_state().active_chat
        message = None if chat is None else chat.find_message(message_id)
        if chat is None or message is None or message.role != "assistant":
            return chat, None, None
        return chat, message, chat.shown_run(message)

    def _begin(self, run_id: str, work: Coroutine[Any, Any, None]) -> Task:
        task = self._work[run_id] = self._spawn(work)
        task.add_done_callback(
            lambda done: self._work.pop(run_id) if self._work.get(run_id) is done else None
        )
        return task

    def _spawn(self, work: Coroutine[Any, Any, None]) -> Task:
        task: Task = asyncio.ensure_future(work)
        self._track(task)
        return task

    def _track(self, task: asyncio.Task[Any]) -> None:
        self._tasks.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self._on_error(task.exception())  # type: ignore[arg-type]


def _queued_options(
    options: SendOptions | QueuedPrompt,
) -> tuple[bool, ReasoningEffort | None, bool, str | None, tuple[AttachmentInfo, ...]]:
    """The options a prompt is sent with, the same on a send and in the outbox."""
    return (
        options.thinking_enabled,
        options.reasoning_effort,
        options.tool_intent,
        options.model_id,
        options.attachments,
    )


def _report(on_trace: Callable[[RunTrace], None], state: State, previous: State) -> None:
    for run in settled_runs(state, previous):
        on_trace(run.trace)
