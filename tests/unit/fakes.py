"""A scripted fake transport, SSE frame builders and recorders for the store tests."""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pydantic import JsonValue

from app.run.chat_stream import ChatStream
from app.run.config import ClientConfig
from app.run.transport import ByteStream
from app.state.state import RunState, State
from app.wire.api import (
    AttachmentInfo,
    CancelResult,
    ChatDetail,
    ChatSummary,
    CompactionResult,
    MessageOut,
    ModelInfo,
    RespondStreamBody,
    RunInfo,
    ServerRunStatus,
    SessionInfo,
    ToolClientResultAnswer,
    ToolDecisionResult,
)
from app.wire.codes import ClientTimeoutCode
from app.wire.errors import ChatError, HttpStatusError, TransportError

# --- scripts -----------------------------------------------------------------------------------


@dataclass
class Pause:
    """Stop the stream until ``gate`` is set (or its reader leaves)."""

    gate: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass
class Drop:
    """The connection breaks: the iterator raises TransportError."""

    detail: str = "connection reset"


@dataclass
class Repeat:
    """Yield ``make(i)`` for i = 0, 1, … every ``interval`` seconds until its reader leaves."""

    make: Callable[[int], bytes]
    interval: float = 0.003


Step = bytes | Pause | Drop | Repeat


@dataclass
class Script:
    """One answer to a stream request: an error before the stream, or the body's steps."""

    steps: Sequence[Step] = ()
    error: ChatError | None = None
    gate: asyncio.Event | None = None  # the request itself waits for it (a pending fetch)


# --- the transport -----------------------------------------------------------------------------


def summary(chat_id: str, title: str = "Chat") -> ChatSummary:
    """A chat summary with fixed times."""
    now = datetime(2026, 1, 1, tzinfo=UTC)
    return ChatSummary(id=chat_id, title=title, created_at=now, updated_at=now)


def detail(chat_id: str, messages: Sequence[MessageOut] = (), title: str = "Chat") -> ChatDetail:
    """A chat detail with fixed times."""
    return ChatDetail(**summary(chat_id, title).model_dump(), messages=list(messages))


class FakeTransport:
    """The stream transport and the chat API, scripted; it records every call, and every
    stream released before its end (closed by its reader, or its reading task cancelled)."""

    def __init__(self) -> None:
        self.runs: deque[Script] = deque()  # answers to open_run, in order
        self.events: deque[Script] = deque()  # answers to open_events, in order
        self.cancel_answers: deque[ServerRunStatus | ChatError] = deque()  # default: "cancelled"
        self.run_answers: deque[ServerRunStatus | ChatError] = deque()  # then run_default
        self.run_default: ServerRunStatus = "running"
        self.run_last_seq = 0  # the lastSeq every get_run answers
        self.chats: dict[str, ChatDetail] = {}
        self.chat_gate: asyncio.Event | None = None
        self.opened: list[RespondStreamBody] = []
        self.resumed: list[tuple[str, int]] = []
        self.released: list[str] = []
        self.cancelled: list[str] = []
        self.cancel_reasons: list[ClientTimeoutCode | None] = []
        self.polled: list[str] = []
        self.compacted: list[str] = []
        self.searched: list[str] = []
        self.renamed: list[tuple[str, str]] = []
        self.deleted: list[str] = []
        self.list_error: ChatError | None = None
        self.change_error: ChatError | None = None  # the answer of a rename or a delete

    async def open_run(self, body: RespondStreamBody) -> ByteStream:
        self.opened.append(body)
        assert body.run_id is not None
        return await self._open(body.run_id, self.runs)

    async def open_events(self, run_id: str, after_seq: int) -> ByteStream:
        self.resumed.append((run_id, after_seq))
        return await self._open(run_id, self.events)

    async def cancel_run(
        self, run_id: str, reason: ClientTimeoutCode | None = None
    ) -> CancelResult:
        self.cancelled.append(run_id)
        self.cancel_reasons.append(reason)
        await asyncio.sleep(0)
        answer = self.cancel_answers.popleft() if self.cancel_answers else "cancelled"
        if isinstance(answer, ChatError):
            raise answer
        return CancelResult(run_id=run_id, status=answer)

    async def decide_tool_call(
        self, run_id: str, tool_call_id: str, approved: bool
    ) -> ToolDecisionResult:
        decision = "approved" if approved else "denied"
        return ToolDecisionResult(
            tool_call_id=tool_call_id, decision=decision, effect="running" if approved else "denied"
        )

    async def post_tool_result(
        self, run_id: str, tool_call_id: str, result: JsonValue, is_error: bool
    ) -> ToolClientResultAnswer:
        return ToolClientResultAnswer(tool_call_id=tool_call_id, result=result, is_error=is_error)

    async def get_run(self, run_id: str) -> RunInfo:
        self.polled.append(run_id)
        await asyncio.sleep(0)
        answer = self.run_answers.popleft() if self.run_answers else self.run_default
        if isinstance(answer, ChatError):
            raise answer
        return RunInfo(
            run_id=run_id, chat_id="?", status=answer, last_seq=self.run_last_seq, attempt=1
        )

    async def get_chat(self, chat_id: str) -> ChatDetail:
        if self.chat_gate is not None:
            await self.chat_gate.wait()
        await asyncio.sleep(0)
        if chat_id not in self.chats:
            raise HttpStatusError(404, "chat_not_found", "Chat not found")
        return self.chats[chat_id]

    async def list_chats(self, query: str = "") -> list[ChatSummary]:
        self.searched.append(query)
        if self.list_error is not None:
            raise self.list_error
        await asyncio.sleep(0)
        found = [c for c in self.chats.values() if query.lower() in c.title.lower()]
        return [summary(c.id, c.title) for c in found]

    async def rename_chat(self, chat_id: str, title: str) -> ChatSummary:
        self.renamed.append((chat_id, title))
        await asyncio.sleep(0)
        if self.change_error is not None:
            raise self.change_error
        self.chats[chat_id] = detail(chat_id, self.chats[chat_id].messages, title)
        return summary(chat_id, title)

    async def delete_chat(self, chat_id: str) -> None:
        self.deleted.append(chat_id)
        await asyncio.sleep(0)
        if self.change_error is not None:
            raise self.change_error
        if self.chats.pop(chat_id, None) is None:
            raise HttpStatusError(404, "chat_not_found", "Chat not found")

    async def compact_chat(self, chat_id: str) -> CompactionResult:
        self.compacted.append(chat_id)
        await asyncio.sleep(0)
        return CompactionResult(
            chat_id=chat_id,
            used_tokens_before=10,
            used_tokens=1,
            max_tokens=10,
            ratio=0.1,
            severity="ok",
            compaction_recommended=False,
        )

    async def start_session(self) -> SessionInfo:
        return SessionInfo(user_id="usr_1", name="anonymous")

    async def sign_in(self, name: str, password: str) -> SessionInfo:
        return SessionInfo(user_id="usr_1", name=name, auth="password")

    async def sign_out(self, everywhere: bool = False) -> None:
        return None

    async def list_models(self) -> list[ModelInfo]:
        return []

    async def upload_attachment(
        self, file: object, on_progress: Callable[[int, int], None] | None = None
    ) -> AttachmentInfo:
        return AttachmentInfo(attachment_id="att_1", name=str(file), size=1, mime_type="text/plain")

    async def _open(self, run_id: str, scripts: deque[Script]) -> ByteStream:
        assert scripts, f"unexpected stream request for {run_id}"
        script = scripts.popleft()
        try:
            if script.gate is not None:
                await script.gate.wait()
            await asyncio.sleep(0)
        except asyncio.CancelledError:
            self.released.append(run_id)
            raise
        if script.error is not None:
            raise script.error
        return self._stream(run_id, script.steps)

    async def _stream(self, run_id: str, steps: Sequence[Step]) -> ByteStream:
        ended = False
        try:
            for step in steps:
                await asyncio.sleep(0)
                match step:
                    case bytes():
                        yield step
                    case Pause(gate=gate):
                        await gate.wait()
                    case Drop(detail=detail):
                        ended = True
                        raise TransportError(detail)
                    case Repeat():
                        async for chunk in _repeat(step):
                            yield chunk
            ended = True
        finally:
            if not ended:
                self.released.append(run_id)  # NOTE: as the browser aborts its fetch here


async def _repeat(step: Repeat) -> AsyncIterator[bytes]:
    index = 0
    while True:
        yield step.make(index)
        index += 1
        await asyncio.sleep(step.interval)


# --- frames ------------------------------------------------------------------------------------

KEEPALIVE = b": keepalive\n\n"


def frame(event_type: str, seq: int, run_id: str = "run_1", **fields: Any) -> bytes:
    """One SSE frame; ``fields`` are written as given (use the wire's camelCase names)."""
    done = event_type in ("done", "error")
    payload = {"type": event_type, "runId": run_id, "seq": seq, "done": done, **fields}
    return f"id: {seq}\ndata: {json.dumps(payload)}\n\n".encode()


def text(seq: int, value: str, run_id: str = "run_1") -> bytes:
    """A ``text`` delta frame."""
    return frame("text", seq, run_id, text=value)


def done(seq: int, run_id: str = "run_1", stop_reason: str = "stop") -> bytes:
    """A terminal ``done`` frame."""
    return frame("done", seq, run_id, messageId=f"m_{run_id}", stopReason=stop_reason)


# --- helpers -----------------------------------------------------------------------------------


class Ids:
    """Deterministic ids: ``run_1``, ``msg_1``, ``msg_2``, … (a counter per prefix)."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def __call__(self, prefix: str) -> str:
        self.counts[prefix] = self.counts.get(prefix, 0) + 1
        return f"{prefix}_{self.counts[prefix]}"


class TickClock:
    """A fake clock: each reading is 10 ms after the previous one."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 10.0
        return self.now


class StatusLog:
    """Every distinct status (with its cancel confirmation) a subscriber sees for one run."""

    def __init__(self, chat: ChatStream, run_id: str = "run_1") -> None:
        self.run_id = run_id
        self.seen: list[str] = []
        chat.subscribe(self)

    def __call__(self, state: State, previous: State) -> None:
        found = state.find_run(self.run_id)
        if found is None:
            return
        run = found[1]
        label = run.status if run.cancel is None else f"{run.status}/{run.cancel}"
        if not self.seen or self.seen[-1] != label:
            self.seen.append(label)


class TextLog:
    """Every distinct answer text a subscriber sees for one run."""

    def __init__(self, chat: ChatStream, run_id: str = "run_1") -> None:
        self.run_id = run_id
        self.seen: list[str] = []
        chat.subscribe(self)

    def __call__(self, state: State, previous: State) -> None:
        found = state.find_run(self.run_id)
        if found is None:
            return
        text = found[1].text
        if text and (not self.seen or self.seen[-1] != text):
            self.seen.append(text)


def run_of(chat: ChatStream, run_id: str = "run_1") -> RunState:
    """The run's current state (fails the test if it does not exist)."""
    found = chat.get_state().find_run(run_id)
    assert found is not None, f"no run {run_id}"
    return found[1]


async def finish(task: asyncio.Task[Any] | None, timeout: float = 5.0) -> Any:
    """Await a command's task; fails (instead of hanging) if it is missing or takes too long."""
    assert task is not None, "the command did not apply"
    return await asyncio.wait_for(task, timeout)


async def until(chat: ChatStream, predicate: Callable[[State], bool], timeout: float = 2.0) -> None:
    """Wait until ``predicate(state)`` holds (fails the test after ``timeout`` seconds)."""

    async def poll() -> None:
        while not predicate(chat.get_state()):
            await asyncio.sleep(0.001)

    await asyncio.wait_for(poll(), timeout)


def make_stream(fake: FakeTransport, **settings: Any) -> ChatStream:
    """A store over ``fake`` with deterministic ids and clock (``settings``: ClientConfig)."""
    settings.setdefault("total_timeout_ms", 3000)  # NOTE: a regression fails, never hangs
    config = ClientConfig(**settings)
    return ChatStream(fake, fake, config=config, clock=TickClock(), make_id=Ids())


async def open_chat(fake: FakeTransport, chat: ChatStream, chat_id: str = "c1") -> None:
    """Select an empty chat that exists on the (fake) server."""
    fake.chats.setdefault(chat_id, detail(chat_id))
    assert await finish(chat.select_chat(chat_id))


async def started(fake: FakeTransport, steps: Sequence[Step], **settings: Any) -> ChatStream:
    """A store with chat ``c1`` selected and ``steps`` scripted for its first run."""
    chat = make_stream(fake, **settings)
    await open_chat(fake, chat)
    fake.runs.append(Script(steps))
    return chat
