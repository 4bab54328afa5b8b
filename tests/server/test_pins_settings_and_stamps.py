"""Issue 37's missing parts on the server: pinned chats, the user's settings, a search's
snippet, and each answer's stored time and model in its terminal event."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from server.config import Config
from tests.server.conftest import MakeApi, with_config
from tests.server.helpers import Api


@pytest.fixture
def config(config: Config) -> Config:
    return with_config(config, demo_token_ms=1.0)


async def _titles(api: Api, query: str = "") -> list[str]:
    chats = await api.json("GET", "/api/chats", params={"q": query} if query else None)
    return [chat["title"] for chat in chats]


# --- pins ---------------------------------------------------------------------------------------


async def test_a_pinned_chat_is_listed_first_until_unpinned(api: Api) -> None:
    old = await api.new_chat("Old")
    await api.new_chat("Newer")
    await api.new_chat("Newest")
    pinned = await api.json("PATCH", f"/api/chats/{old}", json={"pinned": True})
    assert pinned["title"] == "Old" and pinned["pinnedAt"]
    assert await _titles(api) == ["Old", "Newest", "Newer"]
    listed = await api.json("GET", "/api/chats")
    assert [("pinnedAt" in chat) for chat in listed] == [True, False, False]
    unpinned = await api.json("PATCH", f"/api/chats/{old}", json={"pinned": False})
    assert "pinnedAt" not in unpinned
    assert await _titles(api) == ["Newest", "Newer", "Old"]


async def test_pinning_again_keeps_the_first_pin_and_a_rename_keeps_the_pin(api: Api) -> None:
    chat = await api.new_chat("Rivers")
    first = await api.json("PATCH", f"/api/chats/{chat}", json={"pinned": True})
    again = await api.json("PATCH", f"/api/chats/{chat}", json={"pinned": True})
    renamed = await api.json("PATCH", f"/api/chats/{chat}", json={"title": "Streams"})
    assert first["pinnedAt"] == again["pinnedAt"] == renamed["pinnedAt"]
    assert renamed["title"] == "Streams"


@pytest.mark.parametrize(
    "body",
    [{"pinned": "yes"}, {"pinned": 1}, {}, {"title": "", "pinned": True}, {"pinned": None}],
)
async def test_a_bad_pin_changes_nothing(api: Api, body: dict[str, Any]) -> None:
    chat = await api.new_chat("Rivers")
    answer = await api.json("PATCH", f"/api/chats/{chat}", expect=400, json=body)
    assert answer["error"]["code"] == "invalid_body"
    assert "pinnedAt" not in (await api.json("GET", "/api/chats"))[0]


async def test_another_users_chat_cannot_be_pinned(api: Api, make_api: MakeApi) -> None:
    bob = await make_api("bob")
    chat = await bob.new_chat("Bob's")
    await api.json("PATCH", f"/api/chats/{chat}", expect=404, json={"pinned": True})
    assert "pinnedAt" not in (await bob.json("GET", "/api/chats"))[0]


# --- settings -----------------------------------------------------------------------------------

DEFAULTS = {
    "theme": "system",
    "defaultModelId": None,
    "defaultThinking": False,
    "defaultTools": False,
}


async def test_settings_start_as_defaults_and_keep_what_is_patched(api: Api) -> None:
    assert await api.json("GET", "/api/settings") == DEFAULTS
    changed = await api.json("PATCH", "/api/settings", json={"theme": "dark"})
    assert changed == DEFAULTS | {"theme": "dark"}
    both = await api.json(
        "PATCH",
        "/api/settings",
        json={"defaultModelId": "riacho-mini", "defaultThinking": True, "defaultTools": True},
    )
    expected = {"theme": "dark", "defaultModelId": "riacho-mini", "defaultThinking": True}
    assert both == expected | {"defaultTools": True}
    assert await api.json("GET", "/api/settings") == both
    cleared = await api.json("PATCH", "/api/settings", json={"defaultModelId": None})
    assert cleared["defaultModelId"] is None and cleared["theme"] == "dark"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        pytest.param({"theme": "purple"}, "theme", id="unknown-theme"),
        pytest.param({"theme": "dark", "defaultThinking": "yes"}, "defaultThinking", id="not-bool"),
        pytest.param({"colour": "red"}, "colour", id="unknown-field"),
        pytest.param({"defaultModelId": "no-such-model"}, "defaultModelId", id="unknown-model"),
        pytest.param(["theme"], "body", id="not-an-object"),
    ],
)
async def test_bad_settings_are_refused_whole(api: Api, body: object, field: str) -> None:
    await api.json("PATCH", "/api/settings", json={"theme": "light"})
    answer = await api.json("PATCH", "/api/settings", expect=400, json=body)
    assert answer["error"]["code"] == "invalid_body"
    assert field in answer["error"]["message"]
    assert await api.json("GET", "/api/settings") == DEFAULTS | {"theme": "light"}


async def test_settings_are_per_user(api: Api, make_api: MakeApi) -> None:
    bob = await make_api("bob")
    await api.json("PATCH", "/api/settings", json={"theme": "dark"})
    assert (await bob.json("GET", "/api/settings"))["theme"] == "system"


async def test_settings_need_a_session(make_api: MakeApi) -> None:
    nobody = await make_api(None)
    await nobody.json("GET", "/api/settings", expect=401)


# --- search snippets ----------------------------------------------------------------------------


async def test_a_search_result_says_where_its_messages_matched(api: Api) -> None:
    rivers, titled = await api.new_chat("Rivers"), await api.new_chat("Amazon basin")
    await api.run_turn(rivers, "Tell me how the Amazon floods every May, in detail please")
    found = {chat["title"]: chat for chat in await api.json("GET", "/api/chats?q=amazon")}
    assert set(found) == {"Rivers", "Amazon basin"}
    assert found["Rivers"]["snippet"].startswith("Tell me how the Amazon floods")
    assert "snippet" not in found["Amazon basin"], "its title matched, not a message"
    assert titled


async def test_a_long_messages_snippet_is_cut_at_words_around_the_match(api: Api) -> None:
    chat = await api.new_chat("Long")
    words = " ".join(f"word{n}" for n in range(60))
    await api.run_turn(chat, f"{words} NEEDLE {words}")
    (result,) = await api.json("GET", "/api/chats?q=needle")
    snippet = result["snippet"]
    assert snippet.startswith("…word") and snippet.endswith("…") and "NEEDLE" in snippet
    assert len(snippet) < 150


# --- each answer's time and model ---------------------------------------------------------------


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))



async def test_the_terminal_event_carries_the_answers_stored_time_and_model(api: Api) -> None:
    chat = await api.new_chat()
    events = await api.run_turn(chat, "hello", modelId="riacho-mini")
    done = events[-1]
    assert done["type"] == "done"
    detail = await api.json("GET", f"/api/chats/{chat}")
    (answer,) = [m for m in detail["messages"] if m["role"] == "assistant"]
    assert _instant(done["createdAt"]) == _instant(answer["createdAt"])
    assert done["modelId"] == answer["modelId"] == "riacho-mini"
    replayed = await api.replay(done["runId"])
    assert replayed[-1]["createdAt"] == done["createdAt"], "a replay says the same"


async def test_each_answer_names_its_own_model(api: Api) -> None:
    chat = await api.new_chat()
    await api.run_turn(chat, "one", modelId="riacho-mini")
    await api.run_turn(chat, "two", modelId="riacho-demo")
    detail = await api.json("GET", f"/api/chats/{chat}")
    models = [m["modelId"] for m in detail["messages"] if m["role"] == "assistant"]
    users = [m.get("modelId") for m in detail["messages"] if m["role"] == "user"]
    assert models == ["riacho-mini", "riacho-demo"]
    assert users == [None, None]
