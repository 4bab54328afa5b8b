"""Resume: replay of ``seq > N`` from the log, then the live tail, then the terminal event."""

from __future__ import annotations

import pytest
from aiohttp import ClientPayloadError
from aiohttp.test_utils import TestServer

from server.config import Config
from server.store import runlog
from tests.server.conftest import (
    MakeApi,
    StartServer,
    logged_events,
    services_of,
    wait_stopped,
    with_config,
)
from tests.server.helpers import Api, assert_valid_run_stream, events_of, read_events


@pytest.fixture
def config(config: Config) -> Config:
    return with_config(config, demo_token_ms=2.0)


@pytest.fixture
async def finished_run(api: Api, server: TestServer) -> list[dict[str, object]]:
    chat_id = await api.new_chat()
    events = await api.run_turn(chat_id, "a finished run", runId="run_fin")
    await wait_stopped(server, "run_fin")
    return events


@pytest.mark.parametrize("after", [0, 1, 2, 10, -1, -2], ids=lambda n: f"after-{n}")
async def test_replay_after_n_returns_exactly_the_rest(
    api: Api, finished_run: list[dict[str, object]], after: int
) -> None:
    last = len(finished_run)
    n = after if after >= 0 else last + 1 + after
    replay = await api.replay("run_fin", n)
    assert [e["seq"] for e in replay] == list(range(n + 1, last + 1))
    assert replay == finished_run[n:]


async def test_last_event_id_header_works_like_after(
    api: Api, finished_run: list[dict[str, object]]
) -> None:
    response = await api.client.get("/api/runs/run_fin/events", headers={"Last-Event-ID": "3"})
    assert response.status == 200
    assert response.headers["Content-Type"] == "text/event-stream"
    assert events_of(await response.read()) == finished_run[3:]


async def test_replay_without_position_starts_at_the_beginning(
    api: Api, finished_run: list[dict[str, object]]
) -> None:
    assert await api.replay("run_fin") == finished_run


async def test_resume_of_live_run_replays_then_follows_the_tail(api: Api, config: Config) -> None:
    chat_id = await api.new_chat()
    response = await api.stream(chat_id, "an answer please", runId="run_live")
    seen = await read_events(response, 3)
    response.close()
    rest = await api.replay("run_live", 3)
    assert_valid_run_stream(seen + rest, "run_live")
    assert rest[-1]["type"] == "done" and rest[-1]["stopReason"] == "stop"


async def test_two_readers_of_one_run_see_the_same_events(api: Api) -> None:
    chat_id = await api.new_chat()
    response = await api.stream(chat_id, "a story", runId="run_two")
    first = await read_events(response, 1)
    second_reader = await api.replay("run_two", 0)
    assert first + events_of(await response.read()) == second_reader


async def test_resume_of_interrupted_scenario_ends_without_terminal(
    api: Api, server: TestServer
) -> None:
    chat_id = await api.new_chat()
    await api.scenario(
        [
            {"event": {"type": "text", "text": "a"}},
            {"event": {"type": "text", "text": "b"}},
            {"close": "reset"},
        ]
    )
    response = await api.stream(chat_id, runId="run_cut")
    with pytest.raises(ClientPayloadError):
        await response.read()
    await wait_stopped(server, "run_cut")
    info = await api.run("run_cut")
    assert (info["status"], info["lastSeq"]) == ("interrupted", 2)
    replay = await api.replay("run_cut", 1)
    assert [(e["seq"], e["text"], e["done"]) for e in replay] == [(2, "b", False)]


async def test_sweeper_drops_logs_after_retention(
    make_api: MakeApi, start_server: StartServer
) -> None:
    server = await start_server(retention_s=0.0)
    api = await make_api("alice", on=server)
    run_id = (await api.run_turn(await api.new_chat(), "x"))[0]["runId"]
    await wait_stopped(server, run_id)
    assert await runlog.expire_logs(services_of(server).db, 0.0) == 1
    assert await logged_events(server, run_id) == []
    response = await api.client.get(f"/api/runs/{run_id}/events", headers={"Last-Event-ID": "0"})
    assert (response.status, (await response.json())["error"]["code"]) == (410, "events_expired")
