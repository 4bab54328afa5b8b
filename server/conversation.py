"""What a real model is sent: the chat's earlier turns and the new user message.

Messages form a tree (an edited prompt or a regenerated answer starts a branch); the model is
sent the branch the new prompt follows — each user message with the attempt after which the
conversation went on — read back from the messages' persisted parts: text, and tool calls
with their results (a call with no result, from an interrupted run, is left out: no provider
accepts a call without one).
Thinking, images and timeline markers are not sent back. Attached text files are inlined in the
user message, images are sent as images, other files are named but not sent.

When the turn offers no tools, earlier tool calls are written into the assistant's text instead
of being sent as structured calls (several providers refuse tool calls in a request that
defines no tools). A chat compacted by a real model (``server.compaction``) sends its summary
in place of the turns before the compaction.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Iterator
from typing import Any

from app.state.parts import Parts, TextPart, ToolCallPart, parts_from_json
from server.context import branch_turns
from server.db import Database, now
from server.providers.base import (
    AssistantMessage,
    ImageInput,
    Message,
    ToolCall,
    ToolOutput,
    UserMessage,
)

MAX_INLINE_CHARS = 100_000
SUMMARY_INTRO = "A summary of our conversation before this point:"
TEXT_TYPES = frozenset({"text/plain", "text/markdown", "text/csv", "application/json"})
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
JsonObject = dict[str, Any]


async def chat_history(
    db: Database, chat_id: str, before_user_message: str | None, structured_tools: bool
) -> list[Message]:
    """The turns on the branch that leads to ``before_user_message`` (when ``None``: to the
    chat's newest answer), oldest first."""
    summary = await db.one(
        "SELECT s.text, c.compacted_at FROM chat_summaries s JOIN chats c ON c.id = s.chat_id"
        " WHERE s.chat_id = ?",
        (chat_id,),
    )
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
        messages += assistant_messages(parts, structured_tools)
    return merge_user_runs(messages)


async def user_message(db: Database, prompt: str, attachments: Iterable[JsonObject]) -> UserMessage:
    """The prompt with its attachments: text inlined, images attached, the rest named."""
    notes: list[str] = []
    images: list[ImageInput] = []
    for attachment in attachments:
        name, mime = str(attachment.get("name", "file")), str(attachment.get("mimeType", ""))
        data = await _attachment_data(db, str(attachment.get("attachmentId", "")))
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


async def _attachment_data(db: Database, attachment_id: str) -> bytes | None:
    row = await db.one(
        "SELECT data FROM attachments WHERE id = ? AND expires_at > ?", (attachment_id, now())
    )
    return bytes(row["data"]) if row is not None else None


def _tag(name: str, mime: str, omitted: str) -> str:
    return f'<attachment name="{name}" type="{mime}" omitted="{omitted}"/>'


def _inline_text(name: str, mime: str, data: bytes) -> str:
    text = data.decode("utf-8", errors="replace")
    if len(text) > MAX_INLINE_CHARS:
        cut = len(text) - MAX_INLINE_CHARS
        text = text[:MAX_INLINE_CHARS] + f"\n[… {cut} more characters not sent]"
    return f'<attachment name="{name}" type="{mime}">\n{text}\n</attachment>'


def assistant_messages(parts: Parts, structured_tools: bool) -> list[Message]:
    """An answer's parts as assistant steps, each followed by its tool results (or, without
    structured tools, as one message with the calls written into its text)."""
    steps = list(_steps(parts))
    if not structured_tools:
        text = "".join(t + "".join(_call_as_text(call) for call in calls) for t, calls in steps)
        return [AssistantMessage(text)] if text else []
    messages: list[Message] = []
    for text, calls in steps:
        tool_calls = tuple(_tool_call(call) for call in calls)
        messages.append(AssistantMessage(text, tool_calls))
        messages += [_tool_output(call, tc) for call, tc in zip(calls, tool_calls, strict=True)]
    return messages


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
        elif isinstance(part, ToolCallPart) and part.status in ("done", "error"):
            calls.append(part)
    if text or calls:
        yield "".join(text), calls


def _tool_call(part: ToolCallPart) -> ToolCall:
    arguments = dict(part.arguments)
    return ToolCall(
        id=part.tool_call_id,
        name=part.tool_name,
        arguments=arguments,
        arguments_text=json.dumps(arguments, ensure_ascii=False),
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
