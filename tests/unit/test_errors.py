"""Tests for app.wire.errors: the error tree, its fields, codes and human text."""

from __future__ import annotations

import pytest

from app.wire.errors import (
    ChatError,
    HttpStatusError,
    TimeoutFired,
    TimeoutKind,
    TransportError,
)


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(TransportError("reset"), id="transport"),
        pytest.param(HttpStatusError(503, "model_unavailable", "Down"), id="http-status"),
        pytest.param(TimeoutFired("idle"), id="timeout"),
    ],
)
def test_every_error_is_a_chat_error(error: ChatError) -> None:
    assert isinstance(error, ChatError)
    with pytest.raises(ChatError):
        raise error


def test_chat_error_has_a_default_code() -> None:
    error = ChatError("something broke")
    assert (error.code, error.message, str(error)) == (
        "chat_error",
        "something broke",
        "something broke",
    )


def test_transport_error_carries_its_detail() -> None:
    error = TransportError("connection reset")
    assert (error.detail, error.code) == ("connection reset", "network_error")
    assert str(error) == "network error: connection reset"


def test_http_status_error_carries_status_code_message_and_retry_after() -> None:
    error = HttpStatusError(503, "model_unavailable", "The model is down", retry_after=12.0)
    assert (error.status, error.code, error.message, error.retry_after) == (
        503,
        "model_unavailable",
        "The model is down",
        12.0,
    )
    assert str(error) == "The model is down"
    assert HttpStatusError(404, "chat_not_found", "No chat").retry_after is None


@pytest.mark.parametrize(
    ("kind", "seconds", "code", "text"),
    [
        pytest.param(
            "first_event",
            30.0,
            "first_event_timeout",
            "first event timeout after 30 s",
            id="first-event",
        ),
        pytest.param("idle", 1.5, "idle_timeout", "idle timeout after 1.5 s", id="idle"),
        pytest.param("total", None, "total_timeout", "total timeout", id="total-no-seconds"),
    ],
)
def test_timeout_fired_says_which_timeout(
    kind: TimeoutKind, seconds: float | None, code: str, text: str
) -> None:
    error = TimeoutFired(kind, seconds)
    assert (error.kind, error.seconds, error.code, str(error)) == (kind, seconds, code, text)
