"""The model's ``python``, run by the page (SPEC §13): the run waits for the page's result, the
first result stands (a repeat 200, another 409 ``result_taken``), no page by the deadline tells
the model, Stop ends the wait, and each provider kind's call and result shapes carry it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiohttp.test_utils import TestServer

from tests.provider_fake import Kind, Reply
from tests.server.conftest import FakeEndpoint, MakeApi, ModelApi
from tests.server.helpers import Api, JsonObject

StartServer = Any
CODE = "print(6 * 7)"
PROMPT = f"run python: {CODE}"
OUTPUT = {"state": "done", "stdout": "42\n", "stderr": ""}


async def _waiting_call(api: Api, run_id: str) -> str:
    """The call the run waits on a page for (``waitingFor`` of ``GET /api/runs/{runId}``)."""
    async with asyncio.timeout(20):
        while True:
            response = await api.client.get(f"/api/runs/{run_id}")
            if response.status == 200:
                waiting = (await response.json()).get("waitingFor")
                if waiting is not None:
                    assert waiting["kind"] == "client"
                    return str(waiting["toolCallId"])
            await asyncio.sleep(0.02)


async def _post(
    api: Api, run_id: str, call_id: str, result: Any, is_error: bool = False, expect: int = 200
) -> Any:
    path = f"/api/runs/{run_id}/tool-calls/{call_id}/result"
    return await api.json("POST", path, expect=expect, json={"result": result, "isError": is_error})


def _start(
    api: Api, chat: str, run_id: str, prompt: str = PROMPT, tools: list[str] | None = None
) -> asyncio.Task[list[JsonObject]]:
    fields = {"runId": run_id, "clientTools": ["python"] if tools is None else tools}
    return asyncio.create_task(api.run_turn(chat, prompt, **fields))


def _of(events: list[JsonObject], kind: str) -> list[JsonObject]:
    return [event for event in events if event["type"] == kind]


def _text(events: list[JsonObject]) -> str:
    return "".join(e["text"] for e in _of(events, "text"))


async def test_the_first_result_stands_and_the_answer_goes_on_with_it(make_api: MakeApi) -> None:
    api = await make_api("alice")
    chat = await api.new_chat()
    turn = _start(api, chat, "run_py")
    call_id = await _waiting_call(api, "run_py")
    answer = await _post(api, "run_py", call_id, OUTPUT)
    assert answer == {"toolCallId": call_id, "result": OUTPUT, "isError": False}
    events = await turn
    (asked,) = _of(events, "tool_client_requested")
    assert (asked["toolName"], asked["arguments"]) == ("python", {"code": CODE})
    types = [e["type"] for e in events]
    assert types.index("tool_call_completed") < types.index("tool_client_requested")
    (result,) = _of(events, "tool_result")
    assert (result["result"], result["isError"]) == (OUTPUT, False)
    assert "The code printed: 42" in _text(events)
    assert events[-1]["type"] == "done"

    assert await _post(api, "run_py", call_id, OUTPUT) == answer  # NOTE: the same again: 200
    other = {"state": "done", "stdout": "7\n", "stderr": ""}
    refused = await _post(api, "run_py", call_id, other, expect=409)
    assert refused["error"]["code"] == "result_taken"
    calls = (await api.json("GET", "/api/runs/run_py/tool-calls"))["toolCalls"]
    assert calls == [
        {
            "toolCallId": call_id,
            "toolName": "python",
            "arguments": {"code": CODE},
            "effect": "none",
            "result": OUTPUT,
            "isError": False,
        }
    ]
    _user, message = (await api.json("GET", f"/api/chats/{chat}"))["messages"]
    (part,) = [p for p in message["parts"] if p["type"] == "tool_call"]
    assert (part["runsIn"], part["status"], part["result"]) == ("client", "done", OUTPUT)


async def test_two_posts_at_once_deliver_one_result(make_api: MakeApi) -> None:
    api = await make_api("alice")
    turn = _start(api, await api.new_chat(), "run_two")
    call_id = await _waiting_call(api, "run_two")
    first, second = {"stdout": "tab 1\n"}, {"stdout": "tab 2\n"}
    path = f"/api/runs/run_two/tool-calls/{call_id}/result"
    answers = await asyncio.gather(
        api.client.post(path, json={"result": first}),
        api.client.post(path, json={"result": second}),
    )
    assert sorted(a.status for a in answers) == [200, 409]
    events = await turn
    (result,) = _of(events, "tool_result")
    assert result["result"] in (first, second)


async def test_a_page_error_result_is_given_to_the_model(make_api: MakeApi) -> None:
    api = await make_api("alice")
    turn = _start(api, await api.new_chat(), "run_err")
    call_id = await _waiting_call(api, "run_err")
    failed = {"state": "error", "error": "ZeroDivisionError: division by zero"}
    await _post(api, "run_err", call_id, failed, is_error=True)
    events = await turn
    (result,) = _of(events, "tool_result")
    assert result["isError"] is True
    assert "ZeroDivisionError" in _text(events)


async def test_no_page_by_the_deadline_tells_the_model_and_a_late_result_is_refused(
    start_server: StartServer, make_api: MakeApi
) -> None:
    server: TestServer = await start_server(client_tool_timeout_s=0.3)
    api = await make_api("alice", on=server)
    events = await api.run_turn(
        await api.new_chat(), PROMPT, runId="run_late", clientTools=["python"]
    )
    (asked,) = _of(events, "tool_client_requested")
    (result,) = _of(events, "tool_result")
    assert result["isError"] is True and result["result"]["noBrowser"] is True
    assert "No browser ran this code" in result["result"]["error"]
    assert "No browser ran the code in time" in _text(events)
    assert events[-1]["type"] == "done"
    refused = await _post(api, "run_late", asked["toolCallId"], OUTPUT, expect=409)
    assert refused["error"]["code"] == "result_taken"


async def test_stop_while_it_waits_ends_the_call_and_a_later_result_is_refused(
    make_api: MakeApi,
) -> None:
    api = await make_api("alice")
    turn = _start(api, await api.new_chat(), "run_stop")
    call_id = await _waiting_call(api, "run_stop")
    assert await api.cancel("run_stop") in ("cancelled", "running")
    await turn
    calls = (await api.json("GET", "/api/runs/run_stop/tool-calls"))["toolCalls"]
    assert [(c["effect"], c["isError"]) for c in calls] == [("none", True)]
    assert "stopped" in calls[0]["result"]["error"]
    refused = await _post(api, "run_stop", call_id, OUTPUT, expect=409)
    assert refused["error"]["code"] == "result_taken"
    assert (await api.run("run_stop"))["waitingFor"] is None


async def test_a_resume_while_waiting_replays_the_request_and_follows_the_result(
    make_api: MakeApi,
) -> None:
    api = await make_api("alice")
    first = _start(api, await api.new_chat(), "run_resume")
    call_id = await _waiting_call(api, "run_resume")
    resumed = asyncio.create_task(api.replay("run_resume", after=0))
    await asyncio.sleep(0.1)
    await _post(api, "run_resume", call_id, OUTPUT)
    original, replayed = await asyncio.gather(first, resumed)
    assert [e["seq"] for e in replayed] == [e["seq"] for e in original]
    assert [e["type"] for e in replayed if e["type"].startswith("tool_")][-2:] == [
        "tool_client_requested",
        "tool_result",
    ]


async def test_without_client_tools_python_is_neither_offered_nor_waited_for(
    make_api: MakeApi,
) -> None:
    api = await make_api("alice")
    events = await api.run_turn(await api.new_chat(), PROMPT, clientTools=["fortran"])
    assert _of(events, "tool_client_requested") == []
    assert events[-1]["type"] == "done"


async def test_another_users_run_and_bad_bodies(make_api: MakeApi) -> None:
    alice, bob = await make_api("alice"), await make_api("bob")
    turn = _start(alice, await alice.new_chat(), "run_alice")
    call_id = await _waiting_call(alice, "run_alice")
    refused = await _post(bob, "run_alice", call_id, OUTPUT, expect=404)
    assert refused["error"]["code"] == "tool_call_not_found"
    path = f"/api/runs/run_alice/tool-calls/{call_id}/result"
    await alice.json("POST", path, expect=400, json={"result": 1, "isError": "yes"})
    await _post(alice, "run_alice", call_id, OUTPUT)
    await turn


def _as_python_call(kind: Kind) -> Reply:
    """The provider's own recorded tool call, made a call of ``python``."""
    stream = Reply.fixture(kind, "tool_call").stream
    return Reply(stream=stream.replace(b"calculator", b"python").replace(b"expression", b"code"))


@pytest.mark.parametrize("kind", ["openai-chat", "openai-responses", "anthropic", "google"])
async def test_each_provider_kinds_python_call_waits_for_the_page_and_gets_its_result(
    kind: Kind, fake: FakeEndpoint, model_api: ModelApi
) -> None:
    api = await model_api(kind)
    fake.provider.queue(kind, _as_python_call(kind), Reply.fixture(kind, "text"))
    turn = _start(api, await api.new_chat(), "run_model", prompt="compute it")
    call_id = await _waiting_call(api, "run_model")
    marked = {"state": "done", "stdout": "result-marker-8231\n"}
    await _post(api, "run_model", call_id, marked)
    events = await turn
    (asked,) = _of(events, "tool_client_requested")
    assert asked["toolName"] == "python" and "code" in asked["arguments"]
    (result,) = _of(events, "tool_result")
    assert result["result"] == marked
    bodies = fake.provider.bodies(kind)
    assert '"python"' in str(bodies[0]) or "'python'" in str(bodies[0])
    assert "result-marker-8231" in str(bodies[1])
    assert events[-1]["type"] == "done"
