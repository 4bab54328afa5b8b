"""What the two OpenAI adapters share: the SDK client and how its exceptions read.

APIStatusError            HTTP error status (before the stream: unavailable or error)
APITimeoutError           no response / a stall longer than the read timeout
APIConnectionError        cannot connect, or the connection broke mid-stream
APIError (other)          an ``{"error": …}`` object in the stream (the SDK raises it)
json.JSONDecodeError      a malformed data line (the SDK lets it through unwrapped)

A 200 answer that is not ``text/event-stream`` (local servers answer ``{"error": …}`` so) is
read whole and refused with its message (:func:`refuse_non_stream`): the SDK would find no event
in it and the answer would end as if the connection broke.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
import openai

from server.config.providers import ProviderSettings
from server.model.providers.base import ProviderFailure
from server.model.providers.common import http_failure, network_failure


def make_client(settings: ProviderSettings) -> openai.AsyncOpenAI:
    """An SDK client with no retries (Riacho reports failures instead of hiding them)."""
    return openai.AsyncOpenAI(
        base_url=settings.base_url,
        api_key=settings.api_key() or "no-key",
        max_retries=0,
        timeout=httpx2.Timeout(settings.idle_timeout_s, connect=settings.connect_timeout_s),
    )


def classify(name: str, error: BaseException, started: bool) -> ProviderFailure | None:
    """The failure an openai SDK exception means (``None``: not a provider failure)."""
    if isinstance(error, openai.APIStatusError):
        headers = error.response.headers if error.response is not None else None
        return http_failure(
            name, error.status_code, _message(error), started=started, headers=headers
        )
    network = network_failure(
        name,
        error,
        started=started,
        timeouts=(openai.APITimeoutError, httpx2.TimeoutException),
        connections=(openai.APIConnectionError, httpx2.TransportError),
    )
    if network is not None:
        return network
    if isinstance(error, openai.APIError):
        return ProviderFailure("provider_error", f"{name} reported an error: {_message(error)}")
    if isinstance(error, json.JSONDecodeError):
        return ProviderFailure("provider_error", f"{name} sent malformed data: {error}")
    return None


def _message(error: openai.APIError) -> str:
    body = error.body
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        code = body.get("code") or body.get("type")
        return f"{body['message']} ({code})" if code else str(body["message"])
    return error.message


async def refuse_non_stream(name: str, stream: Any) -> None:
    """Raise ``provider_error`` with the server's words when its answer is not an event stream."""
    response = stream.response
    kind = response.headers.get("content-type", "")
    if not kind or "text/event-stream" in kind:
        return
    body = await response.aread()
    await stream.close()
    raise ProviderFailure(
        "provider_error", f"{name} answered without a stream: {error_words(body, kind)}"
    )


def error_words(body: bytes, kind: str) -> str:
    """The message of an ``{"error": {"message"}}`` (or ``{"error": "…"}``) body, else its start."""
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])
    if isinstance(error, str):
        return error
    start = body[:200].decode("utf-8", "replace").strip()
    return f"{kind or 'no content type'}: {start}" if start else f"an empty {kind} body"
