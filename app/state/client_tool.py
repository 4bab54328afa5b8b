"""The model's code, run by the page (SPEC §13), as pure data: which calls wait for this page,
which of those it runs must stop, the result it posts, and the chat's code settings.

    the run sends ``tool_client_requested``  →  the part's ``runs_in`` is ``"client"``
    the call waits (no result yet) while its run is live  →  :func:`waiting_calls`
        the page runs it after the user's Run (or at once with "Run code automatically")
        and posts :func:`result_of` the finished code run, once
    the run ends (Stop, a failure) while its code runs  →  :func:`ended_calls`: stop the code

A page runs a call at most once (the browser shell keeps which it started); across tabs and
reloads the server keeps the first result posted.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from pydantic import JsonValue

from app.state.code_run import DEFAULT_TIME_LIMIT_MS, CodeRunState, words
from app.state.state import ChatState, State
from app.wire.parts import ToolCallPart

CLIENT_TOOLS: Final = ("python",)
"""The tools the page runs itself, sent as ``clientTools`` with every prompt."""
MAX_RESULT_CHARS: Final = 16_000
"""Output past this is cut (the model is told) before it is posted."""
TIME_LIMITS_S: Final = (10, 30, 60, 120, 300)
"""The time limits a chat's code runs may have (the default: 30 s)."""
DECLINED: Final[dict[str, JsonValue]] = {
    "declined": True,
    "error": "The user chose not to run this code. Go on without its result.",
}
_LIVE: Final = frozenset({"connecting", "receiving"})


@dataclass(frozen=True, slots=True)
class ClientCall:
    """A call the page is asked to run."""

    chat_id: str
    run_id: str
    tool_call_id: str
    code: str

    @property
    def key(self) -> tuple[str, str]:
        return (self.run_id, self.tool_call_id)


def waiting_calls(state: State) -> Iterator[ClientCall]:
    """Every call that waits for a page: asked of the page, no result yet, its run live."""
    for chat in state.chats.values():
        yield from _waiting_in(chat)


def _waiting_in(chat: ChatState) -> Iterator[ClientCall]:
    for run_id in chat.live_runs:
        run = chat.runs.get(run_id)
        if run is None or run.status not in _LIVE:
            continue
        for part in run.parts:
            if _waits(part):
                assert isinstance(part, ToolCallPart)
                yield ClientCall(chat.chat_id, run_id, part.tool_call_id, code_of(part))


def _waits(part: object) -> bool:
    return (
        isinstance(part, ToolCallPart) and part.runs_in == "client" and part.status == "completed"
    )


def waiting_call(state: State, run_id: str, tool_call_id: str) -> ClientCall | None:
    """The waiting call ``tool_call_id`` of ``run_id``, if it still waits."""
    return next((c for c in waiting_calls(state) if c.key == (run_id, tool_call_id)), None)


def ended_calls(started: Iterable[ClientCall], state: State) -> list[ClientCall]:
    """The started calls that no longer wait (their run stopped or ended): their code stops."""
    still = {call.key for call in waiting_calls(state)}
    return [call for call in started if call.key not in still]


def code_of(part: ToolCallPart) -> str:
    code = part.arguments.get("code")
    return code if isinstance(code, str) else ""


def result_of(run: CodeRunState) -> tuple[JsonValue, bool]:
    """What the page posts for a finished code run: its output (capped), and whether it is an
    error (anything but ``done``)."""
    stdout = "".join(c.text for c in run.output if c.stream == "stdout")
    stderr = "".join(c.text for c in run.output if c.stream == "stderr")
    result: dict[str, JsonValue] = {
        "state": run.status,
        "stdout": _capped(stdout),
        "stderr": _capped(stderr),
    }
    if run.traceback:
        result["traceback"] = _capped(run.traceback)
        result["error"] = run.traceback.strip().splitlines()[-1]
    elif run.status in ("stopped", "killed"):
        result["error"] = words(run)
    if run.files:
        result["files"] = [f"/mnt/out/{file.name}" for file in run.files]
    if len(stdout) > MAX_RESULT_CHARS or len(stderr) > MAX_RESULT_CHARS:
        result["truncated"] = f"output past {MAX_RESULT_CHARS} characters was cut"
    return result, run.status != "done"


def _capped(text: str) -> str:
    return text if len(text) <= MAX_RESULT_CHARS else text[:MAX_RESULT_CHARS]


# --- the chat's code settings (kept on the device, per user) ---------------------------------


@dataclass(frozen=True, slots=True)
class CodeSettings:
    """A chat's code settings: whether the model's code runs without asking, and how long any
    run may take."""

    auto_run: bool = False
    time_limit_ms: int = DEFAULT_TIME_LIMIT_MS


def settings_of(kept: Mapping[str, Any], chat_id: str) -> CodeSettings:
    """The chat's settings from what the device keeps (anything malformed: the defaults)."""
    entry = kept.get(chat_id)
    if not isinstance(entry, dict):
        return CodeSettings()
    auto = entry.get("autoRun") is True
    seconds = entry.get("timeLimitS")
    if isinstance(seconds, int) and not isinstance(seconds, bool) and seconds in TIME_LIMITS_S:
        return CodeSettings(auto, seconds * 1000)
    return CodeSettings(auto)


def with_settings(kept: Mapping[str, Any], chat_id: str, settings: CodeSettings) -> dict[str, Any]:
    """What the device keeps after the chat's settings changed (defaults are not kept)."""
    out = {key: value for key, value in kept.items() if key != chat_id}
    if settings != CodeSettings():
        out[chat_id] = {"autoRun": settings.auto_run, "timeLimitS": settings.time_limit_ms // 1000}
    return out


def parse_kept(text: str | None) -> dict[str, Any]:
    """The device's JSON of every chat's settings (``{}`` when absent or malformed)."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
