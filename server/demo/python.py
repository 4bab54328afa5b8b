"""The demo model's ``python`` call (SPEC §13): asked to "run python" while the page runs code
(``clientTools: ["python"]``), it asks the page to run some code, waits for the result, and
says in its answer's first line what the code printed (or why there is nothing).

"run python: CODE" runs CODE as given (tests drive the page with it); otherwise the demo runs
:data:`DEFAULT_CODE`.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

from pydantic import JsonValue

from app.wire.protocol import StreamEvent, ToolResultEvent
from server.runs.drafts import draft
from server.tools.calls import CallOutcome, ToolRoom
from server.tools.client_tools import PYTHON, run_client_call, runs_in_client

_ASKS_TO_RUN = re.compile(r"\brun\s+(?:some\s+|the\s+)?(?:python|code)\b", re.I)
_GIVEN_CODE = re.compile(r"\brun\s+(?:python|code)\s*:\s*(.+)$", re.I | re.S)
DEFAULT_CODE = "total = sum(range(1, 101))\nprint(f'The sum of 1 to 100 is {total}')"


def python_code(room: ToolRoom | None, prompt: str) -> str | None:
    """The code to ask the page to run, when the prompt asks for it and the page runs code."""
    if not runs_in_client(room, PYTHON.name) or not _ASKS_TO_RUN.search(prompt):
        return None
    given = _GIVEN_CODE.search(prompt.strip())
    return given.group(1).strip() if given else DEFAULT_CODE


async def run_python(room: ToolRoom, call_id: str, code: str) -> AsyncIterator[StreamEvent | str]:
    """The call's events and its ``tool_result``, then the sentence saying what happened."""
    async for item in run_client_call(room, call_id, PYTHON.name, {"code": code}):
        if not isinstance(item, CallOutcome):
            yield item
            continue
        yield draft(
            ToolResultEvent, tool_call_id=call_id, result=item.result, is_error=item.is_error
        )
        yield said(item.result, item.is_error)


def said(result: JsonValue, is_error: bool) -> str:
    """The answer's first line about the code's result."""
    found = result if isinstance(result, dict) else {}
    if found.get("noBrowser"):
        return "No browser ran the code in time, so I have no result."
    if is_error:
        why = str(found.get("error") or found.get("state") or "it failed")
        return f"The code did not finish: {why.strip().splitlines()[-1] if why.strip() else why}"
    printed = str(found.get("stdout") or "").strip()
    if not printed:
        return "The code ran and printed nothing."
    return f"The code printed: {printed.splitlines()[-1][:200]}"
