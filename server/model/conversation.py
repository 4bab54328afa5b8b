"""What a real model is sent: the chat's earlier turns and the new user message.

Messages form a tree (an edited prompt or a regenerated answer starts a branch); the model is
sent the branch the new prompt follows — each user message with the attempt after which the
conversation went on — read back from the messages' persisted parts: text, and tool calls
with their results (a call with no result, from an interrupted run, is left out: no provider
accepts a call without one).
Images and timeline markers are not sent back. Attached text files are inlined in the user
message, images are sent as images, other files are named but not sent.

An answer made by a real model keeps one record per model call (``messages.steps``,
:class:`~server.model.providers.base.StepRecord`): its text, its calls with the provider's own ids,
and what that provider must be sent back (``native``: signed thinking, thought signatures,
reasoning items, reasoning text). The records are sent back with ``native`` only to the model
that made them; to any other model (or where a step's record is missing, or a call lost its
result) the step goes as plain text and calls, and the run's trace says so. An answer whose
last step is tool calls (a loop cut by its cap, a Stop, a failure) is closed with a short
assistant line, so the next prompt starts a new turn: no provider then asks for the thinking
or signatures of an unfinished tool step.

When the turn offers no tools, earlier tool calls are written into the assistant's text instead
of being sent as structured calls (several providers refuse tool calls in a request that
defines no tools). A chat compacted by a real model (``server.model.compaction``) sends its summary
in place of the turns before the compaction.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Iterator
from typing import Any

from app.wire.parts import Parts, TextPart, ToolCallPart, parts_from_json
from server.model.providers.base import (
    AssistantMessage,
    ImageInput,
    Message,
    StepRecord,
    ToolCall,
    ToolOutput,
    UserMessage,
)
from server.store import chats
from server.store.attachments import attachment_data
from server.store.db import Database
from server.turns.context import branch_turns

MAX_INLINE_CHARS = 100_000
SUMMARY_INTRO = "A summary of our conversation before this point:"
TEXT_TYPES = frozenset({"text/plain", "text/markdown", "text/csv", "application/json"})
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
JsonObject = dict[str, Any]


async def chat_history(
    db: Database,
    chat_id: str,
    before_user_message: str | None,
    structured_tools: bool,
    source: str | None = None,
    notes: list[str] | None = None,
) -> list[Message]:
    """The turns on the branch that leads to ``before_user_message`` (when ``None``: to the
    chat's newest answer), oldest first, for the model ``source``; what could not be sent as
    stored is said in ``notes``."""
    summary = await chats.summary_of(db, chat_id)
    messages: list[Message] = []
    turns = await branch_turns(db, chat_id, before_user_message)
    if summary is not None:
        messages.append(UserMessage(f"{SUMMARY_INTRO}\n{summary['text']}"))
        turns = [
            (user, answer) for user, answer in turns if user["created_at"] > summary["compacted_at"]
        ]
    for user, answer in turns:
        messages.append(await user_message(db, user["content"], json.loads(user["attachments"])))
        parts = parts_from_json(json.loads(answer["parts"]))
        steps = _records(answer["steps"])
        messages += assistant_messages(parts, structured_tools, steps, source, notes)
    return merge_user_runs(messages)


def _records(stored: str | None) -> list[StepRecord]:
    try:
        data = json.loads(stored or "[]")
    except ValueError:
        return []
    found = [StepRecord.from_json(item) for item in data] if isinstance(data, list) else []
    return [record for record in found if record is not None]


async def user_message(db: Database, prompt: str, attachments: Iterable[JsonObject]) -> UserMessage:
    """The prompt with its attachments: text inlined, images attached, the rest named."""
    notes: list[str] = []
    images: list[ImageInput] = []
    for attachment in attachments:
        name, mime = str(attachment.get("name", "file")), str(attachment.get("mimeType", ""))
        data = await attachment_data(db, str(attachment.get("attachmentId", "")))
        if data is None:
            notes.append(_tag(name, mime, "the file is no longer available"))
        elif mime in TEXT_TYPES:
            notes.append(_inline_text(name, mime, data))
        elif mime in IMAGE_TYPES:
            images.append(ImageInput(mime, base64.b64encode(data).decode("ascii")))
        else:
            notes.append(_tag(name, mime, "this file type is not sent to the model"))
    text = "\n\n".join([prompt, *notes]) if notes else prompt
    return UserMessage(text, tuple(images))


def _tag(name: str, mime: str, omitted: str) -> str:
    return f'<attachment name="{name}" type="{mime}" omitted="{omitted}"/>'


def _inline_text(name: str, mime: str, data: bytes) -> str:
    text = data.decode("utf-8", errors="replace")
    if len(text) > MAX_INLINE_CHARS:
        cut = len(text) - MAX_INLINE_CHARS
        text = text[:MAX_INLINE_CHARS] + f"\n[… {cut} more characters not sent]"
    return f'<attachment name="{name}" type="{mime}">\n{text}\n</attachment>'


CLOSING_LINE = "(The tool steps above ended here, without a final answer.)"


def assistant_messages(
    parts: Parts,
    structured_tools: bool,
    records: list[StepRecord] | None = None,
    source: str | None = None,
    notes: list[str] | None = None,
) -> list[Message]:
    """An answer's steps, each followed by its tool results (or, without structured tools, as
    one message with the calls written into its text); from its records where it has them."""
    if not structured_tools:
        steps = list(_steps(parts))
        text = "".join(t + "".join(_call_as_text(call) for call in calls) for t, calls in steps)
        return [AssistantMessage(text)] if text else []
    done = {p.tool_call_id: p for p in parts if isinstance(p, ToolCallPart) and _finished(p)}
    messages: list[Message] = []
    for record in records or []:
        messages += _recorded_step(record, done, source, notes)
    for text, calls in _steps(_after_records(parts, records or [])):
        tool_calls = tuple(_tool_call(call) for call in calls)
        messages.append(AssistantMessage(text, tool_calls))
        messages += [_tool_output(call, tc) for call, tc in zip(calls, tool_calls, strict=True)]
    if messages and isinstance(messages[-1], ToolOutput):
        messages.append(AssistantMessage(CLOSING_LINE))
    return messages


def _finished(part: ToolCallPart) -> bool:
    return part.status in ("done", "error")


def _recorded_step(
    record: StepRecord,
    done: dict[str, ToolCallPart],
    source: str | None,
    notes: list[str] | None,
) -> list[Message]:
    """One stored model call: with its native content for the model that made it, when every
    one of its calls has its result; else as plain text and the calls that have one."""
    answered = [(run_id, wire) for run_id, wire in record.calls if run_id in done]
    native = record.native
    if native is not None and (record.source != source or len(answered) < len(record.calls)):
        if notes is not None:
            why = "another model" if record.source != source else "a call without its result"
            notes.append(f"a step of {record.source} sent without its native content ({why})")
        native = None
    tool_calls = tuple(_tool_call(done[run_id], wire) for run_id, wire in answered)
    outputs = [_tool_output(done[call.id], call) for call in tool_calls]
    if not record.text and not tool_calls:
        return []
    return [AssistantMessage(record.text, tool_calls, native), *outputs]


def _after_records(parts: Parts, records: list[StepRecord]) -> Parts:
    """The parts no record covers: the step a Stop or a failure cut before it ended."""
    if not records:
        return parts
    recorded = {run_id for record in records for run_id, _ in record.calls}
    if not records[-1].calls:
        return ()  # NOTE: the last call ended with its answer: nothing after it
    last = max(
        (
            i
            for i, p in enumerate(parts)
            if isinstance(p, ToolCallPart) and p.tool_call_id in recorded
        ),
        default=len(parts) - 1,
    )
    return parts[last + 1 :]


def _steps(parts: Parts) -> Iterator[tuple[str, list[ToolCallPart]]]:
    """(text, finished tool calls) per model call: text after a tool call starts a new one."""
    text: list[str] = []
    calls: list[ToolCallPart] = []
    for part in parts:
        if isinstance(part, TextPart):
            if calls:
                yield "".join(text), calls
                text, calls = [], []
            text.append(part.text)
        elif isinstance(part, ToolCallPart) and _finished(part):
            calls.append(part)
    if text or calls:
        yield "".join(text), calls


def _tool_call(part: ToolCallPart, provider_id: str | None = None) -> ToolCall:
    arguments = dict(part.arguments)
    return ToolCall(
        id=part.tool_call_id,
        name=part.tool_name,
        arguments=arguments,
        arguments_text=json.dumps(arguments, ensure_ascii=False),
        provider_id=provider_id,
    )


def _tool_output(part: ToolCallPart, call: ToolCall) -> ToolOutput:
    return ToolOutput(call, json.dumps(part.result, ensure_ascii=False), is_error=part.is_error)


def _call_as_text(part: ToolCallPart) -> str:
    arguments = json.dumps(dict(part.arguments), ensure_ascii=False)
    result = json.dumps(part.result, ensure_ascii=False)
    return f"\n[tool {part.tool_name}({arguments}) returned {result}]\n"


def merge_user_runs(messages: list[Message]) -> list[Message]:
    """Consecutive user messages (an answer that had nothing to send) become one."""
    merged: list[Message] = []
    for message in messages:
        previous = merged[-1] if merged else None
        if isinstance(message, UserMessage) and isinstance(previous, UserMessage):
            merged[-1] = UserMessage(
                f"{previous.text}\n\n{message.text}", previous.images + message.images
            )
        else:
            merged.append(message)
    return merged
