"""Queued test scenarios (SPEC §9): parsed steps, per chat or for any chat."""

from __future__ import annotations

import base64
import binascii
from collections import deque
from dataclasses import dataclass
from typing import Any, Literal

StepKind = Literal["status", "event", "raw", "sleep", "keepalive", "hold", "detach", "close"]
_SIMPLE_KEYS = ("event", "raw", "raw_b64", "sleep_ms", "keepalive", "hold", "detach", "close")


@dataclass(frozen=True, slots=True)
class Step:
    """One scenario step; ``value`` depends on ``kind`` (see ``parse_step``)."""

    kind: StepKind
    value: Any = None
    headers: dict[str, str] | None = None


@dataclass(frozen=True, slots=True)
class StatusAnswer:
    """A first step's status; with ``json`` the whole answer is that JSON body."""

    status: int
    has_json: bool = False
    json: Any = None


class StepError(ValueError):
    """A scenario that cannot be played."""


def parse_steps(raw: object) -> list[Step]:
    """Validate a scenario's ``steps``; ``status`` only as the first step."""
    if not isinstance(raw, list):
        raise StepError("'steps' must be a list")
    steps = [parse_step(item, index) for index, item in enumerate(raw)]
    if any(step.kind == "status" for step in steps[1:]):
        raise StepError("a 'status' step may only be the first step")
    return steps


def parse_step(item: object, index: int) -> Step:
    """One step from its JSON object."""
    if not isinstance(item, dict):
        raise StepError(f"step {index} is not an object")
    if "status" in item:
        return _status_step(item, index)
    keys = [key for key in _SIMPLE_KEYS if key in item]
    if len(keys) != 1:
        raise StepError(f"step {index} needs exactly one of {', '.join(_SIMPLE_KEYS)}")
    return _simple_step(keys[0], item[keys[0]], index)


def _status_step(item: dict[str, Any], index: int) -> Step:
    status, headers = item["status"], item.get("headers", {})
    if not isinstance(status, int) or not 100 <= status <= 599:
        raise StepError(f"step {index}: 'status' must be an HTTP status")
    if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
        raise StepError(f"step {index}: 'headers' must map names to strings")
    return Step("status", StatusAnswer(status, "json" in item, item.get("json")), headers)


def _simple_step(key: str, value: Any, index: int) -> Step:
    if key == "event" and isinstance(value, dict):
        return Step("event", value)
    if key == "raw" and isinstance(value, str):
        return Step("raw", value.encode("utf-8"))
    if key == "raw_b64" and isinstance(value, str):
        try:
            return Step("raw", base64.b64decode(value, validate=True))
        except binascii.Error as exc:
            raise StepError(f"step {index}: 'raw_b64' is not base64") from exc
    if key == "sleep_ms" and isinstance(value, int | float) and value >= 0:
        return Step("sleep", float(value) / 1000)
    if key == "keepalive" and value is True:
        return Step("keepalive")
    if key == "hold" and value is True:
        return Step("hold")
    if key == "detach" and value is True:
        return Step("detach")
    if key == "close" and value in ("clean", "reset"):
        return Step("close", value)
    raise StepError(f"step {index}: invalid value for {key!r}")


class ScenarioQueue:
    """Scenarios waiting for the next stream request of a chat (or of any chat)."""

    def __init__(self) -> None:
        self._queues: dict[str | None, deque[list[Step]]] = {}

    def push(self, chat_id: str | None, steps: list[Step]) -> int:
        """Queue a scenario; returns how many wait for that key."""
        queue = self._queues.setdefault(chat_id, deque())
        queue.append(steps)
        return len(queue)

    def take(self, chat_id: str) -> list[Step] | None:
        """The next scenario for this chat, else the next one for any chat."""
        for key in (chat_id, None):
            queue = self._queues.get(key)
            if queue:
                return queue.popleft()
        return None

    def clear(self) -> None:
        self._queues.clear()
