"""The second request of a turn, and the first of the next turn, as each provider documents them.

A thinking model that calls a tool is asked again in the same turn (the tool loop), and again
when the user writes next (from stored history). Each provider refuses some histories:

- Chat Completions (DeepSeek thinking mode): an assistant message of a turn that called tools
  must carry its reasoning, under the field it arrived in (``reasoning_content``; vLLM's
  ``reasoning``), or the request is a 400 "Missing `reasoning_content` field".
- Anthropic with thinking: in the current assistant turn, an assistant message with
  ``tool_use`` starts with its thinking block, signature unchanged.
- Gemini 3: a ``functionCall`` part comes back with its ``thoughtSignature``.
- Responses: the reasoning item (id, summary, encrypted content) comes back before its
  function call.

Each case answers a thinking tool call, then the final answer, then the next turn's answer;
the validators below check the second and third requests against those rules. A turn whose
tool loop was cut (the cap) is closed before the next prompt, on every provider.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.provider_fake import Kind, Reply
from tests.server.conftest import (
    MODEL_ID,
    FakeEndpoint,
    MakeApi,
    ModelApi,
    StartServer,
    provider_settings,
)
from tests.server.helpers import JsonObject

FIXTURE = {
    "openai-chat": "reasoning_tool_call",
    "openai-responses": "reasoning_tool_call",
    "anthropic": "thinking_tool_call",
    "google": "thinking_tool_call",
}


def _chat_rules(body: JsonObject, reasoning_field: str = "reasoning_content") -> None:
    messages = body["messages"]
    calling = [m for m in messages if m["role"] == "assistant" and m.get("tool_calls")]
    assert calling, "the tool call is sent back"
    for message in calling:
        assert message[reasoning_field].startswith(("The user wants", "Need the calculator"))
        for call in message["tool_calls"]:
            assert len(call["id"]) <= 40
            answered = [m for m in messages if m.get("tool_call_id") == call["id"]]
            assert len(answered) == 1, "each call has its result"


def _anthropic_rules(body: JsonObject) -> None:
    messages = body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant"] * (len(messages) // 2) + [
        "user"
    ] * (len(messages) % 2), "roles alternate, from the user"
    for i, message in enumerate(messages):
        uses = [b["id"] for b in message["content"] if b["type"] == "tool_use"]
        if uses:
            results = [b["tool_use_id"] for b in messages[i + 1]["content"]]
            assert results[: len(uses)] == uses, "every tool_use answered first thing"
    current = _current_assistant_turn(messages)
    for message in current:
        if any(b["type"] == "tool_use" for b in message["content"]):
            assert message["content"][0]["type"] == "thinking"
            assert message["content"][0]["signature"].startswith("EqQB")


def _current_assistant_turn(messages: list[JsonObject]) -> list[JsonObject]:
    """The assistant messages after the last user message that is more than tool results."""
    last_prompt = max(
        i
        for i, m in enumerate(messages)
        if m["role"] == "user" and any(b["type"] != "tool_result" for b in m["content"])
    )
    return [m for m in messages[last_prompt:] if m["role"] == "assistant"]


def _gemini_rules(body: JsonObject) -> None:
    calls = [
        part
        for content in body["contents"]
        if content["role"] == "model"
        for part in content["parts"]
        if "functionCall" in part
    ]
    assert calls and all(part.get("thoughtSignature") for part in calls)


def _responses_rules(body: JsonObject) -> None:
    items = body["input"]
    at = next(i for i, item in enumerate(items) if item.get("type") == "function_call")
    reasoning = items[at - 1]
    assert reasoning["type"] == "reasoning" and reasoning["id"] == "rs_0c1d2e3f4a5b6c7d0001"
    assert reasoning["encrypted_content"].startswith("gAAAAA")
    output = next(i for i in items if i.get("type") == "function_call_output")
    assert output["call_id"] == items[at]["call_id"]


RULES: dict[Kind, Callable[[JsonObject], None]] = {
    "openai-chat": _chat_rules,
    "openai-responses": _responses_rules,
    "anthropic": _anthropic_rules,
    "google": _gemini_rules,
}


@pytest.mark.parametrize("kind", list(FIXTURE))
async def test_the_tool_loop_and_the_next_turn_send_what_the_provider_requires(
    fake: FakeEndpoint, model_api: ModelApi, kind: Kind
) -> None:
    api = await model_api(kind)
    text = Reply.fixture(kind, "text")
    fake.provider.queue(kind, Reply.fixture(kind, FIXTURE[kind]), text, Reply.fixture(kind, "text"))
    chat = await api.new_chat()
    first = await api.run_turn(chat, "12*34?", toolIntent=True, thinkingEnabled=True)
    assert first[-1]["type"] == "done", first[-1]
    second = await api.run_turn(chat, "And half of it?", toolIntent=True, thinkingEnabled=True)
    assert second[-1]["type"] == "done", second[-1]
    _, in_loop, next_turn = fake.provider.bodies(kind)
    RULES[kind](in_loop)
    RULES[kind](next_turn)
    if kind == "anthropic":  # NOTE: kept with the answer, though a past turn may go without
        assert next_turn["messages"][1]["content"][0]["type"] == "thinking"


@pytest.mark.parametrize(
    ("fixture", "field"),
    [
        pytest.param("reasoning_tool_call", "reasoning_content", id="deepseek"),
        pytest.param("reasoning_field_tool_call", "reasoning", id="vllm"),
    ],
)
async def test_chat_reasoning_goes_back_under_the_field_it_came_in(
    fake: FakeEndpoint, model_api: ModelApi, fixture: str, field: str
) -> None:
    api = await model_api("openai-chat")
    text = Reply.fixture("openai-chat", "text")
    fake.provider.queue("openai-chat", Reply.fixture("openai-chat", fixture), text, text)
    chat = await api.new_chat()
    await api.run_turn(chat, "12*34?", toolIntent=True, thinkingEnabled=True)
    await api.run_turn(chat, "Thanks", toolIntent=True, thinkingEnabled=True)
    _, in_loop, next_turn = fake.provider.bodies("openai-chat")
    for body in (in_loop, next_turn):
        _chat_rules(body, field)
        other = {"reasoning", "reasoning_content"} - {field}
        assert not any(other & set(m) for m in body["messages"])


async def test_chat_reasoning_of_a_turn_without_tool_calls_is_not_sent_back(
    fake: FakeEndpoint, model_api: ModelApi
) -> None:
    # NOTE: DeepSeek's reasoner refuses reasoning_content in the messages it is sent, except
    # in a turn that called tools (where thinking mode requires it)
    api = await model_api("openai-chat")
    fake.provider.queue(
        "openai-chat",
        Reply.fixture("openai-chat", "thinking"),
        Reply.fixture("openai-chat", "text"),
    )
    chat = await api.new_chat()
    await api.run_turn(chat, "hi", thinkingEnabled=True)
    await api.run_turn(chat, "and again", thinkingEnabled=True)
    _, next_turn = fake.provider.bodies("openai-chat")
    answer = next(m for m in next_turn["messages"] if m["role"] == "assistant")
    assert answer["content"] == "Hi there! How can I help?"
    assert not {"reasoning", "reasoning_content"} & set(answer)


@pytest.mark.parametrize("kind", list(FIXTURE))
async def test_a_turn_cut_after_its_tool_call_is_closed_before_the_next_prompt(
    fake: FakeEndpoint, model_api: ModelApi, kind: Kind
) -> None:
    api = await model_api(kind, server_changes={"max_model_calls": 1})
    fake.provider.queue(kind, Reply.fixture(kind, FIXTURE[kind]), Reply.fixture(kind, "text"))
    chat = await api.new_chat()
    first = await api.run_turn(chat, "12*34?", toolIntent=True, thinkingEnabled=True)
    assert any(e["type"] == "system_event" for e in first), "the loop was cut at its cap"
    await api.run_turn(chat, "Go on", toolIntent=True, thinkingEnabled=True)
    _, next_turn = fake.provider.bodies(kind)
    said = _said(kind, next_turn)
    assert said[-2:] == [
        ("assistant", "(The tool steps above ended here, without a final answer.)"),
        ("user", "Go on"),
    ]
    RULES[kind](next_turn)


def _said(kind: Kind, body: JsonObject) -> list[tuple[str, str]]:
    """(role, text) of each message's text, in order."""
    if kind == "openai-chat":
        return [
            (m["role"], m["content"]) for m in body["messages"] if isinstance(m.get("content"), str)
        ]
    if kind == "anthropic":
        return [
            (m["role"], b["text"])
            for m in body["messages"]
            for b in m["content"]
            if b["type"] == "text"
        ]
    if kind == "google":
        return [
            ("assistant" if c["role"] == "model" else "user", p["text"])
            for c in body["contents"]
            for p in c["parts"]
            if "text" in p and not p.get("thought")
        ]
    return [_responses_said(item) for item in body["input"] if item.get("role")]


def _responses_said(item: JsonObject) -> tuple[str, str]:
    content: Any = item["content"]
    if isinstance(content, str):
        return item["role"], content
    return item["role"], "".join(c.get("text", "") for c in content)


async def test_a_step_made_by_another_model_goes_plain_and_the_trace_says_so(
    fake: FakeEndpoint, start_server: StartServer, make_api: MakeApi
) -> None:
    claude = provider_settings("anthropic", fake.base_url("anthropic"), model={"id": "claude-x"})
    chat_model = provider_settings("openai-chat", fake.base_url("openai-chat"))
    api = await make_api("alice", on=await start_server(providers=(claude, chat_model)))
    fake.provider.queue(
        "anthropic",
        Reply.fixture("anthropic", "thinking_tool_call"),
        Reply.fixture("anthropic", "text"),
    )
    fake.provider.queue("openai-chat", Reply.fixture("openai-chat", "text"))
    chat = await api.new_chat()
    fields = {"toolIntent": True, "thinkingEnabled": True}
    await api.run_turn(chat, "12*34?", modelId="claude-x", **fields)
    await api.run_turn(chat, "And half?", modelId=MODEL_ID, runId="run_switched", **fields)
    (body,) = fake.provider.bodies("openai-chat")
    _chat_rules_without_reasoning(body)
    notes = (await api.trace("run_switched"))["historyNotes"]
    assert notes and all("claude-x" in note and "another model" in note for note in notes)


def _chat_rules_without_reasoning(body: JsonObject) -> None:
    calling = [m for m in body["messages"] if m.get("tool_calls")]
    assert [c["id"] for m in calling for c in m["tool_calls"]] == ["toolu_01Q8mZt3Lr5V"]
    assert not any("thinking" in json.dumps(m) for m in calling), "Claude's thinking stays home"
    assert [m["tool_call_id"] for m in body["messages"] if m["role"] == "tool"] == [
        "toolu_01Q8mZt3Lr5V"
    ]


async def test_anthropic_gets_no_thinking_blocks_once_thinking_is_off(
    fake: FakeEndpoint, model_api: ModelApi
) -> None:
    api = await model_api("anthropic")
    text = Reply.fixture("anthropic", "text")
    fake.provider.queue("anthropic", Reply.fixture("anthropic", "thinking_tool_call"), text, text)
    chat = await api.new_chat()
    await api.run_turn(chat, "12*34?", toolIntent=True, thinkingEnabled=True)
    await api.run_turn(chat, "Thanks", toolIntent=True, thinkingEnabled=False)
    *_, plain = fake.provider.bodies("anthropic")
    assert "thinking" not in plain
    blocks = [b["type"] for m in plain["messages"] for b in m["content"]]
    assert "thinking" not in blocks and "tool_use" in blocks
    _anthropic_rules(plain)
