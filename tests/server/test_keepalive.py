"""Keepalive comments: every ``keepalive_s`` on demo and resume streams, never in scenarios."""

from __future__ import annotations

import time

import pytest
from aiohttp import ClientResponse

from server.config import Config
from tests.server.conftest import with_config
from tests.server.helpers import Api, parse_sse

INTERVAL = 0.05


@pytest.fixture
def config(config: Config) -> Config:
    """Keepalives every 50 ms; the demo types one token every 600 ms."""
    return with_config(config, keepalive_s=INTERVAL, demo_token_ms=600.0)


async def keepalive_times(response: ClientResponse) -> list[float]:
    """Arrival times of keepalive comments until the first text event."""
    times = []
    while True:
        frame = parse_sse(await response.content.readuntil(b"\n\n"))[0]
        if frame.comment is not None:
            assert frame.comment == "keepalive"
            times.append(time.monotonic())
        elif frame.data is not None and frame.data["type"] == "text":
            return times


def assert_cadence(times: list[float]) -> None:
    # NOTE: counts, not timings (a loaded machine delays reads and bunches frames): before the
    # first token (600 ms) a 50 ms cadence gives about 12 keepalives; the default 15 s gives 0.
    assert 4 <= len(times) <= 30, len(times)


async def test_stream_sends_keepalives_at_the_configured_interval(api: Api) -> None:
    response = await api.stream(await api.new_chat(), runId="run_ka")
    assert_cadence(await keepalive_times(response))
    response.close()
    await api.cancel("run_ka")


async def test_resume_stream_sends_keepalives_too(api: Api) -> None:
    response = await api.stream(await api.new_chat(), runId="run_ka2")
    response.close()
    resumed = await api.client.get("/api/runs/run_ka2/events?after=0")
    assert_cadence(await keepalive_times(resumed))
    resumed.close()
    await api.cancel("run_ka2")


async def test_scenario_stream_gets_no_keepalive_of_its_own(api: Api) -> None:
    await api.scenario(
        [
            {"event": {"type": "text", "text": "a"}},
            {"sleep_ms": 300},
            {"event": {"type": "done", "messageId": "m", "stopReason": "stop"}},
        ]
    )
    response = await api.stream(await api.new_chat())
    frames = parse_sse(await response.read())
    assert [f.comment for f in frames] == [None, None]
