"""A real model's turn on the reference server: history, cancel, refusals before the stream,
timeouts, the tool loop and its cap, and how configured models are offered."""

from __future__ import annotations

import asyncio
import json
import socket
from typing import Any

import pytest

from tests.provider_fake import Kind, Reply, chat_reply
from tests.server.conftest import (
    MODEL_ID,
    TEST_KEY,
    FakeEndpoint,
    MakeApi,
    ModelApi,
    StartServer,
    wait_stopped,
)
from tests.server.conftest import provider_settings as settings_for
from tests.server.helpers import JsonObject, assert_valid_run_stream, events_of, read_events

KINDS: list[Kind] = ["openai-chat", "openai-responses", "anthropic", "google"]


# --- the conversation each call carries ----------------------------------------------------


def _said(kind: Kind, body: JsonObject) -> list[tuple[str, str]]:
    """(role, text) of each message a request carried, in the provider's own shape."""
    if kind == "openai-chat":
        return [(m["role"], m["content"]) for m in body["messages"]]
    if kind == "openai-responses":
        return [(i["role"], _text(i["content"])) for i in body["input"]]
    if kind == "anthropic":
        return [(m["role"], _text(m["content"])) for m in body["messages"]]
    return [(c["role"], _text(c["parts"])) for c in body["contents"]]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(str(block.get("text", "")) for block in content)


FIXTURE_TEXT = {
    "openai-chat": "Hello! How can I help you today?",
    "openai-responses": "Hello! How can I help you today?",
    "anthropic": "Hello! How can I help you today?",
    "google": "The capital of France is Paris. It is known for the Eiffel Tower.",
}
MODEL_ROLE = {"google": "model"}
# NOTE: how long a test waits for the provider's connection to close: a guard against a close
# that never comes, not a speed target (2 s was missed once on a loaded CI machine, PostgreSQL)
CLOSE_GUARD_S = 15


@pytest.mark.parametrize("kind", KINDS)
async def test_second_question_carries_the_first_answer(
    fake: FakeEndpoint, model_api: ModelApi, kind: Kind
) -> None:
    api = await model_api(kind)
    fake.provider.queue(kind, Reply.fixture(kind, "text"), Reply.fixture(kind, "text"))
    chat = await api.new_chat()
    await api.run_turn(chat, "What is Riacho?")
    await api.run_turn(chat, "Tell me more about it")
    first, second = fake.provider.bodies(kind)
    assistant = MODEL_ROLE.get(kind, "assistant")
    assert _said(kind, first) == [("user", "What is Riacho?")]
    assert _said(kind, second) == [
        ("user", "What is Riacho?"),
        (assistant, FIXTURE_TEXT[kind]),
        ("user", "Tell me more about it"),
    ]


async def test_regenerate_sends_the_history_up_to_its_question_without_the_old_attempt(
    fake: FakeEndpoint, model_api: ModelApi
) -> None:
    api = await model_api("openai-chat")
    fake.provider.queue("openai-chat", chat_reply("First answer."), chat_reply("Second try."))
    chat = await api.new_chat()
    await api.run_turn(chat, "Question one", runId="run_q1")
    await api.run_turn(chat, "", runId="run_q1_again", retryOfRunId="run_q1")
    _, retry = fake.provider.bodies("openai-chat")
    assert _said("openai-chat", retry) == [("user", "Question one")]


async def test_an_edited_prompt_is_sent_with_its_branch_only(
    fake: FakeEndpoint, model_api: ModelApi
) -> None:
    api = await model_api("openai-chat")
    fake.provider.queue(
        "openai-chat",
        chat_reply("A1."),
        chat_reply("A2."),
        chat_reply("A2 edited."),
        chat_reply("X"),
    )
    chat = await api.new_chat()
    await api.run_turn(chat, "Q1", runId="run_1")
    await api.run_turn(chat, "Q2", runId="run_2", afterRunId="run_1")
    await api.run_turn(chat, "Q2 edited", runId="run_3", afterRunId="run_1")
    await api.run_turn(chat, "Q1 edited", runId="run_4", atTop=True)
    _, _, edited, top = fake.provider.bodies("openai-chat")
    assert _said("openai-chat", edited) == [
        ("user", "Q1"),
        ("assistant", "A1."),
        ("user", "Q2 edited"),
    ], "the replaced prompt and its answer are not sent"
    assert _said("openai-chat", top) == [("user", "Q1 edited")]


async def test_earlier_tool_calls_are_sent_as_calls_when_tools_are_offered_and_as_text_otherwise(
    fake: FakeEndpoint, model_api: ModelApi
) -> None:
    api = await model_api("openai-chat")
    fake.provider.queue(
        "openai-chat",
        chat_reply(call=("calculator", {"expression": "6*7"})),
        chat_reply("It is 42."),
        chat_reply("Sure."),
        chat_reply("Again."),
    )
    chat = await api.new_chat()
    await api.run_turn(chat, "What is 6*7?", toolIntent=True)
    await api.run_turn(chat, "Thanks", toolIntent=True)
    await api.run_turn(chat, "Once more")
    _, _, with_tools, without_tools = fake.provider.bodies("openai-chat")
    roles = [m["role"] for m in with_tools["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant", "user"]
    assert with_tools["messages"][1]["tool_calls"][0]["function"]["name"] == "calculator"
    assert json.loads(with_tools["messages"][2]["content"]) == {"expression": "6*7", "result": 42}
    assert [m["role"] for m in without_tools["messages"]] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    flattened = without_tools["messages"][1]["content"]
    assert flattened.startswith("\n[tool calculator(") and '"result": 42' in flattened
    assert "tools" not in without_tools


async def test_text_attachment_is_inlined_in_the_question(
    fake: FakeEndpoint, model_api: ModelApi
) -> None:
    api = await model_api("openai-chat")
    fake.provider.queue("openai-chat", chat_reply("Read it."))
    form = {"file": ("notes.txt", b"Buy milk\n")}
    response = await api.client.post("/api/attachments", data=_form(form))
    attachment = await response.json()
    chat = await api.new_chat()
    await api.run_turn(chat, "Summarise", attachmentIds=[attachment["attachmentId"]])
    (body,) = fake.provider.bodies("openai-chat")
    assert body["messages"][-1]["content"] == (
        'Summarise\n\n<attachment name="notes.txt" type="text/plain">\nBuy milk\n\n</attachment>'
    )


def _form(files: dict[str, tuple[str, bytes]]) -> Any:
    import aiohttp

    data = aiohttp.FormData()
    for field, (name, content) in files.items():
        data.add_field(field, content, filename=name, content_type="text/plain")
    return data


# --- cancel closes the upstream connection ---------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
async def test_cancel_closes_the_provider_connection_and_the_run_ends_cancelled(
    fake: FakeEndpoint, model_api: ModelApi, kind: Kind
) -> None:
    api = await model_api(kind)
    fake.provider.queue(kind, Reply.fixture(kind, "cut", end="hold"))
    chat = await api.new_chat()
    response = await api.stream(chat, "write a long story", runId="run_slow")
    assert response.status == 200
    await read_events(response, 2)  # user_message_id and the first text
    assert not fake.provider.disconnected.is_set()
    assert await api.cancel("run_slow") == "cancelled"
    await asyncio.wait_for(fake.provider.disconnected.wait(), timeout=CLOSE_GUARD_S)
    events = events_of(await response.read())
    assert events[-1]["type"] == "done" and events[-1]["stopReason"] == "cancelled"
    assert (await api.trace("run_slow"))["generationStopped"] is True


async def test_provider_idle_timeout_fails_the_run_and_closes_the_connection(
    fake: FakeEndpoint, model_api: ModelApi
) -> None:
    api = await model_api("anthropic", idle_timeout_s=0.3)
    fake.provider.queue("anthropic", Reply.fixture("anthropic", "cut", end="hold"))
    chat = await api.new_chat()
    events = await api.run_turn(chat, "hello", runId="run_idle")
    assert_valid_run_stream(events, "run_idle")
    assert (events[-1]["type"], events[-1]["code"]) == ("error", "provider_timeout")
    assert (
        "".join(e["text"] for e in events if e["type"] == "text") == "The first part of the answer"
    )
    assert fake.provider.disconnected.is_set()


# --- refused before the stream: 503 (or 502) and nothing left behind -------------------------

OPENAI_ERROR = {
    "error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit"}
}
# NOTE: every message echoes the key, as providers do for a bad one: it must not reach the page.
ECHO = f"Incorrect API key provided: {TEST_KEY}"
ERRORS: dict[Kind, object] = {
    "openai-chat": {"error": {"message": ECHO, "type": "invalid_request_error", "code": "x"}},
    "openai-responses": {"error": {"message": ECHO, "type": "invalid_request_error"}},
    "anthropic": {"type": "error", "error": {"type": "authentication_error", "message": ECHO}},
    "google": {"error": {"code": 400, "message": ECHO, "status": "INVALID_ARGUMENT"}},
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("status", "answer", "code", "retry_after"),
    [
        pytest.param(429, 503, "model_unavailable", "7", id="rate-limited"),
        pytest.param(401, 503, "model_unavailable", None, id="bad-key"),
        pytest.param(500, 503, "model_unavailable", None, id="provider-down"),
        pytest.param(400, 502, "provider_error", None, id="bad-request"),
    ],
)
async def test_provider_refusing_the_request_answers_before_the_stream_and_stores_nothing(
    fake: FakeEndpoint,
    model_api: ModelApi,
    kind: Kind,
    status: int,
    answer: int,
    code: str,
    retry_after: str | None,
) -> None:
    api = await model_api(kind)
    headers = {"Retry-After": retry_after} if retry_after else {}
    fake.provider.queue(kind, Reply.error(status, ERRORS[kind], **headers))
    chat = await api.new_chat()
    response = await api.stream(chat, "hello", runId="run_refused")
    body = await response.json()
    assert (response.status, body["error"]["code"]) == (answer, code)
    assert response.headers.get("Retry-After") == retry_after
    assert TEST_KEY not in json.dumps(body)
    assert "Incorrect API key provided: ***" in body["error"]["message"]
    detail = await api.json("GET", f"/api/chats/{chat}")
    assert (detail["messages"], detail["title"]) == ([], "New chat")
    await api.json("GET", "/api/runs/run_refused", expect=404)


async def test_unreachable_provider_is_model_unavailable(
    start_server: StartServer, make_api: MakeApi, fake: FakeEndpoint
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed_port = sock.getsockname()[1]
    provider = settings_for("anthropic", f"http://127.0.0.1:{closed_port}")
    api = await make_api("alice", on=await start_server(providers=(provider,)))
    chat = await api.new_chat()
    response = await api.stream(chat, "hello")
    assert response.status == 503
    assert (await response.json())["error"]["code"] == "model_unavailable"


async def test_provider_slower_than_the_first_byte_timeout_is_model_unavailable(
    fake: FakeEndpoint, model_api: ModelApi
) -> None:
    api = await model_api("openai-chat", first_byte_timeout_s=0.2)
    fake.provider.queue("openai-chat", Reply.fixture("openai-chat", "text", wait_s=2.0))
    chat = await api.new_chat()
    response = await api.stream(chat, "hello")
    error = (await response.json())["error"]
    assert (response.status, error["code"]) == (503, "model_unavailable")
    assert "0.2 s" in error["message"]


async def test_model_without_its_key_is_listed_unavailable_and_refused(
    start_server: StartServer, make_api: MakeApi, fake: FakeEndpoint
) -> None:
    provider = settings_for("openai-responses", fake.base_url("openai-responses"))
    provider = provider.model_copy(update={"api_key_env": "RIACHO_TEST_UNSET_KEY"})
    api = await make_api("alice", on=await start_server(providers=(provider,)))
    models = await api.json("GET", "/api/models")
    assert models[0] == {
        "id": MODEL_ID,
        "label": f"{MODEL_ID} (openai-responses)",
        "available": False,
        "unavailableReason": "the environment variable RIACHO_TEST_UNSET_KEY holding the API"
        " key is not set",
        "supportsThinking": True,
        "supportsTools": True,
        "firstEventWaitMs": 15_000,  # the fixture's connect and first-byte timeouts
        "idleWaitMs": 5_000,
    }
    response = await api.stream(await api.new_chat(), "hello")
    error = (await response.json())["error"]
    assert (response.status, error["code"]) == (503, "model_unavailable")
    assert "RIACHO_TEST_UNSET_KEY" in error["message"]
    assert fake.provider.requests == []


async def test_configured_models_come_first_and_the_demo_stays_listed(
    model_api: ModelApi,
) -> None:
    api = await model_api("anthropic", model={"label": "Fake Claude", "supports_tools": False})
    models = await api.json("GET", "/api/models")
    assert models[0] == {
        "id": MODEL_ID,
        "label": "Fake Claude",
        "available": True,
        "unavailableReason": None,
        "supportsThinking": True,
        "supportsTools": False,
        "firstEventWaitMs": 15_000,  # the fixture's connect and first-byte timeouts
        "idleWaitMs": 5_000,
    }
    assert "riacho-demo" in [m["id"] for m in models]


# --- the tool loop ---------------------------------------------------------------------------


async def test_tool_loop_stops_at_its_cap_and_says_so(
    fake: FakeEndpoint, model_api: ModelApi
) -> None:
    api = await model_api("openai-chat", server_changes={"max_model_calls": 2})
    again = chat_reply(call=("calculator", {"expression": "1+1"}))
    fake.provider.queue("openai-chat", again, again, again)
    chat = await api.new_chat()
    events = await api.run_turn(chat, "loop forever", runId="run_cap", toolIntent=True)
    assert_valid_run_stream(events, "run_cap")
    results = [e for e in events if e["type"] == "tool_result"]
    assert [r["toolCallId"] for r in results] == ["call_fake_1", "call_fake_1~2"]
    assert results[0]["result"] == {"expression": "1+1", "result": 2}
    assert results[1]["isError"] is True and "cap of 2" in results[1]["result"]["error"]
    marker = next(e for e in events if e["type"] == "system_event")
    assert marker["kind"] == "tool_loop_exhausted"
    assert (events[-1]["type"], events[-1]["stopReason"]) == ("done", "stop")
    assert len(fake.provider.requests) == 2


async def test_tool_call_with_invalid_json_arguments_is_answered_with_an_error_result(
    fake: FakeEndpoint, model_api: ModelApi
) -> None:
    api = await model_api("openai-chat")
    fake.provider.queue(
        "openai-chat",
        chat_reply(call=("calculator", '{"expression": "2+')),
        chat_reply("Sorry, let me fix that."),
    )
    chat = await api.new_chat()
    events = await api.run_turn(chat, "add", toolIntent=True)
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["isError"] is True
    assert result["result"]["error"].startswith("the arguments are not valid JSON")
    completed = next(e for e in events if e["type"] == "tool_call_completed")
    assert completed["arguments"] == {"expression": "2+"}  # NOTE: best-effort partial parse
    assert events[-1]["type"] == "done"


async def test_image_tool_shows_the_image_and_tells_the_model(
    fake: FakeEndpoint, model_api: ModelApi
) -> None:
    api = await model_api("openai-chat")
    fake.provider.queue(
        "openai-chat",
        chat_reply(call=("generate_image", {"prompt": "a river at dawn"})),
        chat_reply("Here it is."),
    )
    chat = await api.new_chat()
    events = await api.run_turn(chat, "draw", toolIntent=True)
    kinds = [e["type"] for e in events]
    started = kinds.index("image_generation_started")
    assert kinds[started : started + 3] == [
        "image_generation_started",
        "image_generation_completed",
        "tool_result",
    ]
    image = events[started + 1]
    assert image["url"].startswith("data:image/png;base64,")
    _, second = fake.provider.bodies("openai-chat")
    assert json.loads(second["messages"][-1]["content"])["imageId"] == image["imageId"]


async def test_switching_from_the_demo_replays_the_chat_to_the_model(
    fake: FakeEndpoint, model_api: ModelApi
) -> None:
    api = await model_api("openai-chat")
    chat = await api.new_chat()
    demo = await api.run_turn(chat, "hi", modelId="riacho-mini")
    fake.provider.queue("openai-chat", chat_reply("Hello from the model."))
    events = await api.run_turn(chat, "and now?", modelId=MODEL_ID)
    kinds = [e["type"] for e in events]
    assert kinds[1:3] == ["fallback_notice", "continuation_transition"]
    assert events[2]["recovered"] is False
    assert [e["recovered"] for e in events if e["type"] == "continuation_transition"] == [
        False,
        True,
    ]
    demo_text = "".join(e["text"] for e in demo if e["type"] == "text")
    (body,) = fake.provider.bodies("openai-chat")
    assert _said("openai-chat", body)[1] == ("assistant", demo_text)


async def test_chat_reload_shows_the_models_reported_context(
    fake: FakeEndpoint, model_api: ModelApi
) -> None:
    api = await model_api("openai-chat")
    fake.provider.queue("openai-chat", Reply.fixture("openai-chat", "text"))
    chat = await api.new_chat()
    await api.run_turn(chat, "hello")
    detail = await api.json("GET", f"/api/chats/{chat}")
    assert (detail["contextInfo"]["usedTokens"], detail["contextInfo"]["maxTokens"]) == (29, 1000)
    assert detail["messages"][1]["text"] == "Hello! How can I help you today?"
    assert detail["messages"][1]["status"] == "completed"


async def test_provider_silent_past_the_accept_wait_gets_the_stream_opened_and_fails_in_it(
    fake: FakeEndpoint, model_api: ModelApi
) -> None:
    api = await model_api(
        "openai-chat", first_byte_timeout_s=1.0, server_changes={"accept_wait_s": 0.1}
    )
    fake.provider.queue("openai-chat", Reply.fixture("openai-chat", "text", wait_s=3.0))
    chat = await api.new_chat()
    response = await api.stream(chat, "hello", runId="run_late")
    assert response.status == 200
    events = events_of(await response.read())
    assert_valid_run_stream(events, "run_late")
    assert [e["type"] for e in events] == ["user_message_id", "error"]
    assert events[-1]["code"] == "model_unavailable"
    assert (await api.run("run_late"))["status"] == "failed"


async def test_a_later_model_call_refused_by_http_is_a_provider_error_in_the_stream(
    fake: FakeEndpoint, model_api: ModelApi
) -> None:
    api = await model_api("openai-chat")
    fake.provider.queue(
        "openai-chat",
        chat_reply(call=("calculator", {"expression": "1+1"})),
        Reply.error(503, OPENAI_ERROR, **{"Retry-After": "3"}),
    )
    chat = await api.new_chat()
    events = await api.run_turn(chat, "add", runId="run_second_refused", toolIntent=True)
    assert_valid_run_stream(events, "run_second_refused")
    assert [e["type"] for e in events][-2:] == ["tool_result", "error"]
    assert events[-1]["code"] == "provider_error"
    assert "HTTP 503" in events[-1]["error"]


async def test_orphaned_run_closes_the_provider_connection(
    fake: FakeEndpoint, model_api: ModelApi
) -> None:
    api = await model_api("google", server_changes={"orphan_s": 0.2})
    fake.provider.queue("google", Reply.fixture("google", "cut", end="hold"))
    chat = await api.new_chat()
    response = await api.stream(chat, "hello", runId="run_orphan")
    await read_events(response, 2)
    response.close()  # NOTE: the reader leaves; nobody resumes
    await asyncio.wait_for(fake.provider.disconnected.wait(), timeout=CLOSE_GUARD_S)
    await wait_stopped(api.server, "run_orphan")  # NOTE: then its end is persisted
    trace = await api.trace("run_orphan")
    assert (trace["orphaned"], trace["generationStopped"]) == (True, True)
    assert (await api.run("run_orphan"))["status"] == "cancelled"


# --- compaction with a real model --------------------------------------------------------------


async def test_compaction_asks_the_model_for_a_summary_sent_in_place_of_the_earlier_turns(
    fake: FakeEndpoint, model_api: ModelApi
) -> None:
    api = await model_api("openai-chat")
    fake.provider.queue(
        "openai-chat",
        chat_reply("Paris is the capital of France. " * 20),
        chat_reply("We talked about Paris."),
        chat_reply("Yes."),
    )
    chat = await api.new_chat()
    await api.run_turn(chat, "Tell me about Paris")
    before = (await api.json("GET", f"/api/chats/{chat}"))["contextInfo"]["usedTokens"]
    answer = await api.json("POST", f"/api/chats/{chat}/compact")
    assert answer["usedTokensBefore"] == before
    assert answer["usedTokens"] < before
    shown = (await api.json("GET", f"/api/chats/{chat}"))["contextInfo"]["usedTokens"]
    assert shown == answer["usedTokens"]
    await api.run_turn(chat, "Anything else?")
    _, summarise, after = fake.provider.bodies("openai-chat")
    assert _said("openai-chat", summarise)[:2] == [
        ("user", "Tell me about Paris"),
        ("assistant", "Paris is the capital of France. " * 20),
    ]
    assert summarise["messages"][-1]["content"].startswith("Summarise our conversation so far")
    assert _said("openai-chat", after) == [
        (
            "user",
            "A summary of our conversation before this point:\n"
            "We talked about Paris.\n\nAnything else?",
        )
    ]


async def test_compaction_the_model_refuses_changes_nothing(
    fake: FakeEndpoint, model_api: ModelApi
) -> None:
    api = await model_api("openai-chat")
    fake.provider.queue(
        "openai-chat",
        chat_reply("An answer."),
        Reply.error(429, OPENAI_ERROR, **{"Retry-After": "9"}),
    )
    chat = await api.new_chat()
    await api.run_turn(chat, "Question")
    response = await api.client.post(f"/api/chats/{chat}/compact")
    assert (response.status, response.headers.get("Retry-After")) == (503, "9")
    assert (await response.json())["error"]["code"] == "model_unavailable"
    fake.provider.queue("openai-chat", chat_reply("Next."))
    await api.run_turn(chat, "Next question")
    assert [role for role, _ in _said("openai-chat", fake.provider.bodies("openai-chat")[-1])] == [
        "user",
        "assistant",
        "user",
    ]
