"""A chat as a file (SPEC §14): the Markdown of the branch on screen, the JSON of the whole chat,
and a JSON export imported as a new chat that reads the same except ids and times."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aiohttp.test_utils import TestServer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.server.conftest import MakeApi, services_of, wait_stopped
from tests.server.helpers import Api

JsonObject = dict[str, Any]
DONE = {"type": "done", "messageId": "m", "stopReason": "stop"}
ENDINGS: dict[str, list[JsonObject]] = {
    "stop": [{"event": DONE}],
    "length": [{"event": {**DONE, "stopReason": "length"}}],
    "cancelled": [{"event": {**DONE, "stopReason": "cancelled"}}],
    "error": [{"event": {"type": "error", "error": "the model broke", "code": "provider_error"}}],
    "none": [],
}


async def turn(
    api: Api,
    server: TestServer,
    chat_id: str,
    run_id: str,
    events: list[JsonObject],
    ending: str = "stop",
    prompt: str = "hello",
    **place: Any,
) -> None:
    """One answer played from a scenario, ended as ``ending`` says."""
    await api.scenario([{"event": event} for event in events] + ENDINGS[ending], chat_id=chat_id)
    await api.run_turn(chat_id, prompt, runId=run_id, **place)
    await wait_stopped(server, run_id)


def text(words: str) -> JsonObject:
    return {"type": "text", "text": words}


async def two_branch_chat(api: Api, server: TestServer) -> str:
    """A chat: a prompt answered twice (the second failed), then an edit of the follow-up."""
    chat_id = await api.new_chat("Rivers & <b>streams</b>: a/b?")
    thinking = [{"type": "thinking_start"}, {"type": "thinking", "text": "pondering"}]
    await turn(api, server, chat_id, "run_1", [*thinking, text("The Amazon.")], prompt="Which?")
    await turn(api, server, chat_id, "run_1b", [text("half")], "error", "", retryOfRunId="run_1")
    await turn(
        api, server, chat_id, "run_2", [text("It floods.")], prompt="And?", afterRunId="run_1"
    )
    await turn(
        api, server, chat_id, "run_3", [text("Cut")], "length", "Edited?", afterRunId="run_1"
    )
    return chat_id


async def export(api: Api, chat_id: str, query: str) -> tuple[str, str]:
    response = await api.client.get(f"/api/chats/{chat_id}/export?{query}")
    assert response.status == 200, await response.text()
    return response.headers["Content-Disposition"], await response.text()


def comparable(read: JsonObject) -> JsonObject:
    """A chat read without its ids and times: links are positions in the message list."""
    messages = read["messages"]
    place = {message["id"]: index for index, message in enumerate(messages)}
    runs = {m["runId"]: i for i, m in enumerate(m for m in messages if m.get("runId"))}
    out = []
    for message in messages:
        kept = {k: v for k, v in message.items() if k not in ("id", "createdAt", "runId")}
        kept["parentId"] = place.get(message["parentId"])
        kept["run"] = runs.get(message.get("runId"))
        kept["attachments"] = [
            {k: v for k, v in a.items() if k != "attachmentId"} for a in message["attachments"]
        ]
        out.append(kept)
    rest = {k: v for k, v in read.items() if k not in ("id", "createdAt", "updatedAt")}
    return {**rest, "messages": out}


async def import_file(api: Api, body: bytes | str, expect: int = 201) -> JsonObject:
    response = await api.client.post(
        "/api/chats/import", data=body, headers={"Content-Type": "application/json"}
    )
    answer: JsonObject = await response.json()
    assert response.status == expect, answer
    return answer


# --- export ---------------------------------------------------------------------------------------


async def test_the_json_export_is_the_chat_read_with_instructions_and_its_version(
    api: Api, server: TestServer
) -> None:
    chat_id = await two_branch_chat(api, server)
    disposition, body = await export(api, chat_id, "format=json")
    assert disposition == 'attachment; filename="Rivers-b-streams-b-a-b.json"'
    exported = json.loads(body)
    read = await api.json("GET", f"/api/chats/{chat_id}")
    assert exported.pop("exportVersion") == 1
    assert exported.pop("instructions") is None
    assert exported == read
    endings = [(m["status"], m["reason"], m["stopReason"]) for m in read["messages"] if m["runId"]]
    assert ("failed", "provider_error", None) in endings and (
        "completed",
        None,
        "length",
    ) in endings


async def test_the_markdown_export_is_the_branch_on_screen(api: Api, server: TestServer) -> None:
    chat_id = await two_branch_chat(api, server)
    messages = (await api.json("GET", f"/api/chats/{chat_id}"))["messages"]
    first_answer = next(m for m in messages if m.get("runId") == "run_1")
    second = next(m for m in messages if m.get("runId") == "run_2")
    disposition, shown = await export(api, chat_id, f"format=markdown&leaf={second['id']}")
    assert disposition == 'attachment; filename="Rivers-b-streams-b-a-b.md"'
    assert shown.startswith("# Rivers & <b>streams</b>: a/b?\n")
    assert "And?" in shown and "It floods." in shown and "Edited?" not in shown
    assert "The Amazon." in shown and "half" not in shown, "the attempt on screen, run_1"
    assert "## Assistant (attempt 1 of 2)" in shown
    assert "<details><summary>Thinking</summary>\n\npondering\n\n</details>" in shown
    _, by_run = await export(api, chat_id, "format=markdown&leaf=run_2")
    assert by_run == shown, "an answer is also named by its run id"
    _, newest = await export(api, chat_id, "format=markdown")
    assert "Edited?" in newest and "Cut" in newest and "And?" not in newest
    assert "> *Cut at the length limit.*" in newest
    retried = next(m for m in messages if m.get("runId") == "run_1b")
    _, failed = await export(api, chat_id, f"format=markdown&leaf={retried['id']}")
    assert "half" in failed and "> *Failed: the model broke*" in failed
    assert first_answer["id"] not in shown, "ids stay out of the reader's text"


@pytest.mark.parametrize(
    ("query", "status", "code"),
    [
        pytest.param("format=pdf", 400, "unknown_format", id="unknown-format"),
        pytest.param("", 400, "unknown_format", id="no-format"),
        pytest.param("format=markdown&leaf=msg_nowhere", 400, "invalid_body", id="unknown-leaf"),
    ],
)
async def test_an_export_it_cannot_make_is_refused_with_a_code(
    api: Api, query: str, status: int, code: str
) -> None:
    chat_id = await api.new_chat()
    response = await api.client.get(f"/api/chats/{chat_id}/export?{query}")
    assert response.status == status
    assert (await response.json())["error"]["code"] == code


async def test_another_users_chat_cannot_be_exported(api: Api, make_api: MakeApi) -> None:
    chat_id = await api.new_chat("Alice's secrets")
    await api.run_turn(chat_id, "the password is swordfish")
    bob = await make_api("bob")
    for kind in ("json", "markdown"):
        theirs = await bob.client.get(f"/api/chats/{chat_id}/export?format={kind}")
        assert theirs.status == 404
        body = await theirs.json()
        assert body["error"]["code"] == "chat_not_found"
        assert "swordfish" not in json.dumps(body)
    unknown = await bob.client.get("/api/chats/chat_nobody/export?format=json")
    assert unknown.status == 404


# --- import -------------------------------------------------------------------------------------


async def test_an_imported_chat_reads_as_the_exported_one(api: Api, server: TestServer) -> None:
    chat_id = await two_branch_chat(api, server)
    _, body = await export(api, chat_id, "format=json")
    new_id = (await import_file(api, body))["id"]
    assert new_id != chat_id
    original = await api.json("GET", f"/api/chats/{chat_id}")
    imported = await api.json("GET", f"/api/chats/{new_id}")
    assert comparable(imported) == comparable(original)
    old_ids = {m["id"] for m in original["messages"]} | {
        m.get("runId") for m in original["messages"]
    }
    assert not old_ids & {m["id"] for m in imported["messages"]}
    assert not old_ids & {m.get("runId") for m in imported["messages"]} - {None}
    listed = await api.json("GET", "/api/chats")
    assert [c["title"] for c in listed if c["id"] == new_id] == [original["title"]]


async def test_an_imported_answer_is_ended_and_can_be_regenerated(
    api: Api, server: TestServer
) -> None:
    chat_id = await api.new_chat()
    await turn(api, server, chat_id, "run_1", [text("cut off")], "none")
    _, body = await export(api, chat_id, "format=json")
    new_id = (await import_file(api, body))["id"]
    (answer,) = [m for m in (await api.json("GET", f"/api/chats/{new_id}"))["messages"][1:]]
    assert (answer["status"], answer["reason"], answer["partial"]) == (
        "interrupted",
        "stream_ended",
        True,
    )
    run = await api.run(answer["runId"])
    assert (run["status"], run["expired"], run["chatId"]) == ("interrupted", True, new_id)
    resumed = await api.client.get(f"/api/runs/{answer['runId']}/events?after=1")
    assert resumed.status == 410
    assert (await resumed.json())["error"]["code"] == "events_expired"
    await turn(api, server, new_id, "run_again", [text("whole")], retryOfRunId=answer["runId"])
    messages = (await api.json("GET", f"/api/chats/{new_id}"))["messages"]
    assert [(m["attempt"], m["status"]) for m in messages[1:]] == [
        (1, "interrupted"),
        (2, "completed"),
    ]
    assert messages[2]["parentId"] == messages[0]["id"]


async def test_a_running_answer_is_imported_interrupted(api: Api, server: TestServer) -> None:
    chat_id = await api.new_chat()
    await turn(api, server, chat_id, "run_1", [text("a")])
    exported = json.loads((await export(api, chat_id, "format=json"))[1])
    exported["messages"][1]["status"] = "running"
    new_id = (await import_file(api, json.dumps(exported)))["id"]
    answer = (await api.json("GET", f"/api/chats/{new_id}"))["messages"][1]
    assert (answer["status"], answer["partial"]) == ("interrupted", True)


def _file(**changes: Any) -> JsonObject:
    """A valid chat file of one answered prompt, with ``changes`` at the top."""
    return {
        "exportVersion": 1,
        "title": "T",
        "messages": [
            {"id": "u1", "role": "user", "text": "q", "parentId": None},
            {
                "id": "a1",
                "role": "assistant",
                "text": "a",
                "parts": [{"type": "text", "text": "a"}],
                "status": "completed",
                "runId": "r1",
                "parentId": "u1",
            },
        ],
        **changes,
    }


def _with_message(index: int, **changes: Any) -> JsonObject:
    data = _file()
    data["messages"][index] = {**data["messages"][index], **changes}
    return data


def _cycle() -> JsonObject:
    data = _file()
    data["messages"] += [
        {"id": "u2", "role": "user", "text": "x", "parentId": "a2"},
        {"id": "a2", "role": "assistant", "status": "completed", "runId": "r2", "parentId": "u2"},
    ]
    return data


def _deep(levels: int) -> object:
    value: object = []
    for _ in range(levels):
        value = [value]
    return value


BAD_FILES = [
    pytest.param(b"{not json", "not JSON", id="bad-json"),
    pytest.param(b"\xff\xfe", "not JSON", id="not-utf8"),
    pytest.param(b"[]", "a JSON object", id="a-list"),
    pytest.param(_file(exportVersion=2), "exportVersion is 2", id="future-version"),
    pytest.param(_file(exportVersion="1"), "exportVersion is '1'", id="version-as-text"),
    pytest.param({"title": "T", "messages": []}, "exportVersion is None", id="no-version"),
    pytest.param(_file(title=5), "title", id="title-a-number"),
    pytest.param(_file(messages="many"), "messages", id="messages-not-a-list"),
    pytest.param(_with_message(0, text=["q"]), "messages[0].text", id="text-a-list"),
    pytest.param(_with_message(1, attempt="1"), "messages[1].attempt", id="attempt-as-text"),
    pytest.param(_with_message(1, status="done"), "messages[1].status", id="unknown-status"),
    pytest.param(_with_message(0, role="system"), "messages[0].role", id="unknown-role"),
    pytest.param(_with_message(1, parentId="u9"), "'u9' is not in the file", id="foreign-parent"),
    pytest.param(_with_message(1, id="u1"), "'u1' is used twice", id="id-twice"),
    pytest.param(
        _with_message(1, role="user", runId=None, status=None), "answers a user", id="user-to-user"
    ),
    pytest.param(_with_message(1, runId=None), "runId and status", id="answer-without-run"),
    pytest.param(_with_message(0, runId="r0"), "a user message has no run", id="user-with-run"),
    pytest.param(
        _with_message(1, parts=[{"type": "video"}]), "messages[1].parts", id="unknown-part"
    ),
    pytest.param(
        _with_message(1, parts=[{"type": "tool_call"}]),
        "messages[1].parts",
        id="part-missing-field",
    ),
    pytest.param(_with_message(1, parts="a"), "messages[1].parts", id="parts-not-a-list"),
    pytest.param(_cycle(), "cycle", id="cycle"),
    pytest.param(_file(nested=_deep(80)), "nested", id="too-deep"),
]


@pytest.mark.parametrize(("file", "says"), BAD_FILES)
async def test_a_file_that_is_not_a_chat_export_is_refused_and_makes_nothing(
    api: Api, server: TestServer, file: JsonObject | bytes, says: str
) -> None:
    body = file if isinstance(file, bytes) else json.dumps(file)
    before = await api.json("GET", "/api/chats")
    error = (await import_file(api, body, expect=400))["error"]
    assert error["code"] == "invalid_import"
    assert says in error["message"], error["message"]
    assert await api.json("GET", "/api/chats") == before
    rows = await services_of(server).db.one("SELECT COUNT(*) AS n FROM messages")
    assert rows is not None and rows["n"] == 0


async def test_a_file_over_the_cap_is_refused_saying_the_cap(api: Api) -> None:
    huge = json.dumps(_file(title="x" * (8 * 1024 * 1024)))
    error = (await import_file(api, huge, expect=400))["error"]
    assert (error["code"], error["message"]) == ("invalid_import", "a chat file is at most 8 MB")


async def test_a_file_under_the_cap_imports_though_larger_than_other_bodies(api: Api) -> None:
    words = "w" * 1_000_000  # NOTE: a text is at most 1 MiB; three make a 3 MB file
    data = _file()
    data["messages"][0]["text"] = words
    data["messages"][1] |= {"text": words, "parts": [{"type": "text", "text": words}]}
    new_id = (await import_file(api, json.dumps(data)))["id"]
    read = await api.json("GET", f"/api/chats/{new_id}")
    assert [m["text"] for m in read["messages"]] == [words, words]


async def test_a_failed_insert_leaves_nothing_behind(api: Api, server: TestServer) -> None:
    """One transaction: a run row that cannot be stored undoes the chat and its messages."""
    data = _file()
    data["messages"][1]["attempt"] = 2**62  # NOTE: refused by the model's bound first
    assert (await import_file(api, json.dumps(data), expect=400))["error"][
        "code"
    ] == "invalid_import"
    assert await api.json("GET", "/api/chats") == []


async def test_script_in_a_title_or_text_is_kept_as_text(api: Api) -> None:
    script = "<script>alert(1)</script>"
    data = _file(title=script)
    data["messages"][0]["text"] = script
    new_id = (await import_file(api, json.dumps(data)))["id"]
    read = await api.json("GET", f"/api/chats/{new_id}")
    assert (read["title"], read["messages"][0]["text"]) == (script, script)


# --- the round trip, for generated trees ----------------------------------------------------------

WORDS = st.text(alphabet="ab é\n*`<", min_size=1, max_size=5)
EVENTS = st.one_of(
    st.builds(text, WORDS),
    st.lists(
        st.builds(lambda w: {"type": "thinking", "text": w}, WORDS), min_size=1, max_size=2
    ).map(lambda thoughts: [{"type": "thinking_start"}, *thoughts]),
    st.builds(
        lambda name, result, error: [
            {"type": "tool_call_started", "toolCallId": "t1", "toolName": name},
            {
                "type": "tool_call_completed",
                "toolCallId": "t1",
                "toolName": name,
                "arguments": {"q": 1},
            },
            {"type": "tool_result", "toolCallId": "t1", "result": result, "isError": error},
        ],
        st.sampled_from(["calc", "find"]),
        st.one_of(st.none(), st.integers(-2, 2), WORDS),
        st.booleans(),
    ),
    st.just(
        [
            {"type": "image_generation_started", "imageId": "i1", "prompt": "a river"},
            {"type": "image_generation_completed", "imageId": "i1", "url": "https://x.test/i.png"},
        ]
    ),
    st.builds(
        lambda w: {"type": "system_event", "kind": "tool_loop_exhausted", "message": w}, WORDS
    ),
)
PLACES = st.one_of(
    st.just(("newest", 0)),
    st.just(("top", 0)),
    st.tuples(st.just("after"), st.integers(0, 9)),
    st.tuples(st.just("retry"), st.integers(0, 9)),
)
TURNS = st.lists(
    st.tuples(PLACES, st.lists(EVENTS, max_size=3), st.sampled_from(sorted(ENDINGS)), WORDS),
    min_size=1,
    max_size=6,
)


def _flat(events: list[JsonObject | list[JsonObject]]) -> list[JsonObject]:
    return [e for item in events for e in (item if isinstance(item, list) else [item])]


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(turns=TURNS, title=WORDS)
async def test_any_chat_reads_the_same_after_export_and_import(
    api: Api, server: TestServer, turns: list[Any], title: str
) -> None:
    chat_id = await api.new_chat(title)
    runs: list[str] = []
    for index, ((place, pick), events, ending, prompt) in enumerate(turns):
        run_id = f"run_{chat_id}_{index}"
        fields: JsonObject = {}
        if place == "top":
            fields = {"atTop": True}
        elif runs and place == "after":
            fields = {"afterRunId": runs[pick % len(runs)]}
        elif runs and place == "retry":
            fields = {"retryOfRunId": runs[pick % len(runs)]}
        await turn(api, server, chat_id, run_id, _flat(events), ending, f"q{prompt}", **fields)
        runs.append(run_id)
    _, body = await export(api, chat_id, "format=json")
    new_id = (await import_file(api, body))["id"]
    original = await api.json("GET", f"/api/chats/{chat_id}")
    assert comparable(await api.json("GET", f"/api/chats/{new_id}")) == comparable(original)
