"""A chat's branch as Markdown (``GET /api/chats/{id}/export?format=markdown``): readable
anywhere, thinking and tool calls folded under ``<details>``, every ending said in words.

The branch is the one on screen: from the top down to ``leaf`` (the page sends the last message
it shows), or down to the newest answer.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Sequence

from app.wire.api import MessageOut
from app.wire.parts import (
    ImagePart,
    Part,
    SystemEventPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    parts_from_json,
)


class UnknownLeaf(LookupError):
    """The message the branch should end at is not in the chat."""


def branch(messages: Sequence[MessageOut], leaf: str | None) -> list[MessageOut]:
    """The messages from the top down to ``leaf`` (a message's id, or the run id of an answer;
    ``None``: the newest answer), in order."""
    by_id = {message.id: message for message in messages}
    # NOTE: the page names an answer by its run id, which it made itself, so it knows it even
    # for an answer whose stream never said the message's id
    by_id |= {message.run_id: message for message in messages if message.run_id is not None}
    if leaf is None:
        answers = [message for message in messages if message.role == "assistant"]
        end = answers[-1] if answers else (messages[-1] if messages else None)
    elif (end := by_id.get(leaf)) is None:
        raise UnknownLeaf(leaf)
    path: list[MessageOut] = []
    while end is not None and end not in path:
        path.append(end)
        end = by_id.get(end.parent_id) if end.parent_id is not None else None
    return path[::-1]


def chat_markdown(title: str, messages: Sequence[MessageOut], leaf: str | None) -> str:
    """The branch as one Markdown document."""
    attempts: dict[str | None, int] = {}
    for message in messages:
        if message.role == "assistant":
            attempts[message.parent_id] = attempts.get(message.parent_id, 0) + 1
    blocks = [f"# {_line(title) or 'Chat'}"]
    for message in branch(messages, leaf):
        if message.role == "user":
            blocks += ["## You", *_user(message)]
        else:
            count = attempts.get(message.parent_id, 1)
            where = f" (attempt {message.attempt} of {count})" if count > 1 else ""
            blocks += [f"## Assistant{where}", *_answer(message)]
    return "\n\n".join(block for block in blocks if block) + "\n"


def _line(text: str) -> str:
    return " ".join(text.split())


def _user(message: MessageOut) -> list[str]:
    files = [f"- {_line(a.name)} ({a.mime_type}, {a.size} bytes)" for a in message.attachments]
    return [message.text, ("Attached:\n" + "\n".join(files)) if files else ""]


def _answer(message: MessageOut) -> list[str]:
    return [*(_part(part) for part in parts_from_json(message.parts)), _ending(message)]


def _part(part: Part) -> str:
    match part:
        case TextPart():
            return part.text
        case ThinkingPart():
            return _folded("Thinking", part.text)
        case ToolCallPart():
            return _tool_call(part)
        case ImagePart():
            if part.status == "completed" and part.url and part.url.startswith("http"):
                return f"![{_line(part.alt or part.prompt)}]({part.url})"
            return f"*Image ({part.status}): {_line(part.prompt)}*"
        case SystemEventPart():
            return f"*{_line(part.message or part.kind)}*"
        case _:
            return ""


def _folded(summary: str, body: str) -> str:
    return f"<details><summary>{summary}</summary>\n\n{body}\n\n</details>"


def _tool_call(part: ToolCallPart) -> str:
    state = part.effect if part.effect not in (None, "none") else part.status
    body = "Arguments:\n\n" + _json_block(dict(part.arguments) or part.arguments_text)
    if part.status in ("done", "error"):
        body += "\n\n" + ("Error:" if part.is_error else "Result:") + "\n\n"
        body += _json_block(part.result)
    return _folded(f"Tool call: {_line(part.tool_name)} ({state})", body)


def _json_block(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)
    fence = "```"
    while fence in text:
        fence += "`"
    return f"{fence}json\n{text}\n{fence}"


def _ending(message: MessageOut) -> str:
    if message.status == "completed":
        return "> *Cut at the length limit.*" if message.stop_reason == "length" else ""
    words = {
        "cancelled": "Stopped before the answer was complete.",
        "interrupted": "Interrupted: this answer is incomplete.",
        "running": "Still being written when this was exported.",
    }.get(message.status or "", "")
    if message.status == "failed":
        words = "Failed" + (f": {_line(message.error_message)}" if message.error_message else ".")
    return f"> *{words}*" if words else ""


_UNSAFE = re.compile(r"[^A-Za-z0-9._ -]+")


def file_name(title: str, extension: str) -> str:
    """A file name made from the title that any system accepts (``Chat.md`` if nothing is left)."""
    ascii_title = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode()
    stem = "-".join(_UNSAFE.sub(" ", ascii_title).replace(".", " ").split())[:80].strip("-")
    return f"{stem or 'Chat'}.{extension}"
