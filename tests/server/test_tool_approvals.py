"""Approvals over HTTP (SPEC §12): the demo model and each provider kind's tool call reach the
real example MCP server only after the user's decision, once, whatever repeats."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestServer

from tests.mcp_notes import cancelled, saved, stdio_settings
from tests.provider_fake import Kind, Reply
from tests.server.conftest import FakeEndpoint, MakeApi, ModelApi, services_of
from tests.server.helpers import Api, JsonObject

NOTE = "save a note that the river is high"
StartServer = Any


async def _notes_server(start_server: StartServer, notes: Path, **changes: Any) -> TestServer:
    server: TestServer = await start_server(mcp=(stdio_settings(notes),), **changes)
    return server


async def _waiting_call(api: Api, run_id: str) -> str:
    """The call the run waits on (``waitingFor`` of ``GET /api/runs/{runId}``)."""
    while True:
        response = await api.client.get(f"/api/runs/{run_id}")
        if response.status == 200:
            waiting = (await response.json()).get("waitingFor")
            if waiting is not None:
                assert waiting["kind"] == "approval"
                return str(waiting["toolCallId"])
        await asyncio.sleep(0.02)


async def _decide(api: Api, run_id: str, call_id: str, approved: bool, expect: int = 200) -> Any:
    path = f"/api/runs/{run_id}/tool-calls/{call_id}/decision"
    return await api.json("POST", path, expect=expect, json={"approved": approved})


def _start(api: Api, chat: str, run_id: str, prompt: str = NOTE) -> asyncio.Task[list[JsonObject]]:
    return asyncio.create_task(api.run_turn(chat, prompt, runId=run_id, toolIntent=True))


def _of(events: list[JsonObject], kind: str) -> list[JsonObject]:
    return [event for event in events if event["type"] == kind]


async def test_approved_note_is_saved_once_and_a_replay_or_repeat_never_saves_it_again(
    start_server: StartServer, make_api: MakeApi, tmp_path: Path
) -> None:
    notes = tmp_path / "notes.txt"
    api = await make_api("alice", on=await _notes_server(start_server, notes))
    chat = await api.new_chat()
    turn = _start(api, chat, "run_note")
    call_id = await _waiting_call(api, "run_note")
    assert saved(notes) == []
    answer = await _decide(api, "run_note", call_id, True)
    assert answer == {"toolCallId": call_id, "decision": "approved", "effect": "running"} or (
        answer["decision"] == "approved" and answer["effect"] in ("running", "done")
    )
    events = await turn
    (asked,) = _of(events, "tool_approval_requested")
    assert asked["toolName"] == "notes__save_note"
    assert asked["arguments"] == {"text": "the river is high"}
    (decided,) = _of(events, "tool_decided")
    assert (decided["approved"], decided["by"]) == (True, "user")
    (result,) = _of(events, "tool_result")
    assert (result["effect"], result["isError"]) == ("done", False)
    assert "I saved the note." in "".join(e["text"] for e in _of(events, "text"))
    assert saved(notes) == [{"text": "the river is high", "key": f"run_note:{call_id}"}]

    again = await _decide(api, "run_note", call_id, True)
    assert (again["decision"], again["effect"]) == ("approved", "done")
    refused = await _decide(api, "run_note", call_id, False, expect=409)
    assert refused["error"]["code"] == "decision_taken"
    replayed = await api.replay("run_note")
    assert [e["seq"] for e in replayed] == [e["seq"] for e in events]
    calls = await api.json("GET", "/api/runs/run_note/tool-calls")
    assert calls["toolCalls"] == [
        {
            "toolCallId": call_id,
            "toolName": "notes__save_note",
            "arguments": {"text": "the river is high"},
            "effect": "done",
            "result": result["result"],
            "isError": False,
            "decidedBy": "user",
        }
    ]
    assert len(saved(notes)) == 1


async def test_a_denied_note_is_told_to_the_model_which_goes_on(
    start_server: StartServer, make_api: MakeApi, tmp_path: Path
) -> None:
    notes = tmp_path / "notes.txt"
    api = await make_api("alice", on=await _notes_server(start_server, notes))
    chat = await api.new_chat()
    turn = _start(api, chat, "run_deny")
    call_id = await _waiting_call(api, "run_deny")
    answer = await _decide(api, "run_deny", call_id, False)
    assert (answer["decision"], answer["effect"]) == ("denied", "denied")
    events = await turn
    (result,) = _of(events, "tool_result")
    assert result["effect"] == "denied" and result["result"]["by"] == "user"
    assert "did not allow" in "".join(e["text"] for e in _of(events, "text"))
    assert events[-1]["type"] == "done"
    assert saved(notes) == []


async def test_no_decision_by_the_deadline_is_a_denial(
    start_server: StartServer, make_api: MakeApi, tmp_path: Path
) -> None:
    notes = tmp_path / "notes.txt"
    server = await _notes_server(start_server, notes, approval_timeout_s=0.3)
    api = await make_api("alice", on=server)
    events = await api.run_turn(await api.new_chat(), NOTE, runId="run_late", toolIntent=True)
    (decided,) = _of(events, "tool_decided")
    assert (decided["approved"], decided["by"]) == (False, "timeout")
    assert saved(notes) == []


async def test_stop_while_waiting_denies_and_a_later_approval_is_refused(
    start_server: StartServer, make_api: MakeApi, tmp_path: Path
) -> None:
    notes = tmp_path / "notes.txt"
    api = await make_api("alice", on=await _notes_server(start_server, notes))
    chat = await api.new_chat()
    turn = _start(api, chat, "run_stop")
    call_id = await _waiting_call(api, "run_stop")
    assert await api.cancel("run_stop") in ("cancelled", "running")
    await turn
    calls = (await api.json("GET", "/api/runs/run_stop/tool-calls"))["toolCalls"]
    assert [(c["effect"], c["decidedBy"]) for c in calls] == [("denied", "stop")]
    _user, answer = (await api.json("GET", f"/api/chats/{chat}"))["messages"]
    (part,) = [p for p in answer["parts"] if p["type"] == "tool_call"]
    assert (part["effect"], part["decidedBy"]) == ("denied", "stop")  # NOTE: the ledger's word
    refused = await _decide(api, "run_stop", call_id, True, expect=409)
    assert refused["error"]["code"] == "decision_taken"
    assert (await api.run("run_stop"))["waitingFor"] is None
    assert saved(notes) == []


async def test_another_users_run_answers_as_an_unknown_call(
    start_server: StartServer, make_api: MakeApi, tmp_path: Path
) -> None:
    notes = tmp_path / "notes.txt"
    server = await _notes_server(start_server, notes)
    alice, bob = await make_api("alice", on=server), await make_api("bob", on=server)
    turn = _start(alice, await alice.new_chat(), "run_alice")
    call_id = await _waiting_call(alice, "run_alice")
    refused = await _decide(bob, "run_alice", call_id, True, expect=404)
    assert refused["error"]["code"] == "tool_call_not_found"
    await bob.json("GET", "/api/runs/run_alice/tool-calls", expect=404)
    await _decide(alice, "run_alice", call_id, False)
    await turn
    assert saved(notes) == []


async def test_a_bad_decision_body_is_400(
    start_server: StartServer, make_api: MakeApi, tmp_path: Path
) -> None:
    api = await make_api("alice", on=await _notes_server(start_server, tmp_path / "n.txt"))
    await api.json("POST", "/api/runs/r/tool-calls/c/decision", expect=400, json={"reason": "no"})


def _as_note_call(kind: Kind) -> Reply:
    """The provider's own recorded tool call, made a call of the notes server's tool."""
    stream = Reply.fixture(kind, "tool_call").stream
    stream = stream.replace(b"calculator", b"notes__save_note").replace(b"expression", b"text")
    return Reply(stream=stream)


@pytest.mark.parametrize("kind", ["openai-chat", "openai-responses", "anthropic", "google"])
async def test_each_provider_kinds_tool_call_waits_for_approval_and_runs_once(
    kind: Kind, fake: FakeEndpoint, model_api: ModelApi, tmp_path: Path
) -> None:
    notes = tmp_path / "notes.txt"
    api = await model_api(kind, server_changes={"mcp": (stdio_settings(notes),)})
    fake.provider.queue(kind, _as_note_call(kind), Reply.fixture(kind, "text"))
    turn = _start(api, await api.new_chat(), "run_model", prompt="note it")
    call_id = await _waiting_call(api, "run_model")
    await _decide(api, "run_model", call_id, True)
    events = await turn
    (result,) = _of(events, "tool_result")
    assert result["effect"] == "done", result
    assert len(saved(notes)) == 1
    offered = fake.provider.bodies(kind)[0]
    assert "notes__save_note" in str(offered)


async def test_stop_mid_call_cancels_the_mcp_request_and_the_call_reads_unknown(
    start_server: StartServer, make_api: MakeApi, tmp_path: Path
) -> None:
    notes = tmp_path / "notes.txt"
    server: TestServer = await start_server(mcp=(stdio_settings(notes, slow_s=60),))
    api = await make_api("alice", on=server)
    turn = _start(api, await api.new_chat(), "run_mid")
    call_id = await _waiting_call(api, "run_mid")
    await _decide(api, "run_mid", call_id, True)
    db = services_of(server).db
    while (row := await db.one("SELECT state FROM tool_calls")) is None or row[
        "state"
    ] != "running":
        await asyncio.sleep(0.02)
    assert await api.cancel("run_mid") in ("cancelled", "running")
    await turn
    calls = (await api.json("GET", "/api/runs/run_mid/tool-calls"))["toolCalls"]
    assert [c["effect"] for c in calls] == ["unknown"]
    async with asyncio.timeout(20):
        while not cancelled(notes):
            await asyncio.sleep(0.05)
    assert cancelled(notes) == [{"cancelled": f"run_mid:{call_id}"}]
    assert saved(notes) == []


async def test_a_server_that_is_down_is_said_in_the_model_picker_and_not_offered(
    start_server: StartServer, make_api: MakeApi, tmp_path: Path
) -> None:
    from server.config.tools import McpSettings

    broken = McpSettings(name="broken", command=(str(tmp_path / "no-such-program"),))
    server = await start_server(mcp=(broken,))
    api = await make_api("alice", on=server)
    models = await api.json("GET", "/api/models")
    assert "broken" in json.dumps(models)
    events = await api.run_turn(await api.new_chat(), NOTE, runId="run_down", toolIntent=True)
    assert _of(events, "tool_approval_requested") == []
    (marker,) = _of(events, "system_event")
    assert marker["kind"] == "tools_unavailable" and "broken" in marker["message"]
    assert events[-1]["type"] == "done"


async def test_a_resume_while_waiting_replays_the_request_and_follows_the_decision(
    start_server: StartServer, make_api: MakeApi, tmp_path: Path
) -> None:
    notes = tmp_path / "notes.txt"
    api = await make_api("alice", on=await _notes_server(start_server, notes))
    first = _start(api, await api.new_chat(), "run_resume")
    call_id = await _waiting_call(api, "run_resume")
    resumed = asyncio.create_task(api.replay("run_resume", after=0))
    await _decide(api, "run_resume", call_id, True)
    original, replayed = await asyncio.gather(first, resumed)
    assert [e["seq"] for e in replayed] == [e["seq"] for e in original]
    assert [e["type"] for e in replayed if e["type"].startswith("tool_")][-3:] == [
        "tool_approval_requested",
        "tool_decided",
        "tool_result",
    ]
    assert len(saved(notes)) == 1
