"""The demo model: a valid, deterministic run with thinking, tools, images and context."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from tests.server.helpers import Api, JsonObject, assert_valid_run_stream


def types(events: list[JsonObject]) -> list[str]:
    return [event["type"] for event in events]


def answer_text(events: list[JsonObject]) -> str:
    return "".join(event["text"] for event in events if event["type"] == "text")


async def test_plain_turn_is_a_valid_stream_of_markdown(api: Api) -> None:
    chat_id = await api.new_chat()
    events = await api.run_turn(chat_id, "hello", runId="run_plain")
    assert_valid_run_stream(events, "run_plain")
    assert types(events)[0] == "user_message_id"
    assert types(events)[-2:] == ["context_info", "done"]
    assert events[-1]["stopReason"] == "stop"
    text = answer_text(events)
    for marker in ("## ", "- ", "| --- |".replace(" --- ", "---"), "```"):
        assert marker in text, marker


async def test_same_prompt_gives_the_same_answer(api: Api) -> None:
    first = answer_text(await api.run_turn(await api.new_chat(), "same words"))
    second = answer_text(await api.run_turn(await api.new_chat(), "same words"))
    assert first == second


@pytest.mark.parametrize(
    ("effort", "minimum_words"),
    [pytest.param("low", 5, id="low"), pytest.param("high", 30, id="high")],
)
async def test_thinking_comes_first_and_grows_with_effort(
    api: Api, effort: str, minimum_words: int
) -> None:
    events = await api.run_turn(
        await api.new_chat(), "why", thinkingEnabled=True, reasoningEffort=effort
    )
    kinds = types(events)
    assert kinds[1] == "thinking_start" and kinds.index("thinking") < kinds.index("text")
    thinking = "".join(e["text"] for e in events if e["type"] == "thinking")
    assert len(thinking.split()) >= minimum_words


async def test_thinking_is_longer_with_higher_effort(api: Api) -> None:
    lengths = []
    for effort in ("low", "medium", "high"):
        events = await api.run_turn(
            await api.new_chat(), "why", thinkingEnabled=True, reasoningEffort=effort
        )
        thinking = "".join(e["text"] for e in events if e["type"] == "thinking")
        lengths.append(len(thinking.split()))
    assert lengths == sorted(lengths) and lengths[0] < lengths[2]


async def test_tools_stream_arguments_in_pieces_then_a_result(api: Api) -> None:
    events = await api.run_turn(await api.new_chat(), "search rivers", toolIntent=True)
    assert_valid_run_stream(events, events[0]["runId"])
    deltas = [e["delta"] for e in events if e["type"] == "tool_call_arguments_delta"]
    completed = next(e for e in events if e["type"] == "tool_call_completed")
    assert len(deltas) > 1
    import json

    assert json.loads("".join(deltas)) == completed["arguments"]
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["toolCallId"] == completed["toolCallId"] and result["isError"] is False
    assert types(events).index("tool_result") < types(events).index("text")


async def test_image_tool_produces_a_real_png(api: Api) -> None:
    events = await api.run_turn(await api.new_chat(), "draw a river", toolIntent=True)
    assert_valid_run_stream(events, events[0]["runId"])
    started = next(e for e in events if e["type"] == "image_generation_started")
    done = next(e for e in events if e["type"] == "image_generation_completed")
    assert done["imageId"] == started["imageId"]
    prefix = "data:image/png;base64,"
    assert done["url"].startswith(prefix)
    assert base64.b64decode(done["url"][len(prefix) :])[:8] == b"\x89PNG\r\n\x1a\n"


async def test_image_tool_can_fail(api: Api) -> None:
    events = await api.run_turn(await api.new_chat(), "draw and fail", toolIntent=True)
    assert_valid_run_stream(events, events[0]["runId"])
    assert "image_generation_failed" in types(events)
    assert any(e["type"] == "tool_result" and e["isError"] for e in events)


async def test_tool_loop_hits_its_cap_with_a_system_event(api: Api) -> None:
    events = await api.run_turn(await api.new_chat(), "loop forever", toolIntent=True)
    assert_valid_run_stream(events, events[0]["runId"])
    marker = next(e for e in events if e["type"] == "system_event")
    assert marker["kind"] == "tool_loop_exhausted"
    assert types(events).count("tool_call_started") == 3


async def test_tools_off_means_no_tool_events(api: Api) -> None:
    events = await api.run_turn(await api.new_chat(), "draw a loop")
    assert not any(t.startswith(("tool_", "image_")) for t in types(events))


async def test_switching_model_mid_chat_degrades_then_recovers(api: Api) -> None:
    chat_id = await api.new_chat()
    await api.run_turn(chat_id, "first")
    events = await api.run_turn(chat_id, "second", modelId="riacho-mini")
    assert_valid_run_stream(events, events[0]["runId"])
    notice = next(e for e in events if e["type"] == "fallback_notice")
    assert notice["reason"] == "model_changed"
    transitions = [e["recovered"] for e in events if e["type"] == "continuation_transition"]
    assert transitions == [False, True]
    message = (await api.json("GET", f"/api/chats/{chat_id}"))["messages"][-1]
    parts = [p for p in message["parts"] if p["type"] == "continuation"]
    assert [p["recovered"] for p in parts] == [True]


async def test_same_model_has_no_fallback(api: Api) -> None:
    chat_id = await api.new_chat()
    await api.run_turn(chat_id, "first")
    events = await api.run_turn(chat_id, "second")
    assert "fallback_notice" not in types(events)


async def test_prompt_asking_for_length_stops_at_length(api: Api) -> None:
    events = await api.run_turn(await api.new_chat(), "hit the length limit")
    assert events[-1]["stopReason"] == "length"


async def test_context_grows_to_critical_and_compaction_drops_it(api: Api) -> None:
    chat_id = await api.new_chat()
    seen: list[dict[str, Any]] = []
    for turn in range(12):
        events = await api.run_turn(chat_id, f"turn {turn} of a chat")
        seen.append(next(e for e in events if e["type"] == "context_info"))
        if seen[-1]["severity"] == "critical":
            break
    assert next(s["severity"] for s in seen) == "ok"
    assert "warning" in [s["severity"] for s in seen] and seen[-1]["severity"] == "critical"
    assert seen[-1]["compactionRecommended"] is True
    assert [s["usedTokens"] for s in seen] == sorted(s["usedTokens"] for s in seen)
    compacted = await api.json("POST", f"/api/chats/{chat_id}/compact")
    assert compacted["usedTokens"] < compacted["usedTokensBefore"]
    after = next(e for e in await api.run_turn(chat_id, "hi") if e["type"] == "context_info")
    assert after["usedTokens"] < seen[-1]["usedTokens"] and after["severity"] == "ok"


async def test_the_context_counts_only_the_branch_on_which_the_chat_goes_on(api: Api) -> None:
    chat_id = await api.new_chat()
    for turn in range(4):
        await api.run_turn(chat_id, f"turn {turn} of a long branch " * 20)

    def used(events: list[dict[str, Any]]) -> int:
        return int(next(e["usedTokens"] for e in events if e["type"] == "context_info"))

    long_branch = (await api.json("GET", f"/api/chats/{chat_id}"))["contextInfo"]["usedTokens"]
    edited = await api.run_turn(chat_id, "a short first prompt", atTop=True)
    alone = await api.run_turn(await api.new_chat(), "a short first prompt")
    assert used(edited) == used(alone) < long_branch, "the other branch is not sent to a model"
    read = (await api.json("GET", f"/api/chats/{chat_id}"))["contextInfo"]["usedTokens"]
    assert read == used(edited)


async def test_attachments_are_acknowledged_in_the_answer(api: Api) -> None:
    from aiohttp import FormData

    form = FormData()
    form.add_field("file", b"col\n1\n", filename="data.csv", content_type="text/csv")
    attachment = await api.json("POST", "/api/attachments", expect=201, data=form)
    chat_id = await api.new_chat()
    events = await api.run_turn(chat_id, "", attachmentIds=[attachment["attachmentId"]])
    assert "data.csv" in answer_text(events)
    user = (await api.json("GET", f"/api/chats/{chat_id}"))["messages"][0]
    assert user["attachments"] == [attachment]
