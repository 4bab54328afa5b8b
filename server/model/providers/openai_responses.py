"""OpenAI Responses API streaming (``openai`` SDK) → the Riacho contract (seed 003).

    response.output_item.added  function_call     tool_call_started (id ``<call_id>|<item_id>``)
    response.reasoning_summary_part.added          thinking_start (one block per summary part)
    response.reasoning_summary_text.delta          thinking
    response.reasoning_text.delta                  thinking (raw reasoning: gpt-oss on vLLM,
                                                   llama.cpp, Ollama), a block per item
    response.output_text.delta                     text
    response.refusal.delta                         text (the words stay visible), and the
                                                   answer ends provider_refused
    response.function_call_arguments.delta         tool_call_arguments_delta
    response.function_call_arguments.done          (the whole text, when no delta came) and
    / response.output_item.done                    tool_call_completed
    response.output_item.done                      kept: the items are sent back as they came
    response.completed                             CallEnd(stop, or tool_use after calls)
    response.incomplete  max_output_tokens         CallEnd(length)
                         content_filter            provider_refused
                         any other reason          provider_error (never a complete answer)
    response.failed / error                        provider_error

# NOTE: iteration only ends when the HTTP body ends, not at ``response.completed``: the
# translation returns at the terminal event and the stream is closed by ``ModelStream``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from server.config.providers import ProviderSettings
from server.model.providers.base import (
    AssistantMessage,
    CallEnd,
    Message,
    ModelCall,
    Opened,
    ProviderFailure,
    StreamItem,
    ToolCall,
    ToolOutput,
    Usage,
    UserMessage,
)
from server.model.providers.common import PendingCall, SdkAdapter, text, thinking, thinking_start
from server.model.providers.openai_common import classify, make_client, refuse_non_stream

NAME = "OpenAI Responses"
JsonObject = dict[str, Any]


def make_adapter(settings: ProviderSettings) -> ResponsesAdapter:
    return ResponsesAdapter(settings)


class ResponsesAdapter(SdkAdapter):
    """One Responses endpoint (``--base-url`` with ``/v1``)."""

    def __init__(self, settings: ProviderSettings) -> None:
        self.key = settings.api_key()
        self.client = make_client(settings)

    async def request(self, call: ModelCall) -> Opened:
        stream = await self.client.responses.create(**request_body(call), stream=True)
        await refuse_non_stream(NAME, stream)
        return Opened(aiter(stream), stream.close)

    def translation(self) -> _Translation:
        return _Translation()

    def failure(self, error: BaseException, started: bool) -> ProviderFailure | None:
        return classify(NAME, error, started)

    async def aclose(self) -> None:
        await self.client.close()


# --- request ---------------------------------------------------------------------------------


def request_body(call: ModelCall) -> JsonObject:
    """The keyword arguments of ``responses.create`` for one call."""
    body: JsonObject = {
        "model": call.model,
        "input": [item for message in call.messages for item in _items(message)],
        "max_output_tokens": call.max_output_tokens,
    }
    if call.system:
        body["instructions"] = call.system
    if call.tools:
        body["tools"] = [
            {
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": dict(t.parameters),
                "strict": False,
            }
            for t in call.tools
        ]
    if call.thinking:
        body["reasoning"] = {"effort": call.effort or "medium", "summary": "auto"}
        # NOTE: so reasoning items can be sent back whole, whether or not responses are stored
        body["include"] = ["reasoning.encrypted_content"]
    return body


def _items(message: Message) -> list[JsonObject]:
    if isinstance(message, UserMessage):
        content: list[JsonObject] = [{"type": "input_text", "text": message.text}]
        content += [
            {
                "type": "input_image",
                "image_url": f"data:{i.mime_type};base64,{i.data_b64}",
                "detail": "auto",
            }
            for i in message.images
        ]
        return [{"role": "user", "content": content}]
    if isinstance(message, AssistantMessage):
        if isinstance(message.native, list):
            # NOTE: the output items as received: reasoning items (id, summary, encrypted
            # content) must come back before their function calls, or the model loses them
            return [dict(item) for item in message.native]
        items: list[JsonObject] = (
            [{"role": "assistant", "content": message.text}] if message.text else []
        )
        return items + [_function_call(call) for call in message.tool_calls]
    return [_function_output(message)]


def call_id_of(call: ToolCall) -> str:
    """The Responses ``call_id`` of a call (ids made here are ``<call_id>|<item_id>``)."""
    return call.wire_id.split("|", 1)[0]


def _function_call(call: ToolCall) -> JsonObject:
    arguments = call.arguments_text or json.dumps(dict(call.arguments))
    return {
        "type": "function_call",
        "call_id": call_id_of(call),
        "name": call.name,
        "arguments": arguments,
    }


def _function_output(output: ToolOutput) -> JsonObject:
    return {
        "type": "function_call_output",
        "call_id": call_id_of(output.call),
        "output": output.output,
    }


# --- stream ----------------------------------------------------------------------------------


class _Translation:
    """The state of one streamed response: its function calls by item id."""

    def __init__(self) -> None:
        self.calls: dict[str, PendingCall] = {}
        self.completed = 0
        self.reasoning_item: str | None = None  # the item whose raw reasoning is streaming
        self.refusal: list[str] = []
        self.output: list[JsonObject] = []  # every finished output item, to send back

    async def run(self, events: AsyncIterator[Any]) -> AsyncIterator[StreamItem]:
        async for event in events:
            kind = event.type
            if kind in ("response.completed", "response.incomplete"):
                yield self._end(kind, event.response)
                return
            if kind in ("response.failed", "error"):
                raise _failure(kind, event)
            for item in self._on(kind, event):
                yield item

    def _on(self, kind: str, event: Any) -> list[StreamItem]:
        if kind == "response.output_item.added" and event.item.type == "function_call":
            call = PendingCall(f"{event.item.call_id}|{event.item.id}", event.item.name)
            self.calls[event.item.id] = call
            return [call.started()]
        if kind == "response.reasoning_summary_part.added":
            return [thinking_start()]
        if kind == "response.reasoning_summary_text.delta" and event.delta:
            return [thinking(event.delta)]
        if kind == "response.reasoning_text.delta" and event.delta:
            return self._reasoning(event.item_id, event.delta)
        if kind == "response.refusal.delta" and event.delta:
            self.refusal.append(event.delta)
            return [text(event.delta)]
        if kind == "response.output_text.delta" and event.delta:
            return [text(event.delta)]
        if kind == "response.function_call_arguments.delta" and event.delta:
            pending = self.calls.get(event.item_id)
            return [pending.delta(event.delta)] if pending else []
        if kind == "response.function_call_arguments.done":
            return self._complete(event.item_id, event.arguments)
        if kind == "response.output_item.done":
            self.output.append(event.item.model_dump(mode="json", exclude_none=True))
            if event.item.type == "function_call":
                return self._complete(event.item.id, event.item.arguments)
        return []

    def _reasoning(self, item_id: str, delta: str) -> list[StreamItem]:
        """A raw reasoning delta; a new reasoning item opens a thinking block of its own."""
        opened = [] if item_id == self.reasoning_item else [thinking_start()]
        self.reasoning_item = item_id
        return [*opened, thinking(delta)]

    def _complete(self, item_id: str, arguments: str | None) -> list[StreamItem]:
        call = self.calls.pop(item_id, None)
        if call is None:
            return []
        items: list[StreamItem] = []
        if not call.fragments and arguments:
            items.append(call.delta(arguments))  # NOTE: a provider that sends only ``.done``.
        self.completed += 1
        return [*items, call.completed()]

    def _end(self, kind: str, response: Any) -> CallEnd:
        usage = response.usage
        tokens = Usage(usage.input_tokens, usage.output_tokens) if usage is not None else None
        if self.refusal:
            why = "".join(self.refusal).strip()
            raise ProviderFailure("provider_refused", f"{NAME} declined to answer: {why}")
        if kind == "response.incomplete":
            reason = getattr(response.incomplete_details, "reason", None)
            if reason == "content_filter":
                raise ProviderFailure(
                    "provider_refused", f"{NAME} stopped the answer (content_filter)"
                )
            if reason != "max_output_tokens":
                raise ProviderFailure(
                    "provider_error", f"{NAME} left the answer incomplete ({reason or 'no reason'})"
                )
            return CallEnd("length", tokens, self.output)
        return CallEnd("tool_use" if self.completed else "stop", tokens, self.output)


def _failure(kind: str, event: Any) -> ProviderFailure:
    error = event.response.error if kind == "response.failed" else event
    message = getattr(error, "message", None) or "the response failed"
    code = getattr(error, "code", None)
    return ProviderFailure("provider_error", f"{NAME}: {message}" + (f" ({code})" if code else ""))
