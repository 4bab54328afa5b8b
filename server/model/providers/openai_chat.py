"""OpenAI-compatible Chat Completions streaming (``openai`` SDK) → the Riacho contract.

The dialect of local model servers (Ollama, llama.cpp, vLLM, LM Studio) and many hosted ones:

    delta.reasoning_content / delta.reasoning   thinking_start (once per run of reasoning), thinking
    delta.content                               text
    delta.refusal                               text (the words stay visible), then the answer
                                                ends ``provider_refused`` whatever its finish
    delta.tool_calls[i] (by ``id``, else by     tool_call_started once the name is known (the
        ``index``)                              arguments before it held back), then
                                                tool_call_arguments_delta (JSON text fragments)
    delta.function_call (legacy)                one tool call, the same way
    finish_reason (:data:`FINISHES`)            every pending call completed; the completion:
        stop → stop, length → length, tool_calls / function_call → tool_use,
        content_filter → refused; any other (vLLM's ``abort``, ``error``) → provider_error,
        never a complete answer
    the usage chunk (``choices == []``)         usage (asked for with ``include_usage``)

A 200 answer that is not an event stream (a local server's ``{"error": {"message": …}}``) is
``provider_error`` with the server's message.

# NOTE: the usage chunk comes *after* the finish_reason chunk, so the call ends when the stream
# does; a stream that breaks after finish_reason is still complete (only its usage is lost).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

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
    ReadToEnd,
    SdkAdapter,
    text,
    thinking,
    thinking_start,
)
from server.model.providers.openai_common import classify, make_client, refuse_non_stream

NAME = "the OpenAI-compatible server"
FINISHES: dict[str, CallStop | Literal["refused"]] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_use",
    "function_call": "tool_use",  # NOTE: the legacy single call
    "content_filter": "refused",
}
"""Every finish reason this adapter knows; any other ends the answer as an error."""
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
        await refuse_non_stream(NAME, stream)
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
    in_tool_turn = _in_tool_turns(call.messages)
    messages += [
        _message(message, with_reasoning=i in in_tool_turn)
        for i, message in enumerate(call.messages)
    ]
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


def _in_tool_turns(messages: tuple[Message, ...]) -> set[int]:
    """Indexes of the assistant messages in a turn (from one user message to the next) that
    called tools: DeepSeek's thinking mode refuses such a turn sent back without its reasoning
    ("Missing `reasoning_content` field"); other turns go without it (older reasoners refuse
    it there)."""
    found: set[int] = set()
    turn: list[tuple[int, AssistantMessage]] = []
    for i, message in enumerate((*messages, UserMessage(""))):
        if isinstance(message, UserMessage):
            if any(step.tool_calls for _, step in turn):
                found.update(j for j, _ in turn)
            turn = []
        elif isinstance(message, AssistantMessage):
            turn.append((i, message))
    return found


def _message(message: Message, *, with_reasoning: bool = False) -> JsonObject:
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
        return _assistant(message, with_reasoning)
    return _tool(message)


def _assistant(message: AssistantMessage, with_reasoning: bool) -> JsonObject:
    out: JsonObject = {"role": "assistant", "content": message.text or None}
    native = message.native if isinstance(message.native, dict) else {}
    if with_reasoning and native.get("field") in REASONING_FIELDS and native.get("text"):
        out[native["field"]] = native["text"]  # NOTE: under the name it arrived in
    if message.tool_calls:
        out["tool_calls"] = [
            {
                "id": chat_call_id(call.wire_id),
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
    return {
        "role": "tool",
        "tool_call_id": chat_call_id(output.call.wire_id),
        "content": output.output,
    }


MAX_CALL_ID = 40  # NOTE: OpenAI refuses longer tool call ids ("maximum length 40")


def chat_call_id(call_id: str) -> str:
    """A tool call id this API accepts: as it is, or (a longer one, made by another provider,
    such as a Responses ``call|item`` pair) a stable short form of it."""
    if len(call_id) <= MAX_CALL_ID:
        return call_id
    return "call_" + hashlib.sha256(call_id.encode()).hexdigest()[:32]


# --- stream ----------------------------------------------------------------------------------


class _Translation(ReadToEnd):
    """The state of one streamed completion: pending calls (by id, else by index), reasoning,
    a refusal, the finish, usage."""

    def __init__(self) -> None:
        self.calls: list[PendingCall] = []  # in the order they began
        self.at_index: dict[int | str, PendingCall] = {}  # the call each index now feeds
        self.announced: set[str] = set()  # ids whose tool_call_started was sent
        self.given: set[str] = set()  # ids the server gave (not made up here)
        self.reasoning = False
        self.reasoning_field: str | None = None  # the field the server sends reasoning in
        self.reasoning_text: list[str] = []
        self.refusal: list[str] = []
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
                items += self._finish(choice.finish_reason)  # NOTE: after this chunk's words
        return items

    def _delta(self, delta: Any) -> list[StreamItem]:
        items: list[StreamItem] = []
        field, reasoning = next(
            ((f, r) for f in REASONING_FIELDS if (r := getattr(delta, f, None))), (None, None)
        )
        if isinstance(reasoning, str) and reasoning:
            if not self.reasoning:
                items.append(thinking_start())
                self.reasoning = True
            self.reasoning_field = self.reasoning_field or field
            self.reasoning_text.append(reasoning)
            items.append(thinking(reasoning))
        for words in (delta.content, getattr(delta, "refusal", None)):
            if isinstance(words, str) and words:
                self.reasoning = False
                items.append(text(words))
        if isinstance(getattr(delta, "refusal", None), str):
            self.refusal.append(delta.refusal)
        for fragment in delta.tool_calls or []:
            function = fragment.function
            items += self._tool_fragment(fragment.index, fragment.id, function)
        legacy = getattr(delta, "function_call", None)
        if legacy is not None:
            items += self._tool_fragment("function_call", None, legacy)
        return items

    def _tool_fragment(
        self, index: int | str, call_id: str | None, function: Any
    ) -> list[StreamItem]:
        name = (function.name if function else None) or ""
        call = self.at_index.get(index)
        if call is None or (call_id and call_id != call.call_id and call.call_id in self.given):
            # NOTE: a new call, even at an index already used (some servers send every whole
            # call with index 0): two ids are two calls, never one with joined arguments
            call = PendingCall(call_id or f"call_{len(self.calls) + 1}", name)
            self.calls.append(call)
            self.at_index[index] = call
            if call_id:
                self.given.add(call_id)
        elif name and not call.name:
            call.name = name
        arguments = (function.arguments if function is not None else None) or ""
        return self._announce_or_hold(call, arguments)

    def _announce_or_hold(self, call: PendingCall, arguments: str) -> list[StreamItem]:
        """``tool_call_started`` once the name is known, with the arguments held until then."""
        if not call.name:
            call.fragments.append(arguments)  # NOTE: held: no event names a call without a name
            return []
        items: list[StreamItem] = []
        if call.call_id not in self.announced:
            self.announced.add(call.call_id)
            items.append(call.started())
            held = call.arguments_text
            if held:
                call.fragments.clear()
                items.append(call.delta(held))
        if arguments:
            items.append(call.delta(arguments))
        return items

    def _finish(self, reason: str) -> list[StreamItem]:
        self.failed = self._failure(reason)
        if self.failed is not None:
            return []
        self.finish = reason
        return [call.completed() for call in self.calls]

    def _failure(self, reason: str) -> ProviderFailure | None:
        known = FINISHES.get(reason)
        if known is None:
            return ProviderFailure(
                "provider_error",
                f"{NAME} ended the answer with finish reason {reason!r}: it may be incomplete",
            )
        if known == "refused" or self.refusal:
            why = "".join(self.refusal).strip() or f"finish reason {reason}"
            return ProviderFailure("provider_refused", f"{NAME} declined to answer: {why}")
        if any(not call.name for call in self.calls):
            return ProviderFailure("provider_error", f"{NAME} sent a tool call without a name")
        return None

    def end(self) -> CallEnd:
        stop = FINISHES.get(self.finish or "stop", "stop")
        assert stop != "refused"
        if self.calls and stop == "stop":
            stop = "tool_use"  # NOTE: some servers say "stop" after tool calls.
        native = None
        if self.reasoning_field is not None:
            native = {"field": self.reasoning_field, "text": "".join(self.reasoning_text)}
        return CallEnd(stop, self.usage, native)
