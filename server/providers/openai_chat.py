"""OpenAI-compatible Chat Completions streaming (``openai`` SDK) → the Riacho contract.

The dialect of local model servers (Ollama, llama.cpp, vLLM, LM Studio) and many hosted ones:

    delta.reasoning_content / delta.reasoning   thinking_start (once per run of reasoning), thinking
    delta.content                               text
    delta.tool_calls[i] (by ``index``)          tool_call_started (first fragment: id, name),
                                                tool_call_arguments_delta (JSON text fragments)
    finish_reason                               every pending call completed; the completion
        stop / unknown → stop, length → length, tool_calls → tool_use, content_filter → refused
    the usage chunk (``choices == []``)         usage (asked for with ``include_usage``)

# NOTE: the usage chunk comes *after* the finish_reason chunk, so the call ends when the stream
# does; a stream that breaks after finish_reason is still complete (only its usage is lost).
"""

from __future__ import annotations

import json
from typing import Any

from server.providers.base import (
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
from server.providers.common import (
    PendingCall,
    ReadToEnd,
    SdkAdapter,
    text,
    thinking,
    thinking_start,
)
from server.providers.openai_common import classify, make_client
from server.providers.settings import ProviderSettings

NAME = "the OpenAI-compatible server"
_STOPS: dict[str, CallStop] = {"stop": "stop", "length": "length", "tool_calls": "tool_use"}
REASONING_FIELDS = ("reasoning_content", "reasoning")
JsonObject = dict[str, Any]


def make_adapter(settings: ProviderSettings) -> ChatAdapter:
    return ChatAdapter(settings)


class ChatAdapter(SdkAdapter):
    """One OpenAI-compatible endpoint (``--base-url`` with ``/v1``)."""

    def __init__(self, settings: ProviderSettings) -> None:
        self.key = settings.api_key()
        self.client = make_client(settings)
        # NOTE: OpenAI itself wants max_completion_tokens; local servers know max_tokens.
        self.max_tokens_field = (
            "max_completion_tokens" if settings.base_url is None else "max_tokens"
        )

    async def request(self, call: ModelCall) -> Opened:
        body = request_body(call, self.max_tokens_field)
        stream = await self.client.chat.completions.create(**body, stream=True)
        return Opened(aiter(stream), stream.close)

    def translation(self) -> _Translation:
        return _Translation()

    def failure(self, error: BaseException, started: bool) -> ProviderFailure | None:
        return classify(NAME, error, started)

    async def aclose(self) -> None:
        await self.client.close()


# --- request ---------------------------------------------------------------------------------


def request_body(call: ModelCall, max_tokens_field: str = "max_tokens") -> JsonObject:
    """The keyword arguments of ``chat.completions.create`` for one call."""
    messages: list[JsonObject] = [{"role": "system", "content": call.system}] if call.system else []
    messages += [_message(message) for message in call.messages]
    body: JsonObject = {
        "model": call.model,
        "messages": messages,
        "stream_options": {"include_usage": True},
        max_tokens_field: call.max_output_tokens,
    }
    if call.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": dict(t.parameters),
                },
            }
            for t in call.tools
        ]
    if call.thinking:
        body["reasoning_effort"] = call.effort or "medium"
    return body


def _message(message: Message) -> JsonObject:
    if isinstance(message, UserMessage):
        if not message.images:
            return {"role": "user", "content": message.text}
        content: list[JsonObject] = [{"type": "text", "text": message.text}]
        content += [
            {"type": "image_url", "image_url": {"url": f"data:{i.mime_type};base64,{i.data_b64}"}}
            for i in message.images
        ]
        return {"role": "user", "content": content}
    if isinstance(message, AssistantMessage):
        return _assistant(message)
    return _tool(message)


def _assistant(message: AssistantMessage) -> JsonObject:
    out: JsonObject = {"role": "assistant", "content": message.text or None}
    if message.tool_calls:
        out["tool_calls"] = [
            {
                "id": call.wire_id,
                "type": "function",
                "function": {
                    "name": call.name,
                    "arguments": call.arguments_text or json.dumps(dict(call.arguments)),
                },
            }
            for call in message.tool_calls
        ]
    return out


def _tool(output: ToolOutput) -> JsonObject:
    return {"role": "tool", "tool_call_id": output.call.wire_id, "content": output.output}


# --- stream ----------------------------------------------------------------------------------


class _Translation(ReadToEnd):
    """The state of one streamed completion: pending calls by index, reasoning, finish, usage."""

    def __init__(self) -> None:
        self.calls: dict[int, PendingCall] = {}
        self.reasoning = False
        self.completed = 0
        self.usage: Usage | None = None

    def on(self, chunk: Any) -> list[StreamItem]:
        if getattr(chunk, "usage", None) is not None:
            usage = chunk.usage
            self.usage = Usage(usage.prompt_tokens or 0, usage.completion_tokens or 0)
        items: list[StreamItem] = []
        for choice in chunk.choices or []:
            if choice.index not in (0, None):
                continue  # NOTE: only the first choice is asked for (n = 1).
            if choice.delta is not None:
                items += self._delta(choice.delta)
            if choice.finish_reason is not None and self.finish is None:
                items += self._finish(choice.finish_reason)
        return items

    def _delta(self, delta: Any) -> list[StreamItem]:
        items: list[StreamItem] = []
        reasoning = next((r for f in REASONING_FIELDS if (r := getattr(delta, f, None))), None)
        if isinstance(reasoning, str) and reasoning:
            if not self.reasoning:
                items.append(thinking_start())
                self.reasoning = True
            items.append(thinking(reasoning))
        if delta.content:
            self.reasoning = False
            items.append(text(delta.content))
        for fragment in delta.tool_calls or []:
            items += self._tool_fragment(fragment)
        return items

    def _tool_fragment(self, fragment: Any) -> list[StreamItem]:
        function = fragment.function
        name = (function.name if function else None) or ""
        call = self.calls.get(fragment.index)
        items: list[StreamItem] = []
        if call is None:
            call = PendingCall(fragment.id or f"call_{len(self.calls) + 1}", name)
            self.calls[fragment.index] = call
            items.append(call.started())
        elif name and not call.name:
            call.name = name
        if function is not None and function.arguments:
            items.append(call.delta(function.arguments))
        return items

    def _finish(self, reason: str) -> list[StreamItem]:
        if reason == "content_filter":
            raise ProviderFailure("provider_refused", f"{NAME} stopped the answer (content_filter)")
        self.finish = reason
        completed: list[StreamItem] = [self.calls[i].completed() for i in sorted(self.calls)]
        self.completed += len(completed)
        self.calls.clear()
        return completed

    def end(self) -> CallEnd:
        stop = _STOPS.get(self.finish or "stop", "stop")
        if self.completed and stop == "stop":
            stop = "tool_use"  # NOTE: some servers say "stop" after tool calls.
        return CallEnd(stop, self.usage)
