"""Anthropic Messages streaming (``anthropic`` SDK) → the Riacho contract (seed 003).

    message_start                       usage (input, with cached input)
    content_block_start  text           (its text, if any)
                         thinking       thinking_start
                         tool_use       tool_call_started
    content_block_delta  text_delta     text
                         thinking_delta thinking
                         input_json_delta   tool_call_arguments_delta
                         signature_delta    kept for the replay, not shown
    content_block_stop   tool_use       tool_call_completed (arguments parsed)
    message_delta        stop_reason, output usage; ``refusal`` → provider_refused
    message_stop         CallEnd (the only proof the answer is complete)
    error (event)        the SDK raises APIStatusError(200) → provider_error

# NOTE: the SDK builds an unknown event, block or delta as the first class of its union with the
# real ``type`` kept, so dispatch is on ``type`` strings, never on ``isinstance``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anthropic
import httpx2

from server.config.providers import ProviderSettings
from server.model.providers.base import (
    AssistantMessage,
    CallEnd,
    CallStop,
    Message,
    ModelCall,
    Opened,
    ProviderFailure,
    StreamItem,
    ToolOutput,
    Usage,
    UserMessage,
)
from server.model.providers.common import (
    PendingCall,
    SdkAdapter,
    http_failure,
    network_failure,
    parse_arguments,
    safe_id,
    text,
    thinking,
    thinking_start,
)
from server.model.providers.openai_common import refuse_non_stream

NAME = "Anthropic"
THINKING_BUDGET = {"low": 2048, "medium": 8192, "high": 16384}
_STOPS: dict[str, CallStop] = {  # NOTE: every stop reason known; ``refusal`` is refused
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "tool_use": "tool_use",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
}
JsonObject = dict[str, Any]


def make_adapter(settings: ProviderSettings) -> AnthropicAdapter:
    return AnthropicAdapter(settings)


class AnthropicAdapter(SdkAdapter):
    """One Anthropic endpoint (``--base-url`` without ``/v1``: the SDK adds it)."""

    def __init__(self, settings: ProviderSettings) -> None:
        self.key = settings.api_key()
        self.client = anthropic.AsyncAnthropic(
            base_url=settings.base_url,
            api_key=self.key or "no-key",
            max_retries=0,
            timeout=httpx2.Timeout(settings.idle_timeout_s, connect=settings.connect_timeout_s),
        )

    async def request(self, call: ModelCall) -> Opened:
        stream = await self.client.messages.create(**request_body(call), stream=True)
        await refuse_non_stream(NAME, stream)
        return Opened(aiter(stream), stream.close)

    def translation(self) -> _Translation:
        return _Translation()

    def failure(self, error: BaseException, started: bool) -> ProviderFailure | None:
        if isinstance(error, anthropic.APIStatusError):
            return _status_failure(error, started)
        if isinstance(error, json.JSONDecodeError):
            return ProviderFailure("provider_error", f"{NAME} sent malformed data: {error}")
        return network_failure(
            NAME,
            error,
            started=started,
            timeouts=(anthropic.APITimeoutError, httpx2.TimeoutException),
            connections=(anthropic.APIConnectionError, httpx2.TransportError),
        )

    async def aclose(self) -> None:
        await self.client.close()


def _status_failure(error: anthropic.APIStatusError, started: bool) -> ProviderFailure:
    message = f"{error.api_message or error.message} ({error.type or 'error'})"
    if error.status_code == 200:  # NOTE: an ``error`` event in the stream
        return ProviderFailure("provider_error", f"{NAME} reported an error: {message}")
    headers = error.response.headers if error.response is not None else None
    return http_failure(NAME, error.status_code, message, started=started, headers=headers)


# --- request ---------------------------------------------------------------------------------


def request_body(call: ModelCall) -> JsonObject:
    """The keyword arguments of ``messages.create`` for one call."""
    body: JsonObject = {
        "model": call.model,
        "max_tokens": call.max_output_tokens,
        "messages": _messages(call.messages, call.thinking),
    }
    if call.system:
        body["system"] = call.system
    if call.tools:
        body["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": dict(t.parameters)}
            for t in call.tools
        ]
    if call.thinking:
        budget = THINKING_BUDGET[call.effort or "medium"]
        body["thinking"] = {"type": "enabled", "budget_tokens": budget}
        body["max_tokens"] = budget + call.max_output_tokens
    return body


def _messages(messages: tuple[Message, ...], thinking: bool) -> list[JsonObject]:
    """Anthropic messages: tool results go in user turns; same-role neighbours are merged."""
    out: list[JsonObject] = []
    for message in messages:
        role, blocks = _blocks(message, thinking)
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"] += blocks
        else:
            out.append({"role": role, "content": blocks})
    return out


def _blocks(message: Message, thinking: bool) -> tuple[str, list[JsonObject]]:
    if isinstance(message, UserMessage):
        blocks: list[JsonObject] = [{"type": "text", "text": message.text}] if message.text else []
        blocks += [
            {
                "type": "image",
                "source": {"type": "base64", "media_type": i.mime_type, "data": i.data_b64},
            }
            for i in message.images
        ]
        return "user", blocks
    if isinstance(message, AssistantMessage):
        return "assistant", _assistant_blocks(message, thinking)
    return "user", [_tool_result(message)]


THINKING_BLOCKS = frozenset({"thinking", "redacted_thinking"})


def _assistant_blocks(message: AssistantMessage, thinking: bool) -> list[JsonObject]:
    if message.native is not None:
        # NOTE: as received, signed thinking first; a call without thinking sends none of it
        return [b for b in message.native if thinking or b.get("type") not in THINKING_BLOCKS]
    blocks: list[JsonObject] = [{"type": "text", "text": message.text}] if message.text else []
    blocks += [
        {"type": "tool_use", "id": safe_id(c.wire_id), "name": c.name, "input": dict(c.arguments)}
        for c in message.tool_calls
    ]
    return blocks


def _tool_result(output: ToolOutput) -> JsonObject:
    return {
        "type": "tool_result",
        "tool_use_id": safe_id(output.call.wire_id),
        "content": output.output,
        "is_error": output.is_error,
    }


# --- stream ----------------------------------------------------------------------------------


class _Translation:
    """The state of one streamed message: its blocks (for the replay), calls and usage."""

    def __init__(self) -> None:
        self.blocks: dict[int, JsonObject] = {}
        self.calls: dict[int, PendingCall] = {}
        self.input_tokens = 0
        self.output_tokens = 0
        self.stop: CallStop = "stop"

    async def run(self, events: AsyncIterator[Any]) -> AsyncIterator[StreamItem]:
        async for event in events:
            kind = event.type
            if kind == "message_stop":
                yield CallEnd(
                    self.stop, Usage(self.input_tokens, self.output_tokens), self._native()
                )
                return
            for item in self._on(kind, event):
                yield item

    def _on(self, kind: str, event: Any) -> list[StreamItem]:
        if kind == "message_start":
            self._usage(event.message.usage)
        elif kind == "content_block_start":
            return self._start(event.index, event.content_block)
        elif kind == "content_block_delta":
            return self._delta(event.index, event.delta)
        elif kind == "content_block_stop":
            return self._stop(event.index)
        elif kind == "message_delta":
            self._message_delta(event)
        return []

    def _usage(self, usage: Any) -> None:
        if usage is None:
            return
        cached = sum(
            getattr(usage, name, None) or 0
            for name in ("cache_creation_input_tokens", "cache_read_input_tokens")
        )
        if getattr(usage, "input_tokens", None) is not None:
            self.input_tokens = usage.input_tokens + cached
        self.output_tokens = getattr(usage, "output_tokens", None) or self.output_tokens

    def _start(self, index: int, block: Any) -> list[StreamItem]:
        if block.type == "text":
            self.blocks[index] = {"type": "text", "text": block.text or ""}
            return [text(block.text)] if block.text else []
        if block.type == "thinking":
            self.blocks[index] = {
                "type": "thinking",
                "thinking": block.thinking or "",
                "signature": "",
            }
            return [thinking_start(), *([thinking(block.thinking)] if block.thinking else [])]
        if block.type == "redacted_thinking":
            self.blocks[index] = {"type": "redacted_thinking", "data": block.data}
        elif block.type == "tool_use":
            self.blocks[index] = {
                "type": "tool_use",
                "id": block.id,
                "name": block.name,
                "input": {},
            }
            self.calls[index] = PendingCall(block.id, block.name)
            return [self.calls[index].started()]
        return []

    def _delta(self, index: int, delta: Any) -> list[StreamItem]:
        block = self.blocks.get(index)
        if block is None:
            return []
        if delta.type == "text_delta" and delta.text:
            block["text"] += delta.text
            return [text(delta.text)]
        if delta.type == "thinking_delta" and delta.thinking:
            block["thinking"] += delta.thinking
            return [thinking(delta.thinking)]
        if delta.type == "signature_delta":
            block["signature"] += delta.signature
        elif delta.type == "input_json_delta" and delta.partial_json and index in self.calls:
            return [self.calls[index].delta(delta.partial_json)]
        return []

    def _stop(self, index: int) -> list[StreamItem]:
        call = self.calls.pop(index, None)
        if call is None:
            return []
        self.blocks[index]["input"] = parse_arguments(call.arguments_text)
        return [call.completed()]

    def _message_delta(self, event: Any) -> None:
        self._usage(event.usage)
        reason = event.delta.stop_reason
        if reason == "refusal":
            details = getattr(event.delta, "stop_details", None)
            category = getattr(details, "category", None)
            explanation = getattr(details, "explanation", None)
            why = " — ".join(str(x) for x in (category, explanation) if x)
            raise ProviderFailure(
                "provider_refused",
                f"{NAME} declined to answer (refusal{': ' + why if why else ''})",
            )
        if reason is not None and reason not in _STOPS:
            raise ProviderFailure(
                "provider_error",
                f"{NAME} ended the answer with stop reason {reason!r}: it may be incomplete",
            )
        if reason is not None:
            self.stop = _STOPS[reason]

    def _native(self) -> list[JsonObject]:
        """The assistant content to send back in the tool loop (thinking signatures kept)."""
        blocks = [self.blocks[index] for index in sorted(self.blocks)]
        return [b for b in blocks if not (b["type"] == "text" and not b["text"])]
