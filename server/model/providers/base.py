"""What every provider adapter speaks: the conversation in, contract events and one end out.

An adapter turns a :class:`ModelCall` into the provider's native request (through the
provider's official SDK, which owns HTTP and SSE framing) and translates the native stream
into *draft* contract events (``text``, ``thinking_start``, ``thinking``,
``tool_call_started``, ``tool_call_arguments_delta``, ``tool_call_completed``) followed by
exactly one :class:`CallEnd` — the provider's own completion signal. Everything else is a
:class:`ProviderFailure`:

    ProviderFailure(code)
        provider_unavailable     before the stream: unreachable, 401/403/429/5xx (→ HTTP 503)
        provider_error           the provider said it failed (an error event, an HTTP error)
        provider_refused         safety / refusal / content filter / malformed function call
        provider_disconnected    the stream ended or broke before the completion signal
        provider_timeout         no response, or no data for too long

# NOTE: ``open`` returns once the provider accepted the request (its response started), so a
# refused request is an HTTP error before Riacho's own stream starts; the rest of the stream is
# read through :class:`ModelStream`, which applies the idle timeout and closes the upstream
# connection whenever it stops being read (end, failure, or the run's task being cancelled).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from app.wire.api import ReasoningEffort
from app.wire.codes import FailureCode
from app.wire.protocol import StreamEvent

CallStop = Literal["stop", "length", "tool_use"]


class ProviderFailure(Exception):
    """A model call that cannot give (the rest of) its answer; ``code`` says why."""

    def __init__(
        self, code: FailureCode, message: str, *, retry_after: float | None = None
    ) -> None:
        message = message[:1].upper() + message[1:]
        super().__init__(f"{code}: {message}")
        self.code: FailureCode = code
        self.message = message
        self.retry_after = retry_after


# --- The conversation ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ImageInput:
    """An image the user attached (base64 data)."""

    mime_type: str
    data_b64: str


@dataclass(frozen=True, slots=True)
class UserMessage:
    """A user turn: text (attached text files already inlined) and images."""

    text: str
    images: tuple[ImageInput, ...] = ()


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call of an assistant step; ``provider_id`` is the id its provider gave it."""

    id: str
    name: str
    arguments: Mapping[str, Any]
    arguments_text: str
    provider_id: str | None = None

    @property
    def wire_id(self) -> str:
        """The id to send back to the provider (its own, when it made this call)."""
        return self.provider_id or self.id


@dataclass(frozen=True, slots=True)
class AssistantMessage:
    """An assistant step: text and tool calls; ``native`` replays it to the same provider."""

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    # NOTE: JSON of the adapter that produced this step (Anthropic's signed thinking blocks,
    # Gemini's parts with thought signatures, Responses reasoning items, a Chat Completions
    # server's reasoning): given only to the same model, in the tool loop and from storage.
    native: Any = None


@dataclass(frozen=True, slots=True)
class StepRecord:
    """One model call of an answer as stored (``messages.steps``): enough to send it back.

    ``calls`` pairs each tool call's id in the run with the id its provider gave it.
    """

    source: str  # the Riacho model id that made it
    text: str
    calls: tuple[tuple[str, str], ...] = ()
    native: Any = None

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "text": self.text,
            "calls": [{"id": run_id, "providerId": wire} for run_id, wire in self.calls],
            "native": self.native,
        }

    @classmethod
    def from_json(cls, data: Any) -> StepRecord | None:
        """The record of stored JSON; ``None`` when it is not one (never raises)."""
        if not isinstance(data, dict) or not isinstance(data.get("source"), str):
            return None
        calls = data.get("calls")
        pairs = tuple(
            (str(c["id"]), str(c.get("providerId") or c["id"]))
            for c in (calls if isinstance(calls, list) else [])
            if isinstance(c, dict) and isinstance(c.get("id"), str)
        )
        text = data.get("text")
        return cls(data["source"], text if isinstance(text, str) else "", pairs, data.get("native"))


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """The result of one tool call, as JSON text for the model."""

    call: ToolCall
    output: str
    is_error: bool = False


Message = UserMessage | AssistantMessage | ToolOutput


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool offered to the model: name, description, JSON schema of its arguments."""

    name: str
    description: str
    parameters: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ModelCall:
    """One request to a model."""

    model: str
    messages: tuple[Message, ...]
    system: str | None = None
    tools: tuple[ToolSpec, ...] = ()
    thinking: bool = False
    effort: ReasoningEffort | None = None
    max_output_tokens: int = 8192


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens of one model call as the provider reported them."""

    input_tokens: int
    output_tokens: int
    thinking_tokens: int = 0  # NOTE: only where a provider reports them apart from output

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens + self.thinking_tokens


@dataclass(frozen=True, slots=True)
class CallEnd:
    """The provider's completion signal: why it stopped, usage, and the step to replay."""

    stop: CallStop
    usage: Usage | None = None
    native: Any = None


StreamItem = StreamEvent | CallEnd


# --- Adapters ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Timeouts:
    """Seconds: TCP connect, until the response starts, and between two stream reads."""

    connect_s: float = 10.0
    first_byte_s: float = 60.0
    idle_s: float = 120.0


@dataclass(slots=True)
class Opened:
    """An accepted request: the SDK's native event iterator and its closer."""

    events: AsyncIterator[Any]
    close: Callable[[], Awaitable[None]]


class Adapter(Protocol):
    """One provider kind: request through its SDK, translate, classify failures."""

    async def request(self, call: ModelCall) -> Opened:
        """Send the request; return once the response started (raises the SDK's errors)."""
        ...

    def translate(self, events: AsyncIterator[Any]) -> AsyncIterator[StreamItem]:
        """Native events → draft contract events, then one ``CallEnd`` (or a failure)."""
        ...

    def classify(self, error: BaseException, *, started: bool) -> ProviderFailure | None:
        """The failure an SDK or network exception means (``None``: not the provider's)."""
        ...

    async def aclose(self) -> None:
        """Release the SDK client (connection pools)."""
        ...


@dataclass(slots=True)
class ModelStream:
    """An opened model call: iterate its items once; closing is idempotent."""

    adapter: Adapter
    opened: Opened
    idle_s: float
    _closed: bool = field(default=False)

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            await self.opened.close()

    async def items(self) -> AsyncIterator[StreamItem]:
        """Draft events, then the ``CallEnd``; failures raise ``ProviderFailure``."""
        ended = False
        try:
            async for item in self.adapter.translate(self._native()):
                if isinstance(item, CallEnd):
                    ended = True
                yield item
                if ended:
                    return
        except ProviderFailure:
            raise
        except Exception as exc:
            failure = self.adapter.classify(exc, started=True)
            if failure is None:
                raise
            raise failure from exc
        finally:
            await self.aclose()
        if not ended:
            raise ProviderFailure(
                "provider_disconnected",
                "the provider's stream ended before the answer was complete",
            )

    async def _native(self) -> AsyncIterator[Any]:
        events = self.opened.events
        while True:
            try:
                async with asyncio.timeout(self.idle_s):
                    event = await anext(events)
            except StopAsyncIteration:
                return
            except TimeoutError as exc:
                raise ProviderFailure(
                    "provider_timeout", f"the provider sent nothing for {self.idle_s:g} s"
                ) from exc
            yield event


async def open_stream(adapter: Adapter, call: ModelCall, timeouts: Timeouts) -> ModelStream:
    """Send ``call``; a refusal before the stream raises ``ProviderFailure``."""
    try:
        async with asyncio.timeout(timeouts.first_byte_s):
            opened = await adapter.request(call)
    except ProviderFailure:
        raise
    except TimeoutError as exc:
        raise ProviderFailure(
            "provider_unavailable",
            f"the provider did not answer within {timeouts.first_byte_s:g} s",
        ) from exc
    except Exception as exc:
        failure = adapter.classify(exc, started=False)
        if failure is None:
            raise
        raise failure from exc
    return ModelStream(adapter, opened, timeouts.idle_s)
