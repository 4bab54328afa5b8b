"""A turn answered by a real model: the agentic loop over one provider adapter.

``play(turn, opened)`` yields draft contract events (the run registry stamps run ids and seqs):

    user_message_id
    [fallback_notice, continuation_transition]          the chat switched model (replayed)
    loop, at most ``max_model_calls`` times:
        the model call's text / thinking / tool call events (provider ids made run-unique)
        the provider's completion:
            tool use → each call runs: [image events], tool_result; the model is called again
            otherwise → context_info (that call's usage), done(stop | length)
    a provider failure at any point → error(code): what arrived before it stays

``opened`` resolves once the first request was accepted (``None``) or refused before its stream
started (the ``ProviderFailure``), so the HTTP route can still answer 503 instead of a stream.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from app.wire.codes import ApiErrorCode, EndErrorCode
from app.wire.protocol import (
    DoneEvent,
    StreamEvent,
    SystemEventEvent,
    TextEvent,
    ToolCallArgumentsDeltaEvent,
    ToolCallCompletedEvent,
    ToolCallStartedEvent,
    ToolResultEvent,
    UserMessageIdEvent,
    end_error,
)
from server.contract.errors import ApiError
from server.model.catalog import ProviderModel
from server.model.continuation import model_switch_events, replay_recovered
from server.model.providers.base import (
    AssistantMessage,
    CallEnd,
    Message,
    ModelCall,
    ModelStream,
    ProviderFailure,
    StepRecord,
    ToolCall,
    ToolOutput,
    open_stream,
)
from server.model.providers.common import retry_after_header
from server.model.tools import ToolOutcome, run_tool
from server.runs.drafts import answer_endings, draft
from server.runs.registry import Endings
from server.tools.calls import ToolRoom
from server.turns.context import ContextUsage, context_info_event

Opened = asyncio.Future[ProviderFailure | None]


@dataclass(frozen=True, slots=True)
class ModelTurn:
    """Everything the loop needs for one turn."""

    model: ProviderModel
    call: ModelCall
    user_message_id: str
    message_id: str
    max_model_calls: int = 8
    previous_model_label: str | None = None
    # NOTE: called with each model call's record once the call ended (persisted with the
    # answer, so the next turn can send the provider what it needs: server/model/conversation.py)
    keep_step: Callable[[StepRecord], Awaitable[None]] | None = None
    room: ToolRoom | None = None  # the MCP servers' tools, their approvals and ledger


class ToolCallIds:
    """Tool call ids unique within a run (providers may repeat theirs across calls)."""

    def __init__(self) -> None:
        self._taken: set[str] = set()

    def claim(self, provider_id: str) -> str:
        candidate, n = provider_id or "call", 1
        while candidate in self._taken:
            n += 1
            candidate = f"{provider_id or 'call'}~{n}"
        self._taken.add(candidate)
        return candidate


@dataclass(slots=True)
class Step:
    """What one model call said: text, and tool calls under run-unique ids."""

    ids: ToolCallIds
    text: list[str] = field(default_factory=list)
    renamed: dict[str, str] = field(default_factory=dict)
    arguments_text: dict[str, list[str]] = field(default_factory=dict)
    calls: list[ToolCall] = field(default_factory=list)

    def record(self, event: StreamEvent) -> StreamEvent:
        """Note one draft event; returns it with the run-unique tool call id."""
        if isinstance(event, TextEvent):
            self.text.append(event.text)
        if not isinstance(
            event, ToolCallStartedEvent | ToolCallArgumentsDeltaEvent | ToolCallCompletedEvent
        ):
            return event
        provider_id = event.tool_call_id
        if provider_id not in self.renamed:
            self.renamed[provider_id] = self.ids.claim(provider_id)
        call_id = self.renamed[provider_id]
        if isinstance(event, ToolCallArgumentsDeltaEvent):
            self.arguments_text.setdefault(call_id, []).append(event.delta)
        if isinstance(event, ToolCallCompletedEvent):
            text = "".join(self.arguments_text.get(call_id, []))
            self.calls.append(
                ToolCall(call_id, event.tool_name, event.arguments, text, provider_id)
            )
        return event.model_copy(update={"tool_call_id": call_id})

    def message(self, native: Any) -> AssistantMessage:
        return AssistantMessage("".join(self.text), tuple(self.calls), native)

    def stored(self, source: str, native: Any) -> StepRecord:
        calls = tuple((call.id, call.wire_id) for call in self.calls)
        return StepRecord(source, "".join(self.text), calls, native)


def endings(turn: ModelTurn) -> Endings:
    """How a model's answer that is stopped or breaks ends."""
    return answer_endings(turn.message_id)


async def play(turn: ModelTurn, opened: Opened) -> AsyncIterator[StreamEvent]:
    """Every event of one model turn (see the module docstring)."""
    yield draft(UserMessageIdEvent, message_id=turn.user_message_id)
    try:
        stream = await open_stream(turn.model.adapter, turn.call, turn.model.timeouts)
    except ProviderFailure as failure:
        _settle(opened, failure)
        yield error_event(failure, before_stream=True)
        return
    _settle(opened, None)
    for event in model_switch_events(turn.previous_model_label, turn.model.info.label):
        yield event
    async for event in _loop(turn, stream):
        yield event


async def _loop(turn: ModelTurn, stream: ModelStream) -> AsyncIterator[StreamEvent]:
    messages: list[Message] = list(turn.call.messages)
    ids = ToolCallIds()
    for number in range(1, turn.max_model_calls + 1):
        step, end = Step(ids), None
        try:
            async for item in stream.items():
                if isinstance(item, CallEnd):
                    end = item
                else:
                    yield step.record(item)
        except ProviderFailure as failure:
            yield error_event(failure, before_stream=False)
            return
        finally:
            await stream.aclose()  # NOTE: idempotent; covers leaving the loop by any exit.
        assert end is not None  # NOTE: ModelStream.items() raises unless it ended with one.
        if turn.keep_step is not None:
            await turn.keep_step(step.stored(turn.model.info.id, end.native))
        runs_tools = end.stop == "tool_use" and bool(step.calls) and number < turn.max_model_calls
        outputs: list[ToolOutput] = []
        for call in step.calls:
            async for event in _call_tool(turn, call, runs_tools, end, outputs):
                yield event
        if not runs_tools:
            for event in _finish(turn, end, exhausted=end.stop == "tool_use" and bool(step.calls)):
                yield event
            return
        messages += [step.message(end.native), *outputs]
        try:
            stream = await open_stream(
                turn.model.adapter,
                replace(turn.call, messages=tuple(messages)),
                turn.model.timeouts,
            )
        except ProviderFailure as failure:
            yield error_event(failure, before_stream=False)
            return


async def _call_tool(
    turn: ModelTurn, call: ToolCall, runs: bool, end: CallEnd, outputs: list[ToolOutput]
) -> AsyncIterator[StreamEvent]:
    """Run one call (or say why it was not run); its ``tool_result`` closes it."""
    outcome = _not_run(call, turn, end) if not runs else _invalid_arguments(call)
    if outcome is None:
        image_id = f"img_{turn.message_id}_{len(outputs) + 1}_{call.id}"
        async for item in run_tool(call, image_id, turn.room):
            if isinstance(item, ToolOutcome):
                outcome = item
            else:
                yield item
    assert outcome is not None
    output = json.dumps(outcome.result, ensure_ascii=False)
    outputs.append(ToolOutput(call, output, outcome.is_error))
    yield draft(
        ToolResultEvent,
        tool_call_id=call.id,
        result=outcome.result,
        is_error=outcome.is_error,
        effect=outcome.effect,
    )


def _not_run(call: ToolCall, turn: ModelTurn, end: CallEnd) -> ToolOutcome:
    if end.stop == "tool_use":
        reason = f"not run: the tool loop reached its cap of {turn.max_model_calls} model calls"
    else:
        reason = f"not run: the model stopped ({end.stop}) without asking for tool results"
    return ToolOutcome({"error": reason}, is_error=True)


def _invalid_arguments(call: ToolCall) -> ToolOutcome | None:
    text = call.arguments_text.strip()
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError as exc:
        return ToolOutcome({"error": f"the arguments are not valid JSON: {exc}"}, is_error=True)
    if not isinstance(value, dict):
        return ToolOutcome({"error": "the arguments must be a JSON object"}, is_error=True)
    return None


def _finish(turn: ModelTurn, end: CallEnd, exhausted: bool) -> list[StreamEvent]:
    events: list[StreamEvent] = []
    if exhausted:
        events.append(
            draft(
                SystemEventEvent,
                kind="tool_loop_exhausted",
                message=(
                    f"The tool loop stopped after {turn.max_model_calls} model calls "
                    "without a final answer."
                ),
            )
        )
    if turn.previous_model_label:
        events.append(replay_recovered())
    if end.usage is not None:
        usage = ContextUsage(end.usage.total, turn.model.context_window)
        events.append(context_info_event(usage))
    stop: Literal["stop", "length"] = "length" if end.stop == "length" else "stop"
    events.append(draft(DoneEvent, message_id=turn.message_id, stop_reason=stop))
    return events


def error_event(failure: ProviderFailure, *, before_stream: bool) -> StreamEvent:
    """The terminal ``error`` of a failed model call."""
    code: EndErrorCode
    if failure.code == "provider_unavailable":
        code = "model_unavailable" if before_stream else "provider_error"
    else:
        code = failure.code
    return end_error(failure.message, code)


def pre_stream_error(failure: ProviderFailure) -> ApiError:
    """The HTTP answer to a model call refused before anything streamed."""
    if failure.code in ("provider_unavailable", "provider_timeout"):
        wait = failure.retry_after
        headers = {"Retry-After": retry_after_header(wait)} if wait else None
        return ApiError(503, "model_unavailable", failure.message, headers)
    code: ApiErrorCode = (
        "provider_error" if failure.code == "provider_unavailable" else failure.code
    )
    return ApiError(502, code, failure.message)


def _settle(opened: Opened, failure: ProviderFailure | None) -> None:
    if not opened.done():
        opened.set_result(failure)
