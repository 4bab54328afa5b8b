"""Each provider's native stream, through its official SDK, becomes the exact contract events.

The fake provider replays recorded native streams (``tests/provider_streams``); the reference
server talks to it through the real adapter, the agentic loop and ``/api/respond/stream``.
Every case asserts the shape of the events (runs of one type collapsed), the text and thinking
byte for byte, each tool call, and the ending.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.provider_fake import Kind, Reply
from tests.server.conftest import FakeEndpoint, ModelApi
from tests.server.helpers import JsonObject, assert_valid_run_stream


@dataclass(frozen=True)
class Expected:
    """What the contract stream of one native stream must be."""

    shape: list[str]
    text: str = ""
    thinking: str = ""
    calls: list[tuple[str, str, JsonObject]] = field(default_factory=list)  # name, text, args
    end: tuple[str, str] = ("done", "stop")  # ("done", stopReason) or ("error", code)
    used_tokens: int | None = None


TEXT = ["user_message_id", "text", "context_info", "done"]
THINK = ["user_message_id", "thinking_start", "thinking", "text", "context_info", "done"]
CUT = ["user_message_id", "text", "error"]
FAIL = ["user_message_id", "error"]
CALL = [
    "user_message_id",
    "tool_call_started",
    "tool_call_arguments_delta",
    "tool_call_completed",
    "tool_result",
]

CASES: list[Any] = [
    # --- OpenAI-compatible Chat Completions -------------------------------------------------
    pytest.param(
        "openai-chat",
        "text",
        Expected(TEXT, text="Hello! How can I help you today?", used_tokens=29),
        id="chat-text",
    ),
    pytest.param(
        "openai-chat",
        "thinking",
        Expected(
            THINK,
            text="Hi there! How can I help?",
            thinking="Okay, the user says hi. I should greet back.",
            used_tokens=31,
        ),
        id="chat-reasoning_content",
    ),
    pytest.param(
        "openai-chat",
        "reasoning",
        Expected(
            THINK,
            text="Hello! What can I do for you?",
            thinking="Okay, a greeting. Reply briefly.",
            used_tokens=53,
        ),
        id="chat-reasoning",
    ),
    pytest.param(
        "openai-chat",
        "length",
        Expected(TEXT, text="Once upon a time, in a land", end=("done", "length"), used_tokens=22),
        id="chat-length",
    ),
    pytest.param(
        "openai-chat",
        "content_filter",
        Expected(CUT, text="Sure, here is", end=("error", "provider_refused")),
        id="chat-content-filter",
    ),
    pytest.param(
        "openai-chat",
        "error_chunk",
        Expected(CUT, text="The answer is", end=("error", "provider_error")),
        id="chat-error-chunk",
    ),
    pytest.param(
        "openai-chat",
        "cut",
        Expected(CUT, text="Partial answer that gets", end=("error", "provider_disconnected")),
        id="chat-connection-cut",
    ),
    pytest.param(
        "openai-chat",
        "malformed",
        Expected(CUT, text="Hi", end=("error", "provider_error")),
        id="chat-malformed-json",
    ),
    pytest.param(
        "openai-chat",
        "abort",
        Expected(
            CUT, text="The Amazon is the largest river on Earth", end=("error", "provider_error")
        ),
        id="chat-vllm-abort-is-never-complete",
    ),
    pytest.param(
        "openai-chat",
        "finish_error",
        Expected(CUT, text="Half of", end=("error", "provider_error")),
        id="chat-finish-reason-error",
    ),
    pytest.param(
        "openai-chat",
        "refusal",
        Expected(
            CUT, text="I'm sorry, but I can't assist with that.", end=("error", "provider_refused")
        ),
        id="chat-refusal-words-kept-and-refused",
    ),
    # --- OpenAI Responses -------------------------------------------------------------------
    pytest.param(
        "openai-responses",
        "text",
        Expected(TEXT, text="Hello! How can I help you today?", used_tokens=37),
        id="responses-text",
    ),
    pytest.param(
        "openai-responses",
        "thinking",
        Expected(
            THINK,
            text="17 + 25 = 42.",
            thinking="**Computing the sum**\n\nThe user asks for 17 + 25, which is 42.",
            used_tokens=181,
        ),
        id="responses-reasoning-summary",
    ),
    pytest.param(
        "openai-responses",
        "refusal",
        Expected(
            CUT, text="I'm sorry, but I can't help with that.", end=("error", "provider_refused")
        ),
        id="responses-refusal-words-kept-and-refused",
    ),
    pytest.param(
        "openai-responses",
        "reasoning_text",
        Expected(
            THINK,
            text="6 \u00d7 7 = 42.",
            thinking="The user asks for 6 times 7. That is 42.",
            used_tokens=104,
        ),
        id="responses-raw-reasoning-text-gpt-oss",
    ),
    pytest.param(
        "openai-responses",
        "incomplete_other",
        Expected(CUT, text="Once upon a time, in a land", end=("error", "provider_error")),
        id="responses-incomplete-for-another-reason",
    ),
    pytest.param(
        "openai-responses",
        "length",
        Expected(TEXT, text="Once upon a time, in a land", end=("done", "length"), used_tokens=36),
        id="responses-incomplete-max-output-tokens",
    ),
    pytest.param(
        "openai-responses",
        "content_filter",
        Expected(CUT, text="Sure, here is", end=("error", "provider_refused")),
        id="responses-incomplete-content-filter",
    ),
    pytest.param(
        "openai-responses",
        "failed",
        Expected(CUT, text="The answer is", end=("error", "provider_error")),
        id="responses-failed",
    ),
    pytest.param(
        "openai-responses",
        "error_event",
        Expected(FAIL, end=("error", "provider_error")),
        id="responses-error-event",
    ),
    pytest.param(
        "openai-responses",
        "error_event_nested",
        Expected(FAIL, end=("error", "provider_error")),
        id="responses-error-event-nested",
    ),
    pytest.param(
        "openai-responses",
        "unknown",
        Expected(TEXT, text="ok", used_tokens=6),
        id="responses-unknown-event-ignored",
    ),
    pytest.param(
        "openai-responses",
        "cut",
        Expected(CUT, text="Partial answer before the", end=("error", "provider_disconnected")),
        id="responses-connection-cut",
    ),
    # --- Anthropic Messages -----------------------------------------------------------------
    pytest.param(
        "anthropic",
        "text",
        Expected(TEXT, text="Hello! How can I help you today?", used_tokens=25 + 1280 + 12),
        id="anthropic-text-cached-input-counts",
    ),
    pytest.param(
        "anthropic",
        "thinking",
        Expected(
            THINK,
            text="27 \u00d7 453 = **12,231**.",
            thinking="The user asks for 27 * 453. 27 * 400 = 10800, 27 * 53 = 1431. Sum: 12231.",
            used_tokens=135,
        ),
        id="anthropic-thinking",
    ),
    pytest.param(
        "anthropic",
        "length",
        Expected(
            TEXT,
            text="Once upon a time, in a land far away, there",
            end=("done", "length"),
            used_tokens=35,
        ),
        id="anthropic-max-tokens",
    ),
    pytest.param(
        "anthropic",
        "refusal",
        Expected(CUT, text="I can't help with that.", end=("error", "provider_refused")),
        id="anthropic-refusal",
    ),
    pytest.param(
        "anthropic",
        "unknown_stop",
        Expected(
            CUT, text="Once upon a time, in a land far away, there", end=("error", "provider_error")
        ),
        id="anthropic-unknown-stop-reason",
    ),
    pytest.param(
        "anthropic",
        "error_event",
        Expected(CUT, text="Let me think about this", end=("error", "provider_error")),
        id="anthropic-error-event",
    ),
    pytest.param(
        "anthropic",
        "cut",
        Expected(CUT, text="The first part of the answer", end=("error", "provider_disconnected")),
        id="anthropic-connection-cut",
    ),
    # --- Gemini -----------------------------------------------------------------------------
    pytest.param(
        "google",
        "text",
        Expected(
            TEXT,
            text="The capital of France is Paris. It is known for the Eiffel Tower.",
            used_tokens=25,
        ),
        id="gemini-text",
    ),
    pytest.param(
        "google",
        "thinking",
        Expected(
            THINK,
            text="17 \u00d7 23 = **391**.",
            thinking=(
                "**Calculating the product**\n\nThe user wants 17 * 23. "
                "17 * 20 = 340 and 17 * 3 = 51, so 391."
            ),
            used_tokens=12 + 9 + 74,
        ),
        id="gemini-thought-parts",
    ),
    pytest.param(
        "google",
        "length",
        Expected(
            TEXT,
            text="Once upon a time, in a kingdom by the sea, there lived a",
            end=("done", "length"),
            used_tokens=23,
        ),
        id="gemini-max-tokens",
    ),
    pytest.param(
        "google",
        "other",
        Expected(
            CUT,
            text="Once upon a time, in a kingdom by the sea, there lived a",
            end=("error", "provider_error"),
        ),
        id="gemini-finish-reason-other",
    ),
    pytest.param(
        "google",
        "safety",
        Expected(CUT, text="Here is some general information", end=("error", "provider_refused")),
        id="gemini-safety",
    ),
    pytest.param(
        "google",
        "prompt_blocked",
        Expected(FAIL, end=("error", "provider_refused")),
        id="gemini-prompt-blocked",
    ),
    pytest.param(
        "google",
        "malformed_call",
        Expected(FAIL, end=("error", "provider_refused")),
        id="gemini-malformed-function-call",
    ),
    pytest.param(
        "google",
        "error_chunk",
        Expected(CUT, text="Partial answer before the", end=("error", "provider_error")),
        id="gemini-error-object",
    ),
    pytest.param(
        "google",
        "cut",
        Expected(
            CUT,
            text="This answer will be cut off in the mid",
            end=("error", "provider_disconnected"),
        ),
        id="gemini-connection-cut",
    ),
]


def shape(events: list[JsonObject]) -> list[str]:
    """The event types with runs of one type collapsed."""
    return [kind for kind, _ in itertools.groupby(e["type"] for e in events)]


def joined(events: list[JsonObject], kind: str, key: str = "text") -> str:
    return "".join(str(e[key]) for e in events if e["type"] == kind)


def assert_matches(events: list[JsonObject], expected: Expected) -> None:
    assert shape(events) == expected.shape
    assert joined(events, "text") == expected.text
    assert joined(events, "thinking") == expected.thinking
    last = events[-1]
    assert (last["type"], last.get("stopReason") or last.get("code")) == expected.end
    usage = [e["usedTokens"] for e in events if e["type"] == "context_info"]
    assert usage == ([] if expected.used_tokens is None else [expected.used_tokens])


@pytest.mark.parametrize(("kind", "fixture", "expected"), CASES)
async def test_native_stream_becomes_contract_events(
    fake: FakeEndpoint, model_api: ModelApi, kind: Kind, fixture: str, expected: Expected
) -> None:
    api = await model_api(kind)
    end = "abort" if fixture == "cut" else "eof"
    fake.provider.queue(kind, Reply.fixture(kind, fixture, end=end))
    chat = await api.new_chat()
    events = await api.run_turn(chat, "hello", runId=f"run_{kind}_{fixture}", thinkingEnabled=True)
    assert_valid_run_stream(events, f"run_{kind}_{fixture}")
    assert_matches(events, expected)
    status = "completed" if expected.end[0] == "done" else "failed"
    assert (await api.run(f"run_{kind}_{fixture}"))["status"] == status


# --- Tool calls: arguments in fragments, the result, and the second request -----------------

TOOL_CASES = [
    pytest.param(
        "openai-chat",
        "call_DdmO9pD3xa9XTPNJ32zg2hcA",
        '{"expression":"(12 + 30) * 2"}',
        {"expression": "(12 + 30) * 2", "result": 84},
        id="chat",
    ),
    pytest.param(
        "openai-responses",
        "call_Xk4d9QpL2mN7rT0vB3sW|fc_2c3d4e5f60718293cc01",
        '{"expression":"(17+25)*3"}',
        {"expression": "(17+25)*3", "result": 126},
        id="responses",
    ),
    pytest.param(
        "anthropic",
        "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
        '{"expression": "1234 * 5678"}',
        {"expression": "1234 * 5678", "result": 7006652},
        id="anthropic",
    ),
    pytest.param(
        "google",
        "gemini_call_1",
        '{"expression": "17 * 23", "precision": 2}',
        {"expression": "17 * 23", "result": 391},
        id="gemini-whole-call-as-one-delta",
    ),
]


@pytest.mark.parametrize(("kind", "call_id", "arguments_text", "result"), TOOL_CASES)
async def test_tool_call_streams_runs_and_returns_its_result_to_the_model(
    fake: FakeEndpoint,
    model_api: ModelApi,
    kind: Kind,
    call_id: str,
    arguments_text: str,
    result: JsonObject,
) -> None:
    api = await model_api(kind)
    fake.provider.queue(kind, Reply.fixture(kind, "tool_call"), Reply.fixture(kind, "text"))
    chat = await api.new_chat()
    events = await api.run_turn(chat, "compute it", runId="run_tool", toolIntent=True)
    assert_valid_run_stream(events, "run_tool")
    tool_events = [e for e in events if e.get("toolCallId") is not None]
    assert shape(tool_events) == CALL[1:]
    assert {e["toolCallId"] for e in tool_events} == {call_id}
    assert joined(tool_events, "tool_call_arguments_delta", "delta") == arguments_text
    completed = next(e for e in tool_events if e["type"] == "tool_call_completed")
    assert (completed["toolName"], completed["arguments"]) == (
        "calculator",
        json.loads(arguments_text),
    )
    assert tool_events[-1]["result"] == result and tool_events[-1]["isError"] is False
    assert events[-1]["stopReason"] == "stop"
    first, second = fake.provider.bodies(kind)
    assert TOOL_NAMES[kind](first) == ["calculator", "current_time", "generate_image"]
    assert TOOL_RESULT_SENT[kind](second, call_id) == result


def _chat_tools(body: JsonObject) -> list[str]:
    return [tool["function"]["name"] for tool in body["tools"]]


def _named_tools(body: JsonObject) -> list[str]:
    return [tool["name"] for tool in body["tools"]]


def _gemini_tools(body: JsonObject) -> list[str]:
    return [d["name"] for d in body["tools"][0]["functionDeclarations"]]


TOOL_NAMES = {
    "openai-chat": _chat_tools,
    "openai-responses": _named_tools,
    "anthropic": _named_tools,
    "google": _gemini_tools,
}


def _chat_result(body: JsonObject, call_id: str) -> Any:
    call_message, result_message = body["messages"][-2:]
    assert call_message["role"] == "assistant"
    assert [c["id"] for c in call_message["tool_calls"]] == [call_id]
    assert result_message["role"] == "tool" and result_message["tool_call_id"] == call_id
    return json.loads(result_message["content"])


def _responses_result(body: JsonObject, call_id: str) -> Any:
    call_item, output_item = body["input"][-2:]
    native_call_id = call_id.split("|")[0]
    assert (call_item["type"], call_item["call_id"]) == ("function_call", native_call_id)
    assert (output_item["type"], output_item["call_id"]) == ("function_call_output", native_call_id)
    return json.loads(output_item["output"])


def _anthropic_result(body: JsonObject, call_id: str) -> Any:
    assistant, user = body["messages"][-2:]
    assert assistant["role"] == "assistant"
    assert [b["type"] for b in assistant["content"]] == ["text", "tool_use"]
    assert assistant["content"][1]["id"] == call_id
    (block,) = user["content"]
    assert (block["type"], block["tool_use_id"], block["is_error"]) == (
        "tool_result",
        call_id,
        False,
    )
    return json.loads(block["content"])


def _gemini_result(body: JsonObject, _call_id: str) -> Any:
    model, user = body["contents"][-2:]
    assert model["role"] == "model"
    (part,) = model["parts"]
    assert part["functionCall"]["name"] == "calculator"
    assert "thoughtSignature" in part  # NOTE: replayed as received, as Gemini requires.
    (response,) = user["parts"]
    assert response["functionResponse"]["name"] == "calculator"
    return response["functionResponse"]["response"]


TOOL_RESULT_SENT = {
    "openai-chat": _chat_result,
    "openai-responses": _responses_result,
    "anthropic": _anthropic_result,
    "google": _gemini_result,
}


def _anthropic(events: list[JsonObject]) -> Reply:
    """A native Anthropic stream from its events (``event:`` line + ``data:``)."""
    lines = [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events]
    return Reply(stream="".join(lines).encode())


def _block(index: int, block: JsonObject, *deltas: JsonObject) -> list[JsonObject]:
    return [
        {"type": "content_block_start", "index": index, "content_block": block},
        *({"type": "content_block_delta", "index": index, "delta": d} for d in deltas),
        {"type": "content_block_stop", "index": index},
    ]


async def test_anthropic_thinking_signature_is_replayed_in_the_tool_loop(
    fake: FakeEndpoint, model_api: ModelApi
) -> None:
    api = await model_api("anthropic")
    usage = {"input_tokens": 10, "output_tokens": 1}
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "m",
            "content": [],
            "usage": usage,
        },
    }
    thought = _block(
        0,
        {"type": "thinking", "thinking": "", "signature": ""},
        {"type": "thinking_delta", "thinking": "Use the calculator."},
        {"type": "signature_delta", "signature": "c2lnbmF0dXJl"},
    )
    call = _block(
        1,
        {"type": "tool_use", "id": "toolu_1", "name": "calculator", "input": {}},
        {"type": "input_json_delta", "partial_json": '{"expression": '},
        {"type": "input_json_delta", "partial_json": '"3*3"}'},
    )
    end = [
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 9},
        },
        {"type": "message_stop"},
    ]
    fake.provider.queue(
        "anthropic", _anthropic([start, *thought, *call, *end]), Reply.fixture("anthropic", "text")
    )
    chat = await api.new_chat()
    events = await api.run_turn(chat, "3*3?", toolIntent=True, thinkingEnabled=True)
    assert shape(events)[:3] == ["user_message_id", "thinking_start", "thinking"]
    first, second = fake.provider.bodies("anthropic")
    assert first["thinking"] == {"type": "enabled", "budget_tokens": 8192}
    assert first["max_tokens"] == 8192 + 8192
    assert second["messages"][-2]["content"] == [
        {"type": "thinking", "thinking": "Use the calculator.", "signature": "c2lnbmF0dXJl"},
        {"type": "tool_use", "id": "toolu_1", "name": "calculator", "input": {"expression": "3*3"}},
    ]


# --- Chat Completions edges: calls by id, a late name, the legacy call, a JSON 200 ------------

CHAT_TOOL_EDGES = [
    pytest.param(
        "two_calls_index_0",
        [
            ("call_k2x9a1", '{"expression":"1+1"}', {"expression": "1+1", "result": 2}),
            ("call_p7q3m0", '{"expression":"2+2"}', {"expression": "2+2", "result": 4}),
        ],
        id="two-whole-calls-both-index-0-are-two-calls",
    ),
    pytest.param(
        "late_name",
        [("call_latename01", '{"expression":"3*3"}', {"expression": "3*3", "result": 9})],
        id="started-only-once-the-name-is-known",
    ),
    pytest.param(
        "legacy_function_call",
        [("call_1", '{"expression":"6 * 7"}', {"expression": "6 * 7", "result": 42})],
        id="legacy-function-call-is-a-call",
    ),
]


@pytest.mark.parametrize(("fixture", "calls"), CHAT_TOOL_EDGES)
async def test_chat_tool_calls_are_told_apart_by_id_and_named_when_they_start(
    fake: FakeEndpoint,
    model_api: ModelApi,
    fixture: str,
    calls: list[tuple[str, str, JsonObject]],
) -> None:
    api = await model_api("openai-chat")
    fake.provider.queue(
        "openai-chat", Reply.fixture("openai-chat", fixture), Reply.fixture("openai-chat", "text")
    )
    events = await api.run_turn(await api.new_chat(), "compute", runId="run_e", toolIntent=True)
    assert_valid_run_stream(events, "run_e")
    started = [e for e in events if e["type"] == "tool_call_started"]
    assert [(e["toolCallId"], e["toolName"]) for e in started] == [
        (call_id, "calculator") for call_id, _, _ in calls
    ]
    for call_id, arguments_text, result in calls:
        mine = [e for e in events if e.get("toolCallId") == call_id]
        assert shape(mine) == CALL[1:]
        assert joined(mine, "tool_call_arguments_delta", "delta") == arguments_text
        assert mine[-1]["result"] == result
    assert events[-1]["stopReason"] == "stop"
    second = fake.provider.bodies("openai-chat")[1]
    sent = next(m for m in second["messages"] if m.get("tool_calls"))
    assert [c["id"] for c in sent["tool_calls"]] == [call_id for call_id, _, _ in calls]


async def test_an_unknown_finish_reason_is_an_error_that_names_it(
    fake: FakeEndpoint, model_api: ModelApi
) -> None:
    api = await model_api("openai-chat")
    fake.provider.queue("openai-chat", Reply.fixture("openai-chat", "abort"))
    events = await api.run_turn(await api.new_chat(), "hello", runId="run_abort")
    assert events[-1]["code"] == "provider_error" and "'abort'" in events[-1]["error"]
    chat = await api.json("GET", f"/api/chats/{(await api.run('run_abort'))['chatId']}")
    answer = chat["messages"][-1]
    assert (answer["status"], answer["text"]) == (
        "failed",
        "The Amazon is the largest river on Earth",
    )


@pytest.mark.parametrize(
    ("body", "words"),
    [
        pytest.param({"error": {"message": "model not loaded"}}, "model not loaded", id="object"),
        pytest.param({"error": "no slot available"}, "no slot available", id="string"),
    ],
)
@pytest.mark.parametrize("kind", ["openai-chat", "openai-responses", "anthropic", "google"])
async def test_a_200_that_is_not_an_event_stream_is_an_error_with_the_servers_words(
    fake: FakeEndpoint, model_api: ModelApi, kind: Kind, body: JsonObject, words: str
) -> None:
    api = await model_api(kind)
    fake.provider.queue(kind, Reply.error(200, body))
    response = await api.stream(await api.new_chat(), "hello")
    error = (await response.json())["error"]
    assert (response.status, error["code"]) == (502, "provider_error")
    assert words in error["message"]
