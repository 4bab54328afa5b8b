"""Every pre-stream error of SPEC §4: status, code, JSON body, and no SSE headers."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp import ClientResponse, FormData

from server.store.db import now
from tests.server.conftest import MakeApi, StartServer, services_of
from tests.server.helpers import Api


async def assert_error(response: ClientResponse, status: int, code: str) -> None:
    body = await response.json()
    assert (response.status, body["error"]["code"]) == (status, code), body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    assert response.content_type == "application/json"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        pytest.param("GET", "/api/chats", id="list-chats"),
        pytest.param("POST", "/api/chats", id="create-chat"),
        pytest.param("GET", "/api/chats/chat_x", id="get-chat"),
        pytest.param("DELETE", "/api/chats/chat_x", id="delete-chat"),
        pytest.param("POST", "/api/chats/chat_x/compact", id="compact"),
        pytest.param("POST", "/api/respond/stream", id="respond"),
        pytest.param("GET", "/api/runs/run_x", id="run"),
        pytest.param("POST", "/api/runs/run_x/cancel", id="cancel"),
        pytest.param("GET", "/api/runs/run_x/events", id="events"),
        pytest.param("GET", "/api/models", id="models"),
        pytest.param("POST", "/api/attachments", id="attachments"),
    ],
)
async def test_api_without_session_cookie_is_401_unauthenticated(
    make_api: MakeApi, method: str, path: str
) -> None:
    anonymous = await make_api(None)
    response = await anonymous.client.request(method, path, json={})
    await assert_error(response, 401, "unauthenticated")


async def test_unknown_session_cookie_is_401(make_api: MakeApi) -> None:
    anonymous = await make_api(None)
    response = await anonymous.client.get("/api/chats", headers={"Cookie": "riacho_session=forged"})
    await assert_error(response, 401, "unauthenticated")


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        pytest.param(b"{not json", 400, "invalid_body", id="bad-json"),
        pytest.param(b"[1, 2]", 400, "invalid_body", id="not-an-object"),
        pytest.param({"prompt": "hi"}, 400, "invalid_body", id="missing-chat-id"),
        pytest.param({"chatId": "CHAT", "prompt": 5}, 400, "invalid_body", id="prompt-not-str"),
        pytest.param(
            {"chatId": "CHAT", "prompt": "x", "thinkingEnabled": "yes"},
            400,
            "invalid_body",
            id="bool-as-string",
        ),
        pytest.param(
            {"chatId": "CHAT", "prompt": "x", "reasoningEffort": "max"},
            400,
            "invalid_body",
            id="unknown-effort",
        ),
        pytest.param(
            {"chatId": "CHAT", "prompt": "x", "runId": "bad id!"},
            400,
            "invalid_body",
            id="run-id-with-spaces",
        ),
        pytest.param(
            {"chatId": "chat_missing", "prompt": "hi"}, 404, "chat_not_found", id="chat-missing"
        ),
        pytest.param(
            {"chatId": "CHAT", "prompt": "   \n\t"}, 400, "empty_prompt", id="blank-prompt"
        ),
        pytest.param(
            {"chatId": "CHAT", "prompt": "hi", "attachmentIds": ["att_nope"]},
            400,
            "attachment_unavailable",
            id="attachment-missing",
        ),
        pytest.param(
            {"chatId": "CHAT", "prompt": "hi", "modelId": "gpt-x"},
            400,
            "model_not_found",
            id="model-unknown",
        ),
        pytest.param(
            {"chatId": "CHAT", "prompt": "hi", "modelId": "riacho-offline"},
            503,
            "model_unavailable",
            id="model-down",
        ),
        pytest.param(
            {"chatId": "CHAT", "prompt": "hi", "retryOfRunId": "run_nope"},
            404,
            "run_not_found",
            id="retry-of-unknown-run",
        ),
    ],
)
async def test_respond_stream_rejects_before_streaming(
    api: Api, body: Any, status: int, code: str
) -> None:
    chat_id = await api.new_chat()
    if isinstance(body, dict):
        body = {k: (chat_id if v == "CHAT" else v) for k, v in body.items()}
        response = await api.client.post("/api/respond/stream", json=body)
    else:
        headers = {"Content-Type": "application/json"}
        response = await api.client.post("/api/respond/stream", data=body, headers=headers)
    await assert_error(response, status, code)
    detail = await api.json("GET", f"/api/chats/{chat_id}")
    assert detail["messages"] == [], "a rejected turn stores nothing"


async def test_model_unavailable_says_when_to_retry(api: Api) -> None:
    chat_id = await api.new_chat()
    response = await api.stream(chat_id, modelId="riacho-offline")
    await assert_error(response, 503, "model_unavailable")
    assert int(response.headers["Retry-After"]) > 0


async def test_a_run_id_is_unique_per_user_so_a_clash_reveals_nothing(
    api: Api, make_api: MakeApi
) -> None:
    chat_id = await api.new_chat()
    alice_events = await api.run_turn(chat_id, runId="run_dup")
    await assert_error(await api.stream(chat_id, runId="run_dup"), 409, "run_exists")
    bob = await make_api("bob")
    bob_chat = await bob.new_chat()
    bob_events = await bob.run_turn(bob_chat, "something else", runId="run_dup")
    assert bob_events[-1]["type"] == "done", "bob's run of the same id is his own"
    assert (await bob.run("run_dup"))["chatId"] == bob_chat
    assert (await api.run("run_dup"))["chatId"] == chat_id
    assert await api.replay("run_dup") == alice_events


async def test_other_users_attachment_is_unavailable(api: Api, make_api: MakeApi) -> None:
    bob = await make_api("bob")
    form = FormData()
    form.add_field("file", b"bob's notes", filename="notes.txt", content_type="text/plain")
    attachment = await bob.json("POST", "/api/attachments", expect=201, data=form)
    chat_id = await api.new_chat()
    response = await api.stream(chat_id, attachmentIds=[attachment["attachmentId"]])
    await assert_error(response, 400, "attachment_unavailable")


async def test_expired_attachment_is_unavailable(api: Api) -> None:
    form = FormData()
    form.add_field("file", b"old", filename="old.txt", content_type="text/plain")
    attachment = await api.json("POST", "/api/attachments", expect=201, data=form)
    await services_of(api.server).db.execute(
        "UPDATE attachments SET expires_at = ? WHERE id = ?",
        (now() - 1, attachment["attachmentId"]),
    )
    chat_id = await api.new_chat()
    response = await api.stream(chat_id, attachmentIds=[attachment["attachmentId"]])
    await assert_error(response, 400, "attachment_unavailable")


@pytest.mark.parametrize(
    ("method", "path", "status", "code"),
    [
        pytest.param("GET", "/api/runs/run_nope", 404, "run_not_found", id="run"),
        pytest.param("GET", "/api/runs/run_nope/events", 404, "run_not_found", id="events"),
        pytest.param("GET", "/api/chats/chat_nope", 404, "chat_not_found", id="chat"),
        pytest.param("DELETE", "/api/chats/chat_nope", 404, "chat_not_found", id="delete"),
        pytest.param("POST", "/api/chats/chat_nope/compact", 404, "chat_not_found", id="compact"),
        pytest.param("GET", "/api/nothing-here", 404, "not_found", id="unknown-api-route"),
        pytest.param("PUT", "/api/chats", 405, "method_not_allowed", id="wrong-method"),
    ],
)
async def test_unknown_resources_answer_json_errors(
    api: Api, method: str, path: str, status: int, code: str
) -> None:
    await assert_error(await api.client.request(method, path), status, code)


@pytest.mark.parametrize(
    ("after", "code"),
    [pytest.param("x", "invalid_body", id="after-not-integer")],
)
async def test_bad_resume_position_is_400(api: Api, after: str, code: str) -> None:
    chat_id = await api.new_chat()
    events = await api.run_turn(chat_id)
    response = await api.client.get(f"/api/runs/{events[0]['runId']}/events?after={after}")
    await assert_error(response, 400, code)


async def test_create_chat_with_bad_body_is_400(api: Api) -> None:
    response = await api.client.post("/api/chats", json={"title": 5})
    await assert_error(response, 400, "invalid_body")


async def test_events_of_expired_run_are_410(make_api: MakeApi, start_server: StartServer) -> None:
    api = await make_api("alice", on=await start_server(retention_s=0.0))
    chat_id = await api.new_chat()
    run_id = (await api.run_turn(chat_id))[0]["runId"]
    response = await api.client.get(f"/api/runs/{run_id}/events?after=0")
    await assert_error(response, 410, "events_expired")
    assert (await api.run(run_id))["expired"] is True
