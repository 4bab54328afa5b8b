"""Chats, messages and attempts, sessions, models and attachments."""

from __future__ import annotations

import asyncio

import pytest
from aiohttp import FormData
from aiohttp.test_utils import TestServer

from server.config import Config
from tests.server.conftest import MakeApi, wait_stopped, with_config
from tests.server.helpers import Api, events_of, read_events


@pytest.fixture
def config(config: Config) -> Config:
    return with_config(config, demo_token_ms=1.0)


async def test_create_then_list_then_read_a_chat(api: Api) -> None:
    created = await api.json("POST", "/api/chats", expect=201, json={"title": "Trip"})
    assert set(created) == {"id", "title", "createdAt", "updatedAt"}
    assert created["title"] == "Trip" and created["createdAt"].endswith("Z")
    assert await api.json("GET", "/api/chats") == [created]
    detail = await api.json("GET", f"/api/chats/{created['id']}")
    assert detail["messages"] == [] and detail["id"] == created["id"]


async def test_first_prompt_names_an_untitled_chat_and_lists_it_first(api: Api) -> None:
    older, newer = await api.new_chat(), await api.new_chat()
    await api.run_turn(older, "rivers of Brazil")
    chats = await api.json("GET", "/api/chats")
    assert [c["id"] for c in chats] == [older, newer]
    assert chats[0]["title"] == "rivers of Brazil"


async def test_chat_detail_has_messages_with_parts_status_run_and_attempt(api: Api) -> None:
    chat_id = await api.new_chat()
    events = await api.run_turn(chat_id, "hi", runId="run_m", thinkingEnabled=True)
    user, assistant = (await api.json("GET", f"/api/chats/{chat_id}"))["messages"]
    assert (user["role"], user["text"], user["id"]) == ("user", "hi", events[0]["messageId"])
    assert assistant["id"] == events[-1]["messageId"]
    assert (
        assistant["role"],
        assistant["status"],
        assistant["runId"],
        assistant["attempt"],
        assistant["partial"],
        assistant["parentId"],
        assistant["stopReason"],
    ) == ("assistant", "completed", "run_m", 1, False, user["id"], "stop")
    assert [p["type"] for p in assistant["parts"]] == ["thinking", "text"]
    assert assistant["parts"][1]["text"] == assistant["text"]
    info = await api.run("run_m")
    assert info == {
        "runId": "run_m",
        "chatId": chat_id,
        "messageId": assistant["id"],
        "status": "completed",
        "lastSeq": len(events),
        "attempt": 1,
        "expired": False,
        "reason": None,
        "waitingFor": None,
    }


ENDINGS = [
    pytest.param(
        [
            {"event": {"type": "text", "text": "Cut"}},
            {"event": {"type": "done", "messageId": "m", "stopReason": "length"}},
        ],
        {"status": "completed", "stopReason": "length", "reason": None, "errorMessage": None},
        id="length",
    ),
    pytest.param(
        [
            {"event": {"type": "text", "text": "Half"}},
            {"event": {"type": "error", "error": "model not loaded", "code": "provider_error"}},
        ],
        {
            "status": "failed",
            "stopReason": None,
            "reason": "provider_error",
            "errorMessage": "model not loaded",
        },
        id="error-with-its-words",
    ),
    pytest.param(
        [{"event": {"type": "text", "text": "Half"}}],
        {
            "status": "interrupted",
            "stopReason": None,
            "reason": "stream_ended",
            "errorMessage": None,
        },
        id="no-terminal-event",
    ),
]


@pytest.mark.parametrize(("steps", "stored"), ENDINGS)
async def test_the_chat_read_says_how_each_answer_ended(
    api: Api, server: TestServer, steps: list[dict[str, object]], stored: dict[str, object]
) -> None:
    chat_id = await api.new_chat()
    await api.scenario(steps, chat_id)
    await api.run_turn(chat_id, "hi", runId="run_end")
    await wait_stopped(server, "run_end")  # NOTE: its end is persisted after it is sent
    detail = await api.json("GET", f"/api/chats/{chat_id}")
    assistant = detail["messages"][-1]
    assert {name: assistant[name] for name in stored} == stored
    assert set(detail["contextInfo"]) == {
        "usedTokens",
        "maxTokens",
        "ratio",
        "severity",
        "compactionRecommended",
    }


async def test_regenerate_is_a_new_attempt_for_the_same_user_message(api: Api) -> None:
    chat_id = await api.new_chat()
    first = await api.run_turn(chat_id, "hi", runId="run_1")
    second = await api.run_turn(chat_id, "", runId="run_2", retryOfRunId="run_1")
    assert second[0] == {**first[0], "runId": "run_2"}, "same user message, no new one"
    messages = (await api.json("GET", f"/api/chats/{chat_id}"))["messages"]
    assert [(m["role"], m["attempt"], m["runId"]) for m in messages] == [
        ("user", 1, None),
        ("assistant", 1, "run_1"),
        ("assistant", 2, "run_2"),
    ]
    assert messages[1]["parentId"] == messages[2]["parentId"] == messages[0]["id"]
    assert (await api.run("run_2"))["attempt"] == 2


async def test_regenerate_with_a_run_of_another_chat_is_400(api: Api) -> None:
    await api.run_turn(await api.new_chat(), "hi", runId="run_x")
    response = await api.stream(await api.new_chat(), retryOfRunId="run_x")
    assert response.status == 400


async def test_partial_answer_is_stored_while_running(api: Api) -> None:
    chat_id = await api.new_chat()
    response = await api.stream(chat_id, "hi", runId="run_p")
    await read_events(response, 3)
    running = (await api.json("GET", f"/api/chats/{chat_id}"))["messages"][-1]
    assert (running["status"], running["partial"]) == ("running", True)
    events_of(await response.read())


async def test_delete_chat_removes_it_and_its_runs(api: Api) -> None:
    chat_id = await api.new_chat()
    await api.run_turn(chat_id, runId="run_del")
    await api.json("DELETE", f"/api/chats/{chat_id}", expect=204)
    await api.json("GET", f"/api/chats/{chat_id}", expect=404)
    await api.json("GET", "/api/runs/run_del", expect=404)
    assert await api.json("GET", "/api/chats") == []


async def test_deleting_a_chat_cancels_its_running_run(api: Api) -> None:
    chat_id = await api.new_chat()
    response = await api.stream(chat_id, runId="run_gone")
    await read_events(response, 2)
    await api.json("DELETE", f"/api/chats/{chat_id}", expect=204)
    assert (await api.trace("run_gone"))["generationStopped"] is True


async def test_session_is_anonymous_and_as_switches_user(make_api: MakeApi) -> None:
    api = await make_api(None)
    response = await api.client.get("/api/session")
    anonymous = await response.json()
    assert anonymous["name"].startswith("anon-")
    cookie = response.cookies["riacho_session"]
    assert cookie["httponly"] and cookie["path"] == "/"
    assert await api.json("GET", "/api/session") == anonymous, "the cookie keeps the user"
    alice = await api.login("alice")
    assert alice["name"] == "alice" and alice["userId"] != anonymous["userId"]
    other_client = await make_api("alice")
    assert await other_client.json("GET", "/api/session") == alice


async def test_session_name_is_validated(api: Api) -> None:
    body = await api.json("GET", "/api/session?as=bad%20name", expect=400)
    assert body["error"]["code"] == "invalid_body"


async def test_models_include_an_unavailable_one(api: Api) -> None:
    models = await api.json("GET", "/api/models")
    assert set(models[0]) == {
        "id",
        "label",
        "available",
        "unavailableReason",
        "supportsThinking",
        "supportsTools",
        "firstEventWaitMs",
        "idleWaitMs",
    }
    assert any(m["available"] for m in models) and not all(m["available"] for m in models)
    for model in models:
        assert (model["unavailableReason"] is None) == model["available"], model


def form_with(data: bytes, name: str, content_type: str | None) -> FormData:
    form = FormData()
    form.add_field("file", data, filename=name, content_type=content_type)
    return form


async def test_upload_attachment(api: Api) -> None:
    info = await api.json(
        "POST",
        "/api/attachments",
        expect=201,
        data=form_with(PNG, "pic.png", "image/png"),
    )
    assert info["attachmentId"].startswith("att_")
    assert {k: info[k] for k in ("name", "size", "mimeType")} == {
        "name": "pic.png",
        "size": len(PNG),
        "mimeType": "image/png",
    }


PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8


@pytest.mark.parametrize(
    ("content", "name", "declared"),
    [
        pytest.param(b"GIF89a....", "pic.png", "image/png", id="gif-named-png"),
        pytest.param(b"<script>alert(1)</script>", "x.png", "image/png", id="html-as-png"),
        pytest.param(b"\xff\xfe\x00bad", "notes.txt", "text/plain", id="binary-as-text"),
        pytest.param(b"{not json", "data.json", "application/json", id="broken-json"),
        pytest.param(b"%PDF", "x.jpg", "image/jpeg", id="pdf-as-jpeg"),
    ],
)
async def test_an_attachment_that_is_not_what_it_claims_is_refused(
    api: Api, content: bytes, name: str, declared: str
) -> None:
    body = await api.json(
        "POST", "/api/attachments", expect=400, data=form_with(content, name, declared)
    )
    assert body["error"]["code"] == "attachment_type_mismatch"


@pytest.mark.parametrize(
    ("data", "name", "content_type", "status", "code"),
    [
        pytest.param(
            b"x" * (5 * 1024 * 1024 + 1),
            "big.txt",
            "text/plain",
            413,
            "attachment_too_large",
            id="too-large",
        ),
        pytest.param(
            b"MZ...",
            "tool.exe",
            "application/x-msdownload",
            400,
            "attachment_type_unsupported",
            id="type-refused",
        ),
        pytest.param(b"", "empty.txt", "text/plain", 400, "attachment_empty", id="empty"),
    ],
)
async def test_attachment_limits_are_clear_errors(
    api: Api, data: bytes, name: str, content_type: str, status: int, code: str
) -> None:
    body = await api.json(
        "POST", "/api/attachments", expect=status, data=form_with(data, name, content_type)
    )
    assert body["error"]["code"] == code


async def test_attachment_type_is_guessed_from_the_name_when_generic(api: Api) -> None:
    info = await api.json(
        "POST",
        "/api/attachments",
        expect=201,
        data=form_with(b"# hi", "notes.md", "application/octet-stream"),
    )
    assert info["mimeType"] == "text/markdown"


async def test_attachment_upload_needs_a_multipart_file_field(api: Api) -> None:
    form = FormData(default_to_multipart=True)
    form.add_field("note", "no file here")
    body = await api.json("POST", "/api/attachments", expect=400, data=form)
    assert body["error"]["code"] == "invalid_body"
    form = FormData()
    form.add_field("note", "no file here")
    body = await api.json("POST", "/api/attachments", expect=415, data=form)
    assert body["error"]["code"] == "unsupported_media_type"
    body = await api.json("POST", "/api/attachments", expect=415, json={"x": 1})
    assert body["error"]["code"] == "unsupported_media_type"


@pytest.mark.parametrize("new_chat", [False, True], ids=["chat", "new-chat"])
async def test_one_run_id_sent_twice_at_once_streams_once(api: Api, new_chat: bool) -> None:
    chat_id = "chat_sent_twice_0001" if new_chat else await api.new_chat()
    responses = await asyncio.gather(
        *(api.stream(chat_id, runId="run_twice_at_once") for _ in range(4))
    )
    statuses = sorted(response.status for response in responses)
    assert statuses == [200, 409, 409, 409], [await r.text() for r in responses]
    for response in responses:
        if response.status == 409:
            assert (await response.json())["error"]["code"] == "run_exists"
        else:
            await response.read()
