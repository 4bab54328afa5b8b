"""The demo model: a deterministic, human-paced turn with thinking, tools, images and context.

``play(turn)`` yields events with placeholder ``runId``/``seq``/``done``; the run registry
stamps the real ones when it appends them to the run's log.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from app.wire.api import RespondStreamBody
from app.wire.protocol import (
    DoneEvent,
    ImageGenerationFailedEvent,
    ImageGenerationStartedEvent,
    StreamEvent,
    SystemEventEvent,
    TextEvent,
    ThinkingEvent,
    ThinkingStartEvent,
    ToolCallArgumentsDeltaEvent,
    ToolCallCompletedEvent,
    ToolCallStartedEvent,
    ToolResultEvent,
    UserMessageIdEvent,
)
from server.demo import actions, python
from server.demo import text as demo_text
from server.model.catalog import DemoModel
from server.model.continuation import model_switch_events, replay_recovered
from server.model.tools import painted_image
from server.runs.drafts import answer_endings, draft
from server.runs.registry import Endings
from server.store.db import Database
from server.tools.calls import ToolRoom
from server.turns.context import ContextUsage, chat_usage, context_info_event, estimate_tokens
from server.turns.start import Turn

TOOL_LOOP_CAP = 3
LENGTH_LIMIT_TOKENS = 40
_IMAGE_WORDS = ("image", "draw", "picture", "paint", "sketch", "imagem", "desenhe", "foto")


async def _no_usage(_answer: str) -> ContextUsage:
    return ContextUsage(0, 1)


@dataclass(frozen=True, slots=True)
class DemoTurn:
    """Everything the demo needs to answer one turn."""

    prompt: str
    user_message_id: str
    message_id: str
    model_label: str
    token_s: float
    thinking: bool = False
    effort: str | None = None
    tools: bool = False
    brief: bool = False
    previous_model_label: str | None = None
    attachments: list[str] = field(default_factory=list)
    usage: Callable[[str], Awaitable[ContextUsage]] = _no_usage
    room: ToolRoom | None = None  # MCP tools (server/demo/actions.py: a note to save)
    said: list[str] = field(default_factory=list)  # what a tool that acted did, in words


def endings(turn: DemoTurn) -> Endings:
    """How a demo answer that is stopped or breaks ends."""
    return answer_endings(turn.message_id)


async def play(turn: DemoTurn) -> AsyncIterator[StreamEvent]:
    """Every event of one demo turn, paced like a model typing."""
    yield draft(UserMessageIdEvent, message_id=turn.user_message_id)
    for event in model_switch_events(turn.previous_model_label, turn.model_label):
        yield event
    phases = (
        _think(turn) if turn.thinking else None,
        _use_tools(turn) if turn.tools else None,
        _run_python(turn),
    )
    for phase in phases:
        async for event in phase or _nothing():
            yield event
    answer, stop_reason = _answer(turn)
    answer = "".join(f"{line}\n\n" for line in turn.said) + answer
    async for event in _type(turn, TextEvent, answer):
        yield event
    if turn.previous_model_label:
        yield replay_recovered()
    yield context_info_event(await turn.usage(answer))
    yield draft(DoneEvent, message_id=turn.message_id, stop_reason=stop_reason)


async def _nothing() -> AsyncIterator[StreamEvent]:
    return
    yield  # pragma: no cover - makes this an async generator


async def _type(
    turn: DemoTurn, cls: type[TextEvent] | type[ThinkingEvent], text: str
) -> AsyncIterator[StreamEvent]:
    for token in demo_text.tokens(text):
        await asyncio.sleep(turn.token_s)
        yield draft(cls, text=token)


def _answer(turn: DemoTurn) -> tuple[str, str]:
    answer = demo_text.answer_markdown(turn.prompt, turn.model_label, turn.attachments, turn.brief)
    if "length" not in turn.prompt.lower():
        return answer, "stop"
    return "".join(demo_text.tokens(answer)[:LENGTH_LIMIT_TOKENS]), "length"


async def _think(turn: DemoTurn) -> AsyncIterator[StreamEvent]:
    yield draft(ThinkingStartEvent)
    async for event in _type(
        turn, ThinkingEvent, demo_text.thinking_text(turn.prompt, turn.effort)
    ):
        yield event


async def _use_tools(turn: DemoTurn) -> AsyncIterator[StreamEvent]:
    tool = actions.note_tool(turn.room, turn.prompt)
    if tool is not None and turn.room is not None:
        text = actions.note_text(turn.prompt)
        call_id = "call_note_1"
        async for event in _tool_call(turn, call_id, tool.qualified_name, {"text": text}):
            yield event
        async for item in actions.save_note(turn.room, tool, call_id, text):
            if isinstance(item, str):
                turn.said.append(item)
            else:
                yield item
        return
    looping = "loop" in turn.prompt.lower()
    for index in range(1, (TOOL_LOOP_CAP if looping else 1) + 1):
        query = " ".join(turn.prompt.split()[:8]) or "attachment"
        arguments = {"query": query if index == 1 else f"{query} (try {index})", "limit": 3}
        async for event in _tool_call(turn, f"call_search_{index}", "web_search", arguments):
            yield event
        yield draft(
            ToolResultEvent,
            tool_call_id=f"call_search_{index}",
            result=_search_result(query),
            is_error=False,
        )
    if looping:
        yield draft(
            SystemEventEvent,
            kind="tool_loop_exhausted",
            message=(f"The tool loop stopped after {TOOL_LOOP_CAP} calls without converging."),
        )
    if any(word in turn.prompt.lower() for word in _IMAGE_WORDS):
        async for event in _image(turn):
            yield event


async def _run_python(turn: DemoTurn) -> AsyncIterator[StreamEvent]:
    """The page runs the demo's code (SPEC §13) when asked to and able to."""
    code = python.python_code(turn.room, turn.prompt)
    if code is None or turn.room is None:
        return
    call_id = "call_python_1"
    async for event in _tool_call(turn, call_id, "python", {"code": code}):
        yield event
    async for item in python.run_python(turn.room, call_id, code):
        if isinstance(item, str):
            turn.said.append(item)
        else:
            yield item


async def _tool_call(
    turn: DemoTurn, call_id: str, name: str, arguments: dict[str, Any]
) -> AsyncIterator[StreamEvent]:
    yield draft(ToolCallStartedEvent, tool_call_id=call_id, tool_name=name)
    for piece in demo_text.pieces(json.dumps(arguments), 7):
        await asyncio.sleep(turn.token_s)
        yield draft(ToolCallArgumentsDeltaEvent, tool_call_id=call_id, delta=piece)
    yield draft(ToolCallCompletedEvent, tool_call_id=call_id, tool_name=name, arguments=arguments)


def _search_result(query: str) -> dict[str, Any]:
    return {
        "results": [
            {
                "title": f"Result {n} for {query}",
                "url": f"https://example.org/search/{n}",
                "snippet": "A deterministic snippet from the demo search tool.",
            }
            for n in range(1, 4)
        ]
    }


async def _image(turn: DemoTurn) -> AsyncIterator[StreamEvent]:
    call_id, image_id = "call_image_1", f"img_{turn.message_id}"
    prompt = " ".join(turn.prompt.split()[:16])
    async for event in _tool_call(turn, call_id, "generate_image", {"prompt": prompt}):
        yield event
    yield draft(ImageGenerationStartedEvent, image_id=image_id, tool_call_id=call_id, prompt=prompt)
    await asyncio.sleep(turn.token_s * 20)
    if "fail" in turn.prompt.lower():
        yield draft(
            ImageGenerationFailedEvent,
            image_id=image_id,
            error="The demo image tool was asked to fail.",
        )
        yield draft(
            ToolResultEvent, tool_call_id=call_id, result={"error": "image failed"}, is_error=True
        )
        return
    yield await painted_image(image_id, prompt)
    yield draft(ToolResultEvent, tool_call_id=call_id, result={"imageId": image_id}, is_error=False)


def demo_turn_for(
    db: Database,
    turn: Turn,
    body: RespondStreamBody,
    *,
    token_ms: float,
    context_window: int,
    room: ToolRoom | None = None,
) -> DemoTurn:
    """The demo's turn of a checked ``turn`` (its model is a demo model)."""
    model = turn.model
    assert isinstance(model, DemoModel)

    async def usage(answer: str) -> ContextUsage:
        before = (await chat_usage(db, turn.meta.chat_id, context_window)).used_tokens
        return ContextUsage(before + estimate_tokens(answer), context_window)

    return DemoTurn(
        prompt=turn.prompt,
        user_message_id=turn.meta.user_message_id,
        message_id=turn.meta.message_id,
        model_label=model.info.label,
        token_s=token_ms * model.pace / 1000,
        thinking=body.thinking_enabled and model.info.supports_thinking,
        effort=body.reasoning_effort,
        tools=body.tool_intent and model.info.supports_tools,
        brief=model.brief,
        previous_model_label=turn.previous_model_label,
        attachments=[str(a["name"]) for a in turn.attachments],
        usage=usage,
        room=room,
    )
