"""Gemini ``streamGenerateContent`` (``google-genai`` SDK) → the Riacho contract (seed 003).

    candidates[0].content.parts[]   text                 text
                                    text, thought: true  thinking_start (once per run), thinking
                                    functionCall         a whole tool call: started, one arguments
                                                         delta (the JSON text), completed
    candidates[0].finishReason      STOP → stop (tool_use after calls), MAX_TOKENS → length,
                                    safety / recitation / prohibited / malformed call → refused,
                                    anything else → provider_error
    promptFeedback.blockReason      provider_refused (the prompt was blocked)
    usageMetadata                   usage (cumulative: the last chunk's counts)

# NOTE: the SDK sends the request on the first read, and closing its stream does not close the
# connection (a reference cycle keeps the response alive); only cancelling a read in progress
# does. So a reader task pulls the stream into a queue: the task is always inside the SDK's read,
# and cancelling it closes the connection at once. Gemini calls carry no id unless the API gives
# one: made ids start with ``MADE_ID`` and are never sent back.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import httpx2
from google import genai
from google.genai import errors, types

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
from server.model.providers.common import (
    PendingCall,
    ReadToEnd,
    SdkAdapter,
    http_failure,
    network_failure,
    text,
    thinking,
    thinking_start,
)

NAME = "Gemini"
MADE_ID = "gemini_call_"
THINKING_BUDGET = {"low": 1024, "medium": 8192, "high": 24576}
REFUSED = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "PROHIBITED_CONTENT",
        "BLOCKLIST",
        "SPII",
        "LANGUAGE",
        "MALFORMED_FUNCTION_CALL",
        "UNEXPECTED_TOOL_CALL",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
        "MODEL_ARMOR",
    }
)
_END = object()


def make_adapter(settings: ProviderSettings) -> GeminiAdapter:
    return GeminiAdapter(settings)


class GeminiAdapter(SdkAdapter):
    """One Gemini Developer API endpoint (``--base-url`` without a version)."""

    def __init__(self, settings: ProviderSettings) -> None:
        self.key = settings.api_key()
        options = types.HttpOptions(
            base_url=settings.base_url,
            api_version=settings.api_version,
            # NOTE: no SDK timeout (on aiohttp it limits the whole stream); ModelStream applies
            # the first-byte and idle timeouts. One attempt: failures are reported, not hidden.
            retry_options=types.HttpRetryOptions(attempts=1),
        )
        self.client = genai.Client(api_key=self.key or "no-key", http_options=options)

    async def request(self, call: ModelCall) -> Opened:
        stream = await self.client.aio.models.generate_content_stream(
            model=call.model, contents=_contents(call.messages), config=_config(call)
        )
        reader = _Reader(stream)
        try:
            first = await reader.next()
        except BaseException:
            await reader.close()
            raise
        return Opened(reader.iterate(first), reader.close)

    def translation(self) -> _Translation:
        return _Translation()

    def failure(self, error: BaseException, started: bool) -> ProviderFailure | None:
        if isinstance(error, errors.APIError):
            return _status_failure(error, started)
        unread = _unread_error(error)
        if unread is not None:
            return ProviderFailure("provider_error", f"{NAME} answered with an error: {unread}")
        if isinstance(error, errors.UnknownApiResponseError | json.JSONDecodeError):
            return ProviderFailure("provider_error", f"{NAME} sent malformed data: {error}")
        return network_failure(
            NAME,
            error,
            started=started,
            timeouts=(TimeoutError, httpx2.TimeoutException),
            connections=(aiohttp.ClientError, httpx2.TransportError),
        )

    async def aclose(self) -> None:
        await self.client.aio.aclose()


class _Reader:
    """Pulls the SDK's stream into a queue from a task that is cancelled to close it."""

    def __init__(self, stream: AsyncIterator[Any]) -> None:
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self.task = asyncio.get_running_loop().create_task(self._pump(stream))

    async def _pump(self, stream: AsyncIterator[Any]) -> None:
        try:
            async for chunk in stream:
                self.queue.put_nowait(chunk)
        except Exception as exc:  # NOTE: handed to the reader of the queue, who classifies it.
            self.queue.put_nowait(exc)
            return
        self.queue.put_nowait(_END)

    async def next(self) -> Any:
        item = await self.queue.get()
        if item is _END:
            self.queue.put_nowait(_END)
            raise StopAsyncIteration
        if isinstance(item, Exception):
            raise item
        return item

    async def iterate(self, first: Any) -> AsyncIterator[Any]:
        yield first
        while True:
            try:
                item = await self.next()
            except StopAsyncIteration:
                return
            yield item

    async def close(self) -> None:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)


def _status_failure(error: errors.APIError, started: bool) -> ProviderFailure:
    headers = getattr(error.response, "headers", None)
    message = f"{error.status or ''} {error.message or ''}".strip()
    failure = http_failure(NAME, error.code, message, started=started, headers=headers)
    failure.retry_after = failure.retry_after or _retry_info(error.details)
    return failure


def _unread_error(error: BaseException) -> str | None:
    """The message of an ``{"error": …}`` body the SDK failed to raise as an ``APIError``.

    # NOTE: google-genai reads each chunk starting ``{"error":`` (``chunk_json``) and raises
    # it through ``APIError.raise_error_async(code, body, …)`` (``response_json``); a body
    # without a numeric ``code``, or with a string ``error``, as a local Gemini-compatible
    # server may send, breaks that with a TypeError or an AttributeError. The body is still in
    # those frames, so its words are read from there.
    """
    if not isinstance(error, TypeError | AttributeError):
        return None
    trace = error.__traceback__
    while trace is not None:
        local = trace.tb_frame.f_locals
        body = local.get("response_json", local.get("chunk_json"))
        if isinstance(body, dict) and "error" in body:
            inner = body["error"]
            message = inner.get("message") if isinstance(inner, dict) else inner
            return str(message) if message else json.dumps(body)[:200]
        trace = trace.tb_next
    return None


def _retry_info(details: Any) -> float | None:
    """The delay of a ``google.rpc.RetryInfo`` detail (``"37s"``), if any."""
    error = details.get("error") if isinstance(details, dict) else None
    for detail in (error or {}).get("details", []) if isinstance(error, dict) else []:
        delay = detail.get("retryDelay") if isinstance(detail, dict) else None
        if isinstance(delay, str) and delay.endswith("s"):
            try:
                return float(delay[:-1])
            except ValueError:
                return None
    return None


# --- request ---------------------------------------------------------------------------------


def _config(call: ModelCall) -> types.GenerateContentConfig:
    config = types.GenerateContentConfig(
        system_instruction=call.system,
        max_output_tokens=call.max_output_tokens,
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )
    if call.tools:
        config.tools = [
            types.Tool(
                function_declarations=[
                    types.FunctionDeclaration(
                        name=t.name,
                        description=t.description,
                        parameters_json_schema=dict(t.parameters),
                    )
                    for t in call.tools
                ]
            )
        ]
    if call.thinking:
        config.thinking_config = types.ThinkingConfig(
            include_thoughts=True, thinking_budget=THINKING_BUDGET[call.effort or "medium"]
        )
    return config


def _contents(messages: tuple[Message, ...]) -> list[types.Content]:
    """Gemini contents: function responses go in user turns; same-role neighbours are merged."""
    contents: list[types.Content] = []
    for message in messages:
        role, parts = _parts(message)
        if not parts:
            continue
        if contents and contents[-1].role == role:
            contents[-1].parts = [*(contents[-1].parts or []), *parts]
        else:
            contents.append(types.Content(role=role, parts=parts))
    return contents


def _parts(message: Message) -> tuple[str, list[types.Part]]:
    if isinstance(message, UserMessage):
        parts = [types.Part.from_text(text=message.text)] if message.text else []
        parts += [
            types.Part.from_bytes(data=base64.b64decode(i.data_b64), mime_type=i.mime_type)
            for i in message.images
        ]
        return "user", parts
    if isinstance(message, AssistantMessage):
        return "model", _model_parts(message)
    return "user", [_function_response(message)]


def _model_parts(message: AssistantMessage) -> list[types.Part]:
    if message.native is not None:
        # NOTE: as received (JSON of the parts): thought signatures must come back.
        return [types.Part.model_validate(part) for part in message.native]
    parts = [types.Part.from_text(text=message.text)] if message.text else []
    parts += [
        types.Part(
            function_call=types.FunctionCall(
                name=call.name, args=dict(call.arguments), id=_gemini_id(call)
            )
        )
        for call in message.tool_calls
    ]
    return parts


def _function_response(output: ToolOutput) -> types.Part:
    try:
        value = json.loads(output.output)
    except ValueError:
        value = output.output
    response = value if isinstance(value, dict) else {"result": value}
    if output.is_error and not isinstance(value, dict):
        response = {"error": value}
    return types.Part(
        function_response=types.FunctionResponse(
            name=output.call.name, id=_gemini_id(output.call), response=response
        )
    )


def _gemini_id(call: ToolCall) -> str | None:
    wire = call.wire_id
    return None if wire.startswith(MADE_ID) or call.provider_id is None else wire


# --- stream ----------------------------------------------------------------------------------


class _Translation(ReadToEnd):
    """The state of one streamed answer: its parts (for the replay), calls, finish and usage."""

    def __init__(self) -> None:
        self.parts: list[types.Part] = []
        self.thought = False
        self.calls = 0
        self.usage: Usage | None = None

    def on(self, chunk: Any) -> list[StreamItem]:
        if chunk.usage_metadata is not None:
            self._usage(chunk.usage_metadata)
        feedback = chunk.prompt_feedback
        if feedback is not None and feedback.block_reason is not None:
            reason = _name(feedback.block_reason)
            raise ProviderFailure("provider_refused", f"{NAME} blocked the prompt ({reason})")
        if not chunk.candidates:
            return []
        candidate = chunk.candidates[0]
        items: list[StreamItem] = []
        for part in (candidate.content.parts if candidate.content else None) or []:
            self.parts.append(part)
            items += self._part(part)
        if candidate.finish_reason is not None:
            self._finish(_name(candidate.finish_reason))
        return items

    def _part(self, part: types.Part) -> list[StreamItem]:
        if part.function_call is not None:
            self.thought = False
            return self._call(part.function_call)
        if not part.text:
            return []
        if part.thought:
            started = [] if self.thought else [thinking_start()]
            self.thought = True
            return [*started, thinking(part.text)]
        self.thought = False
        return [text(part.text)]

    def _call(self, function_call: types.FunctionCall) -> list[StreamItem]:
        self.calls += 1
        call = PendingCall(function_call.id or f"{MADE_ID}{self.calls}", function_call.name or "")
        arguments = json.dumps(function_call.args or {}, ensure_ascii=False)
        return [call.started(), call.delta(arguments), call.completed()]

    def _usage(self, usage: types.GenerateContentResponseUsageMetadata) -> None:
        self.usage = Usage(
            usage.prompt_token_count or 0,
            usage.candidates_token_count or 0,
            usage.thoughts_token_count or 0,
        )

    def _finish(self, reason: str) -> None:
        """The answer's end; a failure is raised after this chunk's parts are sent."""
        if reason in REFUSED:
            self.failed = ProviderFailure(
                "provider_refused", f"{NAME} stopped the answer ({reason})"
            )
        elif reason not in ("STOP", "MAX_TOKENS"):
            # NOTE: FINISH_REASON_UNSPECIFIED and any reason not known here (OTHER, …) are not
            # a complete answer
            self.failed = ProviderFailure(
                "provider_error", f"{NAME} ended the answer with finish reason {reason}"
            )
        else:
            self.finish = reason

    def end(self) -> CallEnd:
        native = [part.model_dump(mode="json", exclude_none=True) for part in self.parts]
        if self.finish == "MAX_TOKENS":
            return CallEnd("length", self.usage, native)
        return CallEnd("tool_use" if self.calls else "stop", self.usage, native)


def _name(value: Any) -> str:
    return str(getattr(value, "value", value))
