"""``reduce(state, action) -> state``: pure, one small function per action.

The reducer returns the very same object when an action changes nothing, so the store can
skip notifying. Run actions are routed to the run's own chat (found by run id), which is why a
stream still being read for chat A never writes into chat B; they are dropped unless the run
is current (in ``chat.live_runs``), except :class:`RunStarted`, :class:`ResumeStarted` and
:class:`RunRestored`, which make a run current or replace a settled one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from app.state.actions import (
    Action,
    AttemptShown,
    BranchShown,
    ChatCreated,
    ChatDeleted,
    ChatListing,
    ChatLoaded,
    ChatRenamed,
    ChatSelected,
    ChatsListed,
    ComposerAction,
    ConnectionChanged,
    ContextMeasured,
    DraftGiven,
    EditingChanged,
    ErrorDismissed,
    ErrorRaised,
    EventReceived,
    EventsReceived,
    FileAdded,
    FileChanged,
    FileRemoved,
    NoticeDismissed,
    OptionsChanged,
    OutboxChanged,
    PreStreamFailed,
    ResumeStarted,
    RunAction,
    RunFoundEnded,
    RunRestored,
    RunStarted,
    SearchChanged,
    SearchFound,
)
from app.state.runs import (
    found_ended,
    is_next_text,
    new_run,
    receive,
    receive_texts,
    reduce_run,
    restore,
    start_resume,
)
from app.state.state import (
    SETTLED,
    TOP,
    ChatState,
    ComposerState,
    FallbackNotice,
    GapHeld,
    Live,
    MessageState,
    NotEditing,
    RunState,
    Search,
    State,
    context_of,
)
from app.wire.parts import TextPart
from app.wire.protocol import ContextInfoEvent, FallbackNoticeEvent, StreamEvent, UserMessageIdEvent


def reduce(state: State, action: Action) -> State:
    """The state after ``action`` (the same object if nothing changed)."""
    match action:
        case ChatSelected(chat_id=chat_id):
            return _select(state, chat_id)
        case ChatsListed():
            return _listed(state, action)
        case ChatCreated():
            return _created(state, action)
        case ChatLoaded(chat=chat, fresher=fresher):
            return _loaded(state, chat, fresher=fresher)
        case OutboxChanged(outbox=outbox):
            return state if state.outbox == outbox else replace(state, outbox=outbox)
        case ConnectionChanged(offline=offline):
            return state if state.offline == offline else replace(state, offline=offline)
        case ContextMeasured(chat_id=chat_id, info=info):
            known = state.chats.get(chat_id)
            return state if known is None else _put_chat(state, replace(known, context_info=info))
        case ChatRenamed():
            return _renamed(state, action)
        case ChatDeleted(chat_id=chat_id):
            return _deleted(state, chat_id)
        case SearchChanged(query=query):
            return _search(state, query)
        case SearchFound():
            return _found(state, action)
        case EditingChanged(editing=editing):
            return _replace(state, editing=editing)
        case FileAdded() | FileChanged() | FileRemoved() | OptionsChanged():
            return _replace(state, composer=compose(state.composer, action))
        case ErrorRaised(error=error, draft=draft):
            draft = state.composer_draft if draft is None else draft
            return _replace(state, last_error=error, composer_draft=draft)
        case DraftGiven(text=text):
            return _replace(state, composer_draft=text)
        case ErrorDismissed():
            return _replace(state, last_error=None)
        case NoticeDismissed():
            return _replace(state, fallback_notice=None)
        case AttemptShown():
            return _show_attempt(state, action)
        case BranchShown():
            return _show_branch(state, action)
        case RunStarted():
            return _start(state, action)
        case ResumeStarted():
            return _resume(state, action)
        case RunRestored():
            return _restore(state, action)
        case RunFoundEnded():
            found = state.find_run(action.run_id)
            if found is None:
                return state
            return _put_chat(state, _put_run(found[0], found_ended(found[1])))
        case _:
            return _run_action(state, action)


# --- chats -------------------------------------------------------------------------------------


def _select(state: State, chat_id: str | None) -> State:
    if chat_id == state.active_chat_id:
        return state
    chats = state.chats
    if chat_id is not None and chat_id not in chats:
        chats = {**chats, chat_id: ChatState(chat_id)}
    return replace(state, active_chat_id=chat_id, chats=chats, editing=NotEditing())


def _listed(state: State, action: ChatsListed) -> State:
    chats = _with_listings(state.chats, action.chats)
    listed = tuple(listing.chat_id for listing in action.chats)
    # NOTE: a chat still answering here stays listed whatever the list says (it may have been
    # read just before the chat was made); others the server no longer lists are gone.
    answering = (c for c in state.chat_order if c not in listed and chats[c].is_generating)
    order = tuple(dict.fromkeys((*answering, *listed)))
    if order == state.chat_order and chats is state.chats:
        return state
    return replace(state, chats=chats, chat_order=order)


def _with_listings(
    chats: Mapping[str, ChatState], listings: tuple[ChatListing, ...]
) -> Mapping[str, ChatState]:
    """``chats`` with the titles and times the server listed (the same object if unchanged)."""
    changed: dict[str, ChatState] = {}
    for listing in listings:
        chat = chats.get(listing.chat_id, ChatState(listing.chat_id))
        if (chat.title, chat.updated_at, chat.pinned) != (
            listing.title,
            listing.updated_at,
            listing.pinned,
        ):
            chat = replace(
                chat, title=listing.title, updated_at=listing.updated_at, pinned=listing.pinned
            )
        if chat is not chats.get(listing.chat_id):
            changed[listing.chat_id] = chat
    return {**chats, **changed} if changed else chats


def _created(state: State, action: ChatCreated) -> State:
    chat = state.chats.get(action.chat_id) or ChatState(action.chat_id, action.title, loaded=True)
    chats = {**state.chats, action.chat_id: chat}
    if not action.shown:
        return replace(state, chats=chats)
    return replace(state, chats=chats, active_chat_id=action.chat_id, editing=NotEditing())


def _renamed(state: State, action: ChatRenamed) -> State:
    chat = state.chats.get(action.chat_id)
    if chat is None or chat.title == action.title:
        return _replace(state, editing=NotEditing())
    return replace(_put_chat(state, replace(chat, title=action.title)), editing=NotEditing())


def _deleted(state: State, chat_id: str) -> State:
    if chat_id not in state.chats:
        return state
    chats = {k: v for k, v in state.chats.items() if k != chat_id}
    order = tuple(c for c in state.chat_order if c != chat_id)
    search = state.search
    if search is not None and search.chat_ids is not None:
        search = replace(search, chat_ids=tuple(c for c in search.chat_ids if c != chat_id))
    active = None if state.active_chat_id == chat_id else state.active_chat_id
    return replace(
        state,
        chats=chats,
        chat_order=order,
        active_chat_id=active,
        search=search,
        editing=NotEditing(),
    )


def _search(state: State, query: str) -> State:
    words = " ".join(query.split())
    if not words:
        return _replace(state, search=None)
    if state.search is not None and state.search.query == words:
        return state
    return replace(state, search=Search(words))


def _found(state: State, action: SearchFound) -> State:
    if state.search is None or state.search.query != action.query:
        return state  # NOTE: the answer to words the user has since changed
    chats = _with_listings(state.chats, action.chats)
    found = tuple(listing.chat_id for listing in action.chats)
    snippets = tuple((c.chat_id, c.snippet) for c in action.chats if c.snippet)
    return replace(state, chats=chats, search=Search(action.query, found, snippets))


def _loaded(state: State, loaded: ChatState, *, fresher: bool = False) -> State:
    old = state.chats.get(loaded.chat_id)
    if fresher and old is not None and not old.is_generating:
        # NOTE: a copy shown offline gives way to the server's history (nothing streams here)
        return _put_chat(state, replace(loaded, loaded=True, context_info=old.context_info))
    if old is not None and old.messages:
        # NOTE: what this client streamed is fresher than any history; keep it.
        return state if old.loaded else _put_chat(state, replace(old, loaded=True))
    if old is not None and loaded.context_info is None:
        loaded = replace(loaded, context_info=old.context_info)
    return _put_chat(state, replace(loaded, loaded=True))


def _show_branch(state: State, action: BranchShown) -> State:
    chat = state.active_chat
    message = None if chat is None else chat.find_message(action.message_id)
    if chat is None or message is None or message.role != "user":
        return state
    chosen = chat.sibling(message, action.index)
    fork = message.after_run or TOP
    if chosen is None or chat.branches.get(fork) == chosen.id:
        return state
    return _put_chat(state, replace(chat, branches={**chat.branches, fork: chosen.id}))


def _show_attempt(state: State, action: AttemptShown) -> State:
    chat = state.active_chat
    message = None if chat is None else chat.find_message(action.message_id)
    if chat is None or message is None or message.shown == action.index:
        return state
    if not 0 <= action.index < len(message.run_ids):
        return state
    return _put_chat(state, _put_message(chat, replace(message, shown=action.index)))


# --- runs --------------------------------------------------------------------------------------


def _start(state: State, action: RunStarted) -> State:
    chat = state.chats.get(action.chat_id)
    if chat is None or action.run_id in chat.runs:
        return state
    message = chat.find_message(action.message_id)
    branches = chat.branches
    if message is not None:  # a regenerate: one more attempt, shown
        run_ids = (*message.run_ids, action.run_id)
        messages = _swap(chat.messages, replace(message, run_ids=run_ids, shown=len(run_ids) - 1))
    else:
        messages = (*chat.messages, *_new_turn(action))
        if action.user_message_id is not None:  # NOTE: the new prompt's branch is shown
            branches = {**branches, action.after_run or TOP: action.user_message_id}
    chat = replace(
        chat,
        messages=messages,
        runs={**chat.runs, action.run_id: new_run(action)},
        live_runs=(*chat.live_runs, action.run_id),
        branches=branches,
        model_id=action.model_id or chat.model_id,
    )
    if action.queued:  # NOTE: what the user types (or was given back) meanwhile stays
        return _put_chat(state, chat)
    return replace(_put_chat(state, chat), composer_draft="", last_error=None, editing=NotEditing())


def _new_turn(action: RunStarted) -> tuple[MessageState, ...]:
    answer = MessageState(
        action.message_id, "assistant", reply_to=action.user_message_id, run_ids=(action.run_id,)
    )
    if action.user_message_id is None:
        return (answer,)
    prompt = MessageState(
        action.user_message_id,
        "user",
        text=action.prompt,
        after_run=action.after_run,
        attachments=action.attachments,
    )
    return (prompt, answer)


def _resume(state: State, action: ResumeStarted) -> State:
    found = state.find_run(action.run_id)
    if found is None:
        return state
    chat, run = found
    resumed = start_resume(run, action)
    if resumed is run:
        return state
    live = chat.live_runs if run.run_id in chat.live_runs else (*chat.live_runs, run.run_id)
    return _put_chat(state, replace(_put_run(chat, resumed), live_runs=live))


def _restore(state: State, action: RunRestored) -> State:
    found = state.find_run(action.run_id)
    if found is None:
        return state
    chat, run = found
    return _put_chat(state, _put_run(chat, restore(run, action)))


def _run_action(state: State, action: RunAction) -> State:
    found = state.find_run(action.run_id)
    if found is None or action.run_id not in found[0].live_runs:
        return state  # not current: a late action for a run that already settled
    chat, run = found
    match action:
        case PreStreamFailed():
            return _withdraw(state, chat, run, action)
        case EventReceived():
            return _event(state, chat, run, action)
        case EventsReceived():
            return _events(state, action)
        case _:
            return _put_chat(state, _put_run(chat, reduce_run(run, action)))


def _withdraw(state: State, chat: ChatState, run: RunState, action: PreStreamFailed) -> State:
    """A pre-stream error: the run never existed; a send's prompt goes back to the composer."""
    if run.status != "connecting" or run.last_seq:
        return state
    message = chat.find_message(run.run_id)
    runs = {k: v for k, v in chat.runs.items() if k != run.run_id}
    live = tuple(r for r in chat.live_runs if r != run.run_id)
    draft = state.composer_draft
    messages = chat.messages
    branches = chat.branches
    if message is not None and message.run_ids == (run.run_id,):
        prompt = chat.find_message(message.reply_to) if message.reply_to else None
        draft = prompt.text if prompt is not None else draft
        gone = {message.id, prompt.id if prompt else None}
        messages = tuple(m for m in messages if m.id not in gone)
        branches = {fork: chosen for fork, chosen in branches.items() if chosen not in gone}
    elif message is not None:
        run_ids = tuple(r for r in message.run_ids if r != run.run_id)
        messages = _swap(messages, replace(message, run_ids=run_ids, shown=len(run_ids) - 1))
    chat = replace(chat, runs=runs, live_runs=live, messages=messages, branches=branches)
    if action.queued:
        return _put_chat(state, chat)
    error = action.error
    if error.retry_after is not None:
        error = replace(error, retry_at=action.at + error.retry_after * 1000)
    return replace(_put_chat(state, chat), last_error=error, composer_draft=draft)


def _event(state: State, chat: ChatState, run: RunState, action: EventReceived) -> State:
    updated, applied = receive(run, action)
    chat = _put_run(chat, updated)
    if applied:
        chat = _chat_effects(chat, action.event)
        state = _notice(state, run, action.event)
        if run.last_seq == 0 and run.phase == Live():
            state = _to_top(state, chat.chat_id)
    return _put_chat(state, chat)


def _events(state: State, action: EventsReceived) -> State:
    """Each event as an ``EventReceived``, in order, until the run stops reading (it settled,
    or holds its terminal event for a replay); in-order text deltas are joined on the way."""
    events, index = action.events, 0
    while index < len(events):
        found = state.find_run(action.run_id)
        if found is None or not _reading(found[0], found[1]):
            return state
        chat, run = found
        stretch = _text_stretch(run, events, index)
        if stretch:
            texts = events[index : index + stretch]
            run = receive_texts(run, texts)  # type: ignore[arg-type]
            state = _put_chat(state, _put_run(chat, run))
            index += stretch
            continue
        state = _event(state, chat, run, EventReceived(action.run_id, action.at, events[index]))
        index += 1
    return state


def _reading(chat: ChatState, run: RunState) -> bool:
    """The run's events are still read (what the runner checks before each event)."""
    return run.run_id in chat.live_runs and run.is_live and not isinstance(run.phase, GapHeld)


def _text_stretch(run: RunState, events: tuple[StreamEvent, ...], start: int) -> int:
    """How many events from ``start`` are in-order text deltas the run only appends."""
    if not (run.parts and type(run.parts[-1]) is TextPart):
        return 0
    count, seq = 0, run.last_seq
    for event in events[start:]:
        if not is_next_text(event, run, seq):
            break
        count, seq = count + 1, seq + 1
    return count


def _to_top(state: State, chat_id: str) -> State:
    """A chat whose new answer started streaming goes to the top of the list (a chat made
    here joins the list now: the server has made it)."""
    if state.chat_order[:1] == (chat_id,):
        return state
    return replace(state, chat_order=(chat_id, *(c for c in state.chat_order if c != chat_id)))


def _chat_effects(chat: ChatState, event: StreamEvent) -> ChatState:
    """Events that change the chat rather than the run: context usage, the user message id."""
    match event:
        case ContextInfoEvent():
            return replace(chat, context_info=context_of(event))
        case UserMessageIdEvent(message_id=message_id):
            answer = chat.find_message(event.run_id)
            prompt = chat.find_message(answer.reply_to) if answer and answer.reply_to else None
            if prompt is None or prompt.server_id == message_id:
                return chat
            return _put_message(chat, replace(prompt, server_id=message_id))
        case _:
            return chat


def _notice(state: State, run: RunState, event: StreamEvent) -> State:
    if not isinstance(event, FallbackNoticeEvent):
        return state
    notice = FallbackNotice(event.reason, event.message, run.chat_id, run.run_id, event.seq)
    return replace(state, fallback_notice=notice)


# --- helpers -----------------------------------------------------------------------------------


def _put_run(chat: ChatState, run: RunState) -> ChatState:
    """``chat`` with ``run`` stored; a settled run is no longer current."""
    if chat.runs.get(run.run_id) is run:
        return chat
    live = chat.live_runs
    if run.status in SETTLED and run.run_id in live:
        live = tuple(r for r in live if r != run.run_id)
    return replace(chat, runs={**chat.runs, run.run_id: run}, live_runs=live)


def _put_chat(state: State, chat: ChatState) -> State:
    if state.chats.get(chat.chat_id) is chat:
        return state
    return replace(state, chats={**state.chats, chat.chat_id: chat})


def _put_message(chat: ChatState, message: MessageState) -> ChatState:
    return replace(chat, messages=_swap(chat.messages, message))


def _swap(messages: tuple[MessageState, ...], message: MessageState) -> tuple[MessageState, ...]:
    return tuple(message if m.id == message.id else m for m in messages)


def _replace(state: State, **changes: object) -> State:
    """``replace`` that keeps the same object when no field changes."""
    if all(getattr(state, name) == value for name, value in changes.items()):
        return state
    return replace(state, **changes)  # type: ignore[arg-type]


def compose(composer: ComposerState, action: ComposerAction) -> ComposerState:
    """The composer after one of its actions (the same object when it changes nothing)."""
    match action:
        case FileAdded(file=added):
            return replace(composer, files=(*composer.files, added))
        case FileChanged(key=key):
            files = tuple(
                replace(
                    f, progress=action.progress, error=action.error, attachment=action.attachment
                )
                if f.key == key
                else f
                for f in composer.files
            )
            return composer if files == composer.files else replace(composer, files=files)
        case FileRemoved(key=key):
            files = tuple(f for f in composer.files if f.key != key)
            return composer if len(files) == len(composer.files) else replace(composer, files=files)
        case OptionsChanged(options=options):
            return composer if options == composer.options else replace(composer, options=options)
