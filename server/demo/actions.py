"""The demo model's tool that acts: asked to save a note (Tools on), it calls the ``save_note``
tool of an MCP server that is up (examples/notes_server.py in riacho.example.toml), so a new
user meets an approval with ``make run``. What happened is said in the answer's first line.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

from app.wire.protocol import StreamEvent, ToolResultEvent
from server.runs.drafts import draft
from server.tools.calls import CallOutcome, ToolRoom, run_call
from server.tools.connections import McpTool

NOTE_TOOL = "save_note"
_ASKS_FOR_A_NOTE = re.compile(r"\b(save|take|write|keep|make)\b.*\bnotes?\b|\bnote that\b", re.I)
_NOTE_TEXT = re.compile(r"\bnote(?:\s+that|:)?\s+(.+)$", re.I | re.S)
SAID: dict[str, str] = {
    "done": "I saved the note.",
    "denied": "You did not allow saving the note, so I did not save it.",
    "failed": "Saving the note failed; the tool said why above.",
    "unknown": "The notes server did not answer: the note may have been saved — check.",
}


def note_tool(room: ToolRoom | None, prompt: str) -> McpTool | None:
    """The tool to call when the prompt asks for a note and a notes server is up."""
    if room is None or not _ASKS_FOR_A_NOTE.search(prompt):
        return None
    return next((tool for tool in room.servers.tools() if tool.name == NOTE_TOOL), None)


def note_text(prompt: str) -> str:
    """What to save: the words after "note (that)", else the whole prompt."""
    found = _NOTE_TEXT.search(prompt.strip())
    return (found.group(1) if found else prompt).strip().rstrip(".") or prompt


async def save_note(
    room: ToolRoom, tool: McpTool, call_id: str, text: str
) -> AsyncIterator[StreamEvent | str]:
    """The call's events and its ``tool_result``, then the sentence saying what happened."""
    async for item in run_call(room, tool, call_id, {"text": text}):
        if not isinstance(item, CallOutcome):
            yield item
            continue
        yield draft(
            ToolResultEvent,
            tool_call_id=call_id,
            result=item.result,
            is_error=item.is_error,
            effect=item.effect,
        )
        yield SAID.get(item.effect, "")
