"""How long a provider says to wait, in each of its header forms, and how Riacho passes it on."""

from __future__ import annotations

import pytest

from server.model.providers.common import retry_after, retry_after_header
from tests.provider_fake import Reply
from tests.server.conftest import FakeEndpoint, ModelApi

NOW = 1_764_763_200.0  # 2025-12-03 12:00:00 GMT


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        pytest.param({"retry-after-ms": "1500"}, 1.5, id="milliseconds"),
        pytest.param({"retry-after": "7"}, 7.0, id="delta-seconds"),
        pytest.param({"retry-after": "2.5"}, 2.5, id="fractional-seconds"),
        pytest.param({"retry-after": "Wed, 03 Dec 2025 12:00:30 GMT"}, 30.0, id="http-date"),
        pytest.param({"retry-after": "Wed, 03 Dec 2025 11:00:00 GMT"}, 0.0, id="date-passed"),
        pytest.param({"retry-after-ms": "800", "retry-after": "9"}, 0.8, id="ms-first"),
        pytest.param({"retry-after": "soon"}, None, id="nonsense"),
        pytest.param({"retry-after": "-3"}, 0.0, id="negative"),
        pytest.param({"retry-after": "inf"}, None, id="infinite"),
        pytest.param({}, None, id="none"),
    ],
)
def test_every_header_form_reads_as_seconds(headers: dict[str, str], seconds: float | None) -> None:
    assert retry_after(headers, now=NOW) == seconds


@pytest.mark.parametrize(
    ("seconds", "header"),
    [(1.5, "2"), (7.0, "7"), (0.2, "1"), (30.0001, "31")],
)
def test_the_header_riacho_sends_is_whole_seconds_rounded_up(seconds: float, header: str) -> None:
    assert retry_after_header(seconds) == header


async def test_a_provider_asking_for_1500_ms_gets_the_page_a_retry_after_of_2(
    fake: FakeEndpoint, model_api: ModelApi
) -> None:
    api = await model_api("openai-chat")
    error = {"error": {"message": "Rate limit reached", "type": "requests", "code": "rate"}}
    fake.provider.queue("openai-chat", Reply.error(429, error, **{"retry-after-ms": "1500"}))
    response = await api.stream(await api.new_chat(), "hello")
    assert (response.status, response.headers["Retry-After"]) == (503, "2")
