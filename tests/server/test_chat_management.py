"""Managing chats: search, rename, a chat made by its first stream, and the message tree."""

from __future__ import annotations

import pytest

from server.config import Config
from tests.server.conftest import MakeApi, with_config
from tests.server.helpers import Api

NEW_CHAT = "chat_made_by_the_page_1"


@pytest.fixture
def config(config: Config) -> Config:
    return with_config(config, demo_token_ms=1.0)


async def _titles(api: Api, query: str) -> list[str]:
    chats = await api.json("GET", "/api/chats", params={"q": query})
    return [chat["title"] for chat in chats]


# --- search -------------------------------------------------------------------------------------


async def test_search_finds_titles_and_contents_newest_first(api: Api) -> None:
    rivers, music = await api.new_chat("Rivers"), await api.new_chat("Music")
    await api.new_chat("Cooking")
    await api.run_turn(rivers, "the Amazon floods in May")
    await api.run_turn(music, "samba and the amazon of sound")
    assert await _titles(api, "AMAZON") == ["Music", "Rivers"]
    assert await _titles(api, "cook") == ["Cooking"]
    assert await _titles(api, "  ") == ["Music", "Rivers", "Cooking"], "blank: every chat"
    assert await _titles(api, "nothing like this") == []


@pytest.mark.parametrize(
    ("query", "found"),
    [
        pytest.param("100%", ["100% sure"], id="percent-is-literal"),
        pytest.param("a_b", ["a_b"], id="underscore-is-literal"),
        pytest.param("\\", ["back\\slash"], id="backslash-is-literal"),
    ],
)
async def test_search_takes_like_wildcards_literally(
    api: Api, query: str, found: list[str]
) -> None:
    for title in ("100% sure", "1000 sure", "a_b", "axb", "back\\slash"):
        await api.new_chat(title)
    assert await _titles(api, query) == found


async def test_search_never_shows_another_users_chats(api: Api, make_api: MakeApi) -> None:
    bob = await make_api("bob")
    await bob.run_turn(await bob.new_chat("Secret plans"), "the password is swordfish")
    assert await _titles(api, "secret") == []
    assert await _titles(api, "swordfish") == []
    assert await _titles(bob, "swordfish") == ["Secret plans"]


async def test_an_overlong_search_is_refused(api: Api) -> None:
    body = await api.json("GET", "/api/chats", expect=400, params={"q": "x" * 201})
    assert body["error"]["code"] == "invalid_body"


# --- rename -------------------------------------------------------------------------------------


async def test_rename_answers_and_lists_the_new_title(api: Api) -> None:
    chat_id = await api.new_chat("Old")
    renamed = await api.json("PATCH", f"/api/chats/{chat_id}", json={"title": "  Trip\tto  Rio "})
    assert (renamed["id"], renamed["title"]) == (chat_id, "Trip to Rio")
    assert [c["title"] for c in await api.json("GET", "/api/chats")] == ["Trip to Rio"]


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({"title": "   "}, id="blank"),
        pytest.param({"title": 5}, id="not-a-string"),
        pytest.param({}, id="missing"),
        pytest.param([], id="not-an-object"),
    ],
)
async def test_rename_without_a_title_is_400_and_keeps_the_old_one(api: Api, body: object) -> None:
    chat_id = await api.new_chat("Kept")
    error = await api.json("PATCH", f"/api/chats/{chat_id}", expect=400, json=body)
    assert error["error"]["code"] == "invalid_body"
    assert (await api.json("GET", f"/api/chats/{chat_id}"))["title"] == "Kept"


async def test_rename_of_another_users_chat_is_404(api: Api, make_api: MakeApi) -> None:
    bob = await make_api("bob")
    chat_id = await bob.new_chat("Bob's")
    error = await api.json("PATCH", f"/api/chats/{chat_id}", expect=404, json={"title": "Mine"})
    assert error["error"]["code"] == "chat_not_found"
    assert (await bob.json("GET", f"/api/chats/{chat_id}"))["title"] == "Bob's"


# --- a chat comes into being with its first stream ----------------------------------------------


async def test_a_chat_the_page_named_is_made_by_its_first_answer(api: Api) -> None:
    events = await api.run_turn(NEW_CHAT, "rivers of Brazil")
    assert events[-1]["type"] == "done"
    (chat,) = await api.json("GET", "/api/chats")
    assert (chat["id"], chat["title"]) == (NEW_CHAT, "rivers of Brazil")
    assert len((await api.json("GET", f"/api/chats/{NEW_CHAT}"))["messages"]) == 2


async def test_a_refused_first_send_leaves_no_chat_behind(api: Api) -> None:
    response = await api.stream(NEW_CHAT, "hi", modelId="riacho-offline")
    assert response.status == 503
    assert await api.json("GET", "/api/chats") == []
    error = await api.json("GET", f"/api/chats/{NEW_CHAT}", expect=404)
    assert error["error"]["code"] == "chat_not_found"


@pytest.mark.parametrize(
    "chat_id",
    [
        pytest.param("chat_x", id="too-short"),
        pytest.param("room_12345678", id="wrong-prefix"),
        pytest.param("chat_12345678/..", id="odd-characters"),
    ],
)
async def test_a_malformed_chat_id_is_not_made(api: Api, chat_id: str) -> None:
    response = await api.stream(chat_id, "hi")
    assert response.status == 404
    assert await api.json("GET", "/api/chats") == []


async def test_another_users_chat_id_is_never_joined_and_is_answered_as_an_unused_one(
    api: Api, make_api: MakeApi
) -> None:
    bob = await make_api("bob")
    await bob.run_turn(NEW_CHAT, "bob's first words")
    events = await api.run_turn(NEW_CHAT, "let me in")
    assert events[-1]["type"] == "done", "a new chat of alice's own, as for a name nobody has"
    mine = await api.json("GET", f"/api/chats/{NEW_CHAT}")
    assert [m["text"] for m in mine["messages"] if m["role"] == "user"] == ["let me in"]
    assert [c["id"] for c in await api.json("GET", "/api/chats")] == [NEW_CHAT]
    theirs = await bob.json("GET", f"/api/chats/{NEW_CHAT}")
    assert [m["text"] for m in theirs["messages"] if m["role"] == "user"] == ["bob's first words"]
    run = await api.run(events[-1]["runId"])
    assert run["chatId"] == NEW_CHAT, "each user sees the chat by their own name for it"
    await api.json("DELETE", f"/api/chats/{NEW_CHAT}", expect=204)
    assert len((await bob.json("GET", f"/api/chats/{NEW_CHAT}"))["messages"]) == 2


async def test_a_regenerate_cannot_make_a_chat(api: Api) -> None:
    response = await api.stream(NEW_CHAT, "", retryOfRunId="run_none")
    assert response.status == 404
    assert await api.json("GET", "/api/chats") == []


# --- the message tree ---------------------------------------------------------------------------


def _tree(messages: list[dict[str, object]]) -> list[tuple[object, object, object]]:
    return [(m["role"], m["text"] or (m["parts"] and "answer"), m["parentId"]) for m in messages]


async def test_a_prompt_follows_the_answer_named_by_after_run_id(api: Api) -> None:
    chat_id = await api.new_chat()
    await api.run_turn(chat_id, "one", runId="run_1")
    await api.run_turn(chat_id, "two", runId="run_2", afterRunId="run_1")
    await api.run_turn(chat_id, "two, edited", runId="run_3", afterRunId="run_1")
    one, answer_1, two, _, edited, _ = (await api.json("GET", f"/api/chats/{chat_id}"))["messages"]
    assert one["parentId"] is None
    assert two["parentId"] == answer_1["id"] and edited["parentId"] == answer_1["id"]
    assert (two["text"], edited["text"]) == ("two", "two, edited")


async def test_at_top_starts_a_new_branch_from_the_first_prompt(api: Api) -> None:
    chat_id = await api.new_chat()
    await api.run_turn(chat_id, "first", runId="run_1")
    await api.run_turn(chat_id, "first, edited", runId="run_2", atTop=True)
    users = [
        m
        for m in (await api.json("GET", f"/api/chats/{chat_id}"))["messages"]
        if m["role"] == "user"
    ]
    assert [(m["text"], m["parentId"]) for m in users] == [("first", None), ("first, edited", None)]


async def test_without_a_place_a_prompt_follows_the_newest_answer(api: Api) -> None:
    chat_id = await api.new_chat()
    await api.run_turn(chat_id, "q", runId="run_1")
    await api.run_turn(chat_id, "", runId="run_1b", retryOfRunId="run_1")
    await api.run_turn(chat_id, "next")
    messages = (await api.json("GET", f"/api/chats/{chat_id}"))["messages"]
    newest_attempt = next(m for m in messages if m.get("runId") == "run_1b")
    assert messages[-2]["text"] == "next" and messages[-2]["parentId"] == newest_attempt["id"]


@pytest.mark.parametrize(
    ("fields", "code"),
    [
        pytest.param({"afterRunId": "run_unknown"}, "invalid_body", id="unknown-run"),
        pytest.param({"afterRunId": "run_1", "atTop": True}, "invalid_body", id="both"),
        pytest.param({"atTop": "yes"}, "invalid_body", id="at-top-not-a-boolean"),
    ],
)
async def test_a_bad_place_in_the_tree_is_400_and_stores_nothing(
    api: Api, fields: dict[str, object], code: str
) -> None:
    chat_id = await api.new_chat()
    await api.run_turn(chat_id, "q", runId="run_1")
    response = await api.stream(chat_id, "lost?", **fields)
    assert response.status == 400
    assert (await response.json())["error"]["code"] == code
    assert len((await api.json("GET", f"/api/chats/{chat_id}"))["messages"]) == 2


async def test_after_run_id_of_another_chat_is_400(api: Api) -> None:
    other, chat_id = await api.new_chat(), await api.new_chat()
    await api.run_turn(other, "elsewhere", runId="run_other")
    response = await api.stream(chat_id, "here", afterRunId="run_other")
    assert response.status == 400


async def test_after_run_id_of_another_user_is_400(api: Api, make_api: MakeApi) -> None:
    bob = await make_api("bob")
    await bob.run_turn(await bob.new_chat(), "bob", runId="run_shared_name")
    chat_id = await api.new_chat()
    response = await api.stream(chat_id, "mine", afterRunId="run_shared_name")
    assert response.status == 400


async def test_user_messages_list_their_attachments(api: Api) -> None:
    from aiohttp import FormData

    form = FormData()
    form.add_field("file", b"hello", filename="note.txt", content_type="text/plain")
    info = await api.json("POST", "/api/attachments", expect=201, data=form)
    chat_id = await api.new_chat()
    await api.run_turn(chat_id, "read this", attachmentIds=[info["attachmentId"]])
    user = (await api.json("GET", f"/api/chats/{chat_id}"))["messages"][0]
    assert user["attachments"] == [
        {
            "attachmentId": info["attachmentId"],
            "name": "note.txt",
            "size": 5,
            "mimeType": "text/plain",
        }
    ]


# --- attachments read back, limits spoken in human units ----------------------------------------

PNG = bytes.fromhex("89504e470d0a1a0a") + b"\x00" * 16


async def _upload(api: Api, data: bytes, name: str, content_type: str) -> dict[str, object]:
    from aiohttp import FormData

    form = FormData()
    form.add_field("file", data, filename=name, content_type=content_type)
    info: dict[str, object] = await api.json("POST", "/api/attachments", expect=201, data=form)
    return info


async def test_an_image_attachment_is_read_back_inline_by_its_owner_only(
    api: Api, make_api: MakeApi
) -> None:
    info = await _upload(api, PNG, "river.png", "image/png")
    response = await api.client.get(f"/api/attachments/{info['attachmentId']}")
    assert response.status == 200 and await response.read() == PNG
    assert response.headers["Content-Type"] == "image/png"
    assert response.headers["Content-Disposition"] == "inline; filename*=UTF-8''river.png"
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    bob = await make_api("bob")
    other = await bob.client.get(f"/api/attachments/{info['attachmentId']}")
    assert other.status == 404


async def test_other_attachments_are_downloads_not_pages(api: Api) -> None:
    info = await _upload(api, b"<script>alert(1)</script>", "x.txt", "text/plain")
    response = await api.client.get(f"/api/attachments/{info['attachmentId']}")
    assert response.headers["Content-Disposition"].startswith("attachment;")
    assert response.headers["Content-Type"].startswith("text/plain")


async def test_an_unknown_attachment_is_404(api: Api) -> None:
    body = await api.json("GET", "/api/attachments/att_nope", expect=404)
    assert body["error"]["code"] == "attachment_unavailable"


async def test_an_oversized_attachment_is_refused_in_human_units(api: Api) -> None:
    from aiohttp import FormData

    form = FormData()
    form.add_field(
        "file", b"x" * (5 * 1024 * 1024 + 1), filename="big.txt", content_type="text/plain"
    )
    body = await api.json("POST", "/api/attachments", expect=413, data=form)
    assert body["error"]["code"] == "attachment_too_large"
    assert "5 MB" in body["error"]["message"] and "bytes" not in body["error"]["message"]


async def test_the_session_tells_the_upload_limits(api: Api) -> None:
    session = await api.json("GET", "/api/session")
    limits = session["limits"]
    assert limits["attachmentMaxBytes"] == 5 * 1024 * 1024
    assert limits["attachmentsPerMessage"] == 10
    assert "image/png" in limits["attachmentTypes"]
