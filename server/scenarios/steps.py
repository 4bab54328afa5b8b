"""Test scenarios (SPEC §9): their steps as one pydantic tagged union, and the queue.

A step is a JSON object with exactly one of ``event``, ``raw``, ``raw_b64``, ``sleep_ms``,
``keepalive``, ``hold``, ``detach``, ``close``, or (first step only) ``status`` with its
``json`` and ``headers``. The key present is the tag; unknown keys are refused.
"""

from __future__ import annotations

import base64
import binascii
from collections import deque
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    TypeAdapter,
    ValidationError,
    model_validator,
)

_STEP = ConfigDict(extra="forbid", frozen=True)
CloseMode = Literal["clean", "reset"]
TAGS = ("status", "event", "raw", "raw_b64", "sleep_ms", "keepalive", "hold", "detach", "close")


class StatusStep(BaseModel):
    """The answer's status (and headers); with ``json`` the whole answer is that body."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    status: int = Field(ge=100, le=599)
    json_body: Any = Field(default=None, alias="json")
    headers: dict[str, str] = Field(default_factory=dict)

    @property
    def has_json(self) -> bool:
        return "json_body" in self.model_fields_set


class EventStep(BaseModel):
    """One event: ``runId``/``seq``/``done`` filled in unless given; also logged."""

    model_config = _STEP
    event: dict[str, Any]


class RawStep(BaseModel):
    """Bytes written as given (one write)."""

    model_config = _STEP
    raw: str

    @property
    def data(self) -> bytes:
        return self.raw.encode("utf-8")


def _strict_base64(value: object) -> bytes:
    if not isinstance(value, str):
        raise ValueError("must be a base64 string")
    try:
        return base64.b64decode(value, validate=True)
    except binascii.Error as exc:
        raise ValueError(f"is not base64: {exc}") from exc


class RawB64Step(BaseModel):
    """Bytes written as given, base64 in the scenario (one write)."""

    model_config = _STEP
    raw_b64: Annotated[bytes, BeforeValidator(_strict_base64)]

    @property
    def data(self) -> bytes:
        return self.raw_b64


class SleepStep(BaseModel):
    model_config = _STEP
    sleep_ms: float = Field(ge=0)


class KeepaliveStep(BaseModel):
    model_config = _STEP
    keepalive: Literal[True]


class HoldStep(BaseModel):
    """Wait until the client disconnects or the run is cancelled."""

    model_config = _STEP
    hold: Literal[True]


class DetachStep(BaseModel):
    """Drop the connection; the remaining event steps still go to the run's log."""

    model_config = _STEP
    detach: Literal[True]


class CloseStep(BaseModel):
    """End the response: normally, or by aborting the TCP connection."""

    model_config = _STEP
    close: CloseMode


def _tag(step: object) -> str | None:
    """The step's kind: the one known key it has (``None``: no or several)."""
    if not isinstance(step, dict):
        return None
    present = [key for key in TAGS if key in step]
    return present[0] if len(present) == 1 else None


Step = Annotated[
    Annotated[StatusStep, Tag("status")]
    | Annotated[EventStep, Tag("event")]
    | Annotated[RawStep, Tag("raw")]
    | Annotated[RawB64Step, Tag("raw_b64")]
    | Annotated[SleepStep, Tag("sleep_ms")]
    | Annotated[KeepaliveStep, Tag("keepalive")]
    | Annotated[HoldStep, Tag("hold")]
    | Annotated[DetachStep, Tag("detach")]
    | Annotated[CloseStep, Tag("close")],
    Discriminator(
        _tag,
        custom_error_type="step_kind",
        custom_error_message=f"a step needs exactly one of {', '.join(TAGS)}",
    ),
]


class Scenario(BaseModel):
    """``POST /__test__/scenarios``: steps for the next stream of a chat (or of any chat)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    chat_id: str | None = Field(default=None, alias="chatId")
    steps: list[Step]

    @model_validator(mode="after")
    def _status_first(self) -> Scenario:
        if any(isinstance(step, StatusStep) for step in self.steps[1:]):
            raise ValueError("a 'status' step may only be the first step")
        return self


SCENARIO = TypeAdapter(Scenario)


class StepError(ValueError):
    """A scenario that cannot be played (the message says which step and why)."""


def parse_scenario(body: object) -> Scenario:
    """Validate a queued scenario; ``StepError`` explains what is wrong."""
    try:
        return SCENARIO.validate_python(body)
    except ValidationError as exc:
        detail = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or 'body'}: {error['msg']}"
            for error in exc.errors(include_url=False)
        )
        raise StepError(detail) from exc


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
