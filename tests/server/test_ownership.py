"""Another user's chat or run is answered as an id nobody has used: read, stream, cancel, resume."""

from __future__ import annotations

import json

import pytest
from aiohttp.test_utils import TestServer

from tests.server.conftest import MakeApi, live_run, services_of
from tests.server.helpers import Api, events_of, read_events


@pytest.fixture
async def bob(make_api: MakeApi) -> Api:
    return await make_api("bob")


ROUTES = [
    pytest.param("GET", "/api/chats/{chat}", id="read-chat"),
    pytest.param("DELETE", "/api/chats/{chat}", id="delete-chat"),
    pytest.param("POST", "/api/chats/{chat}/compact", id="compact-chat"),
    pytest.param("PATCH", "/api/chats/{chat}", id="rename-chat"),
    pytest.param("GET", "/api/runs/{run}", id="read-run"),
    pytest.param("GET", "/api/runs/{run}/events", id="resume-run"),
    pytest.param("POST", "/api/runs/{run}/cancel", id="cancel-run"),
]


async def _answer(api: Api, method: str, path: str) -> tuple[int, object]:
    body = {"title": "taken"} if method == "PATCH" else None
    response = await api.client.request(method, path, json=body)
    return response.status, await response.json()


@pytest.mark.parametrize(("method", "path"), ROUTES)
async def test_another_users_chat_or_run_is_answered_as_an_id_nobody_has_used(
    api: Api, bob: Api, method: str, path: str
) -> None:
    chat_id = await api.new_chat()
    response = await api.stream(chat_id, runId="run_alice")
    await read_events(response, 1)
    theirs = await _answer(bob, method, path.format(chat=chat_id, run="run_alice"))
    unknown_chat = "chat_nobody_has_this_one"
    unused = await _answer(bob, method, path.format(chat=unknown_chat, run="run_alice_unused"))
    as_text = (
        json.dumps(unused[1])
        .replace(unknown_chat, chat_id)
        .replace("run_alice_unused", "run_alice")
    )
    assert theirs == (unused[0], json.loads(as_text))
    assert theirs[0] in (200, 404)
    await response.read()
    assert (await api.run("run_alice"))["status"] == "completed", "bob changed nothing"
    assert (await api.json("GET", f"/api/chats/{chat_id}"))["messages"]


async def test_streaming_into_another_users_chat_makes_the_askers_own(api: Api, bob: Api) -> None:
    chat_id = "chat_alice_named_this"
    await api.run_turn(chat_id, "alice's words")
    theirs = await bob.stream(chat_id, "bob's words")
    unused = await bob.stream("chat_nobody_named_this", "bob's words")
    assert (theirs.status, unused.status) == (200, 200)
    assert [e["type"] for e in events_of(await theirs.read())][-1] == "done"
    alice_chat = await api.json("GET", f"/api/chats/{chat_id}")
    assert [m["text"] for m in alice_chat["messages"] if m["role"] == "user"] == ["alice's words"]


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
    body = await bob.json("POST", "/api/runs/run_alice/cancel")
    assert body == {"runId": "run_alice", "status": "running"}, "as an id nobody has used"
    assert asked == []
    assert live_run(server, "run_alice").generating
    response.close()
