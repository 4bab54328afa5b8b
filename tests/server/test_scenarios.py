"""Test scenarios (SPEC §9): every step, exactly as given, and what the server saw."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import pytest
from aiohttp import ClientPayloadError
from aiohttp.test_utils import TestServer

from tests.server.conftest import MakeApi, StartServer, logged_events, wait_stopped
from tests.server.helpers import Api, events_of, read_events

JSON = {"Content-Type": "application/json"}

DONE = {"type": "done", "messageId": "m1", "stopReason": "stop"}


def text(value: str, **extra: Any) -> dict[str, Any]:
    return {"event": {"type": "text", "text": value, **extra}}


async def play(api: Api, steps: list[dict[str, Any]], run_id: str = "run_s") -> bytes:
    """Queue ``steps``, play them on a new chat, and return the whole response body."""
    await api.scenario(steps)
    response = await api.stream(await api.new_chat(), runId=run_id)
    assert response.status == 200
    assert response.headers["Content-Type"] == "text/event-stream"
    return await response.read()


async def test_event_steps_get_run_id_seq_and_done_unless_given(api: Api) -> None:
    body = await play(
        api,
        [
            text("a"),
            {"raw": ": not an event\n\n"},
            text("b", seq=7),
            text("c"),
            text("d", runId="run_other", seq=2, done=True),
            {"event": DONE},
        ],
    )
    assert body.decode() == (
        'id: 1\ndata: {"type":"text","text":"a","runId":"run_s","seq":1,"done":false}\n\n'
        ": not an event\n\n"
        'id: 7\ndata: {"type":"text","text":"b","seq":7,"runId":"run_s","done":false}\n\n'
        'id: 8\ndata: {"type":"text","text":"c","runId":"run_s","seq":8,"done":false}\n\n'
        'id: 2\ndata: {"type":"text","text":"d","runId":"run_other","seq":2,"done":true}\n\n'
        'id: 3\ndata: {"type":"done","messageId":"m1","stopReason":"stop","runId":"run_s",'
        '"seq":3,"done":true}\n\n'
    )


async def test_event_steps_go_to_the_log_and_the_message(api: Api, server: TestServer) -> None:
    body = await play(api, [text("Hel"), text("lo"), {"event": DONE}], run_id="run_log")
    await wait_stopped(server, "run_log")
    assert await logged_events(server, "run_log") == events_of(body)
    chats = await api.json("GET", "/api/chats")
    message = (await api.json("GET", f"/api/chats/{chats[0]['id']}"))["messages"][-1]
    assert (message["text"], message["status"], message["partial"]) == ("Hello", "completed", False)
    assert message["parts"] == [{"type": "text", "text": "Hello"}]


@pytest.mark.parametrize(
    ("step", "expected"),
    [
        pytest.param({"raw": 'data: {"x": 1}\r\n\r\n'}, b'data: {"x": 1}\r\n\r\n', id="raw-crlf"),
        pytest.param({"raw": "Olá ✓"}, "Olá ✓".encode(), id="raw-utf8"),
        pytest.param(
            {"raw_b64": base64.b64encode(b"\xff\xfe\x00data").decode()},
            b"\xff\xfe\x00data",
            id="raw-b64-invalid-utf8",
        ),
        pytest.param({"keepalive": True}, b": keepalive\n\n", id="keepalive"),
    ],
)
async def test_raw_and_keepalive_steps_write_bytes_as_given(
    api: Api, step: dict[str, Any], expected: bytes
) -> None:
    assert await play(api, [step]) == expected


async def test_sleep_step_delays_the_next_step(api: Api) -> None:
    await api.scenario([text("a"), {"sleep_ms": 200}, text("b")])
    chat = await api.new_chat()
    # NOTE: timed from before the request, so a late read of "a" cannot hide the sleep.
    started = time.monotonic()
    response = await api.stream(chat)
    await read_events(response, 2)
    assert time.monotonic() - started >= 0.2


async def test_hold_waits_for_the_client_to_leave(api: Api, server: TestServer) -> None:
    await api.scenario([text("a"), {"hold": True}, text("after")])
    response = await api.stream(await api.new_chat(), runId="run_hold")
    await read_events(response, 1)
    response.close()
    await wait_stopped(server, "run_hold")
    trace = await api.trace("run_hold")
    assert trace["clientDisconnected"] and not trace["cancelRequested"]
    assert (trace["sentSeqs"], trace["eventsLogged"]) == ([1], 2), "the rest still ran"
    assert (await api.run("run_hold"))["status"] == "interrupted"


async def test_hold_ends_on_cancel_and_the_run_is_cancelled(api: Api) -> None:
    await api.scenario([text("a"), {"hold": True}, text("never")])
    response = await api.stream(await api.new_chat(), runId="run_hc")
    await read_events(response, 1)
    assert await api.cancel("run_hc") == "cancelled"
    assert await response.read() == b"", "the response ends; nothing is added"
    trace = await api.trace("run_hc")
    assert trace["cancelRequested"] and trace["generationStopped"]
    assert trace["eventsLogged"] == 1


async def test_detach_drops_the_connection_and_the_run_finishes_in_the_log(
    api: Api, server: TestServer
) -> None:
    body = await play(
        api,
        [text("a"), {"detach": True}, {"sleep_ms": 20}, text("b"), {"event": DONE}],
        run_id="run_det",
    )
    assert [e["text"] for e in events_of(body)] == ["a"]
    await wait_stopped(server, "run_det")
    assert (await api.run("run_det"))["status"] == "completed"
    assert [e["seq"] for e in await api.replay("run_det", 1)] == [2, 3]
    assert (await api.trace("run_det"))["sentSeqs"] == [1]


async def test_close_clean_ends_the_response_normally(api: Api, server: TestServer) -> None:
    body = await play(api, [text("a"), {"close": "clean"}], run_id="run_cc")
    assert len(events_of(body)) == 1
    await wait_stopped(server, "run_cc")
    assert (await api.run("run_cc"))["status"] == "interrupted"


async def test_close_reset_aborts_the_connection(api: Api) -> None:
    await api.scenario([text("a"), {"close": "reset"}])
    response = await api.stream(await api.new_chat())
    with pytest.raises(ClientPayloadError):
        await response.read()


@pytest.mark.parametrize(
    ("terminal", "status"),
    [
        pytest.param([], "interrupted", id="no-terminal"),
        pytest.param([{"event": DONE}], "completed", id="done-stop"),
        pytest.param([{"event": {**DONE, "stopReason": "length"}}], "completed", id="length"),
        pytest.param(
            [{"event": {**DONE, "stopReason": "cancelled"}}], "cancelled", id="done-cancelled"
        ),
        pytest.param([{"event": {"type": "error", "error": "x"}}], "failed", id="error"),
    ],
)
async def test_run_status_follows_the_scenarios_terminal_event(
    api: Api, server: TestServer, terminal: list[dict[str, Any]], status: str
) -> None:
    await play(api, [text("a"), *terminal], run_id="run_t")
    await wait_stopped(server, "run_t")
    assert (await api.run("run_t"))["status"] == status


async def test_status_step_answers_json_with_headers(api: Api) -> None:
    error = {"error": {"code": "model_unavailable", "message": "busy"}}
    await api.scenario([{"status": 503, "json": error, "headers": {"Retry-After": "7"}}])
    response = await api.stream(await api.new_chat())
    assert (response.status, response.headers["Retry-After"]) == (503, "7")
    assert await response.json() == error


async def test_status_step_without_json_keeps_streaming_with_its_headers(api: Api) -> None:
    await api.scenario([{"status": 200, "headers": {"content-type": "text/plain"}}, text("a")])
    response = await api.stream(await api.new_chat())
    assert response.headers.getall("Content-Type") == ["text/plain"]
    assert len(events_of(await response.read())) == 1


async def test_scenario_for_a_chat_waits_for_that_chat(api: Api) -> None:
    other, target = await api.new_chat(), await api.new_chat()
    await api.scenario([text("scripted"), {"event": DONE}], chat_id=target)
    demo_events = await api.run_turn(other)
    assert demo_events[0]["type"] == "user_message_id", "the demo answered the other chat"
    assert [e["type"] for e in await api.run_turn(target)] == ["text", "done"]


async def test_scenarios_play_once_in_order(api: Api) -> None:
    await api.scenario([text("first")])
    await api.scenario([text("second")])
    chat_id = await api.new_chat()
    played = [(await api.run_turn(chat_id))[0].get("text") for _ in range(3)]
    assert played == ["first", "second", None]


@pytest.mark.parametrize(
    "steps",
    [
        pytest.param("nope", id="not-a-list"),
        pytest.param([{"raw": 5}], id="raw-not-string"),
        pytest.param([{"raw_b64": "%%%"}], id="raw-b64-invalid"),
        pytest.param([{"sleep_ms": -1}], id="negative-sleep"),
        pytest.param([{"close": "maybe"}], id="unknown-close"),
        pytest.param([{"event": "text"}], id="event-not-object"),
        pytest.param([{"hold": True, "detach": True}], id="two-kinds"),
        pytest.param([{"bogus": 1}], id="unknown-kind"),
        pytest.param([text("a"), {"status": 500}], id="status-not-first"),
        pytest.param([{"status": 99}], id="status-out-of-range"),
    ],
)
async def test_invalid_scenarios_are_400(api: Api, steps: Any) -> None:
    response = await api.client.post("/__test__/scenarios", json={"steps": steps})
    assert response.status == 400
    assert (await response.json())["error"]["code"] == "invalid_body"


async def test_scenario_route_accepts_16_mib_bodies(api: Api) -> None:
    raw = "x" * (16 * 1024 * 1024 - 100)
    body = json.dumps({"steps": [{"raw": raw}]})
    assert len(body) <= 16 * 1024 * 1024
    response = await api.client.post("/__test__/scenarios", data=body, headers=JSON)
    assert response.status == 200, await response.text()
    played = await api.stream(await api.new_chat())
    assert len(await played.read()) == len(raw)


async def test_scenario_route_rejects_bodies_far_above_the_limit(api: Api) -> None:
    body = b'{"steps": [{"raw": "' + b"x" * (18 * 1024 * 1024) + b'"}]}'
    response = await api.client.post("/__test__/scenarios", data=body, headers=JSON)
    assert response.status == 413


async def test_reset_wipes_everything(api: Api) -> None:
    await api.new_chat()
    await api.scenario([text("never played")])
    await api.json("POST", "/__test__/reset")
    response = await api.client.get("/api/chats")
    assert response.status == 401, "sessions are gone too"
    await api.login("alice")
    assert await api.json("GET", "/api/chats") == []
    events = await api.run_turn(await api.new_chat())
    assert events[0]["type"] == "user_message_id", "the queued scenario is gone"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        pytest.param("POST", "/__test__/scenarios", id="scenarios"),
        pytest.param("GET", "/__test__/runs/run_x", id="trace"),
        pytest.param("POST", "/__test__/reset", id="reset"),
    ],
)
async def test_test_routes_do_not_exist_without_test_hooks(
    make_api: MakeApi, start_server: StartServer, method: str, path: str
) -> None:
    api = await make_api("alice", on=await start_server(test_hooks=False))
    response = await api.client.request(method, path, json={"steps": []})
    assert response.status == 404
