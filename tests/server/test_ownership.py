"""Another user's chat or run is 404 for reading, streaming, cancelling and resuming."""

from __future__ import annotations

import pytest
from aiohttp.test_utils import TestServer

from tests.server.conftest import MakeApi, live_run, services_of
from tests.server.helpers import Api, read_events


@pytest.fixture
async def bob(make_api: MakeApi) -> Api:
    return await make_api("bob")


@pytest.mark.parametrize(
    ("method", "path", "code"),
    [
        pytest.param("GET", "/api/chats/{chat}", "chat_not_found", id="read-chat"),
        pytest.param("DELETE", "/api/chats/{chat}", "chat_not_found", id="delete-chat"),
        pytest.param("POST", "/api/chats/{chat}/compact", "chat_not_found", id="compact-chat"),
        pytest.param("GET", "/api/runs/{run}", "run_not_found", id="read-run"),
        pytest.param("GET", "/api/runs/{run}/events", "run_not_found", id="resume-run"),
        pytest.param("POST", "/api/runs/{run}/cancel", "run_not_found", id="cancel-run"),
    ],
)
async def test_other_users_resources_are_404(
    api: Api, bob: Api, method: str, path: str, code: str
) -> None:
    chat_id = await api.new_chat()
    response = await api.stream(chat_id, runId="run_alice")
    await read_events(response, 1)
    url = path.format(chat=chat_id, run="run_alice")
    body = await bob.json(method, url, expect=404)
    assert body["error"]["code"] == code
    await response.read()
    assert (await api.run("run_alice"))["status"] == "completed", "bob changed nothing"
    assert (await api.json("GET", f"/api/chats/{chat_id}"))["messages"]


async def test_streaming_into_another_users_chat_is_404(api: Api, bob: Api) -> None:
    chat_id = await api.new_chat()
    response = await bob.stream(chat_id)
    assert response.status == 404
    assert (await response.json())["error"]["code"] == "chat_not_found"


async def test_regenerating_another_users_run_is_404(api: Api, bob: Api) -> None:
    alice_chat = await api.new_chat()
    await api.run_turn(alice_chat, runId="run_a1")
    bob_chat = await bob.new_chat()
    response = await bob.stream(bob_chat, retryOfRunId="run_a1")
    assert response.status == 404
    assert (await response.json())["error"]["code"] == "run_not_found"


async def test_chat_list_shows_only_own_chats(api: Api, bob: Api) -> None:
    mine = await api.new_chat("mine")
    await bob.new_chat("bob's")
    assert [chat["id"] for chat in await api.json("GET", "/api/chats")] == [mine]


async def test_scenario_trace_of_run_is_visible_to_test_hooks_only(api: Api) -> None:
    chat_id = await api.new_chat()
    await api.run_turn(chat_id, runId="run_traced")
    assert (await api.trace("run_traced"))["runId"] == "run_traced"


# --- each layer on its own: the route's check and the registry's check ------------------------


HOLD = [{"event": {"type": "text", "text": "Still going"}}, {"hold": True}]


@pytest.mark.one_process
async def test_the_registry_alone_refuses_to_cancel_another_users_run(
    server: TestServer, api: Api
) -> None:
    chat_id = await api.new_chat()
    await api.scenario(HOLD, chat_id)
    response = await api.stream(chat_id, runId="run_alice")
    await read_events(response, 1)
    registry = services_of(server).runs
    assert await registry.cancel("usr_not_alice", "run_alice") is None
    run = live_run(server, "run_alice")
    assert run.generating and run.stop_cause is None
    assert await api.cancel("run_alice") == "cancelled"  # NOTE: its owner still can


@pytest.mark.one_process
async def test_the_cancel_route_alone_refuses_another_users_run(
    server: TestServer, api: Api, bob: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = services_of(server).runs
    asked: list[tuple[str, str]] = []

    async def cancel_anything(user_id: str, run_id: str) -> str:
        # NOTE: a registry with no ownership check at all: only the route can refuse now.
        asked.append((user_id, run_id))
        found = live_run(server, run_id)
        assert found is not None
        found.stop_generation("user")
        return "cancelled"

    chat_id = await api.new_chat()
    await api.scenario(HOLD, chat_id)
    response = await api.stream(chat_id, runId="run_alice")
    await read_events(response, 1)
    monkeypatch.setattr(registry, "cancel", cancel_anything)
    body = await bob.json("POST", "/api/runs/run_alice/cancel", expect=404)
    assert body["error"]["code"] == "run_not_found"
    assert asked == []
    assert live_run(server, "run_alice").generating
    response.close()
