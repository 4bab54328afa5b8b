"""Cancel: before the first event, mid-stream, after completion, twice, and its race."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from aiohttp.test_utils import TestServer

from app.wire.api import ServerRunStatus
from app.wire.protocol import DoneEvent, StreamEvent, UserMessageIdEvent
from server.config import Config
from server.demo import model as demo
from server.runs.live import LiveRun, RunMeta, ServerTrace
from server.store import runlog
from server.store.db import Database
from tests.server.conftest import (
    MakeApi,
    StartServer,
    live_run,
    logged_events,
    services_of,
    wait_stopped,
    with_config,
)
from tests.server.helpers import Api, assert_valid_run_stream, events_of, read_events


@pytest.fixture
def config(config: Config) -> Config:
    """A visible pace (5 ms a token) so there is a "mid-stream"."""
    return with_config(config, demo_token_ms=5.0)


async def test_cancel_mid_stream_stops_the_task_and_keeps_partial_text(
    api: Api, server: TestServer
) -> None:
    chat_id = await api.new_chat()
    response = await api.stream(chat_id, "tell me a story", runId="run_mid")
    first = await read_events(response, 5)
    run = live_run(server, "run_mid")
    assert run.generating
    assert await api.cancel("run_mid") == "cancelled"
    assert not run.generating
    rest = events_of(await response.read())
    events = first + rest
    assert_valid_run_stream(events, "run_mid")
    assert events[-1]["type"] == "done" and events[-1]["stopReason"] == "cancelled"
    assert await logged_events(server, "run_mid") == events, "the log ends at the cancel"
    trace = await api.trace("run_mid")
    assert trace["cancelRequested"] and trace["generationStopped"]
    assert (await api.run("run_mid"))["reason"] == "user_cancelled"
    assert trace["appendsRefused"] == 0, "nothing even tried to append after the cancel"
    message = (await api.json("GET", f"/api/chats/{chat_id}"))["messages"][-1]
    partial = "".join(e["text"] for e in events if e["type"] == "text")
    assert (message["status"], message["partial"], message["text"]) == ("cancelled", True, partial)


async def test_a_stop_during_an_append_ends_the_run_after_the_event_being_logged(
    api: Api, server: TestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On PostgreSQL an append is a round trip: a Stop can come after the row is written and
    before the database has answered. That event is still sent, and the ending gets a seq of
    its own after it, never the same one."""
    written, stop_seen = asyncio.Event(), asyncio.Event()
    append = runlog.insert_event

    async def slow_answer(db: Database, key: str, seq: int | None, data: str) -> int | None:
        row = await append(db, key, seq, data)
        if key.endswith("/run_append") and seq == 4:
            written.set()
            await stop_seen.wait()  # the row is written; the answer comes after the Stop
        return row

    monkeypatch.setattr(runlog, "insert_event", slow_answer)
    response = await api.stream(await api.new_chat(), "tell me a story", runId="run_append")
    await asyncio.wait_for(written.wait(), 10)
    cancel = asyncio.create_task(api.cancel("run_append"))
    async with asyncio.timeout(10):
        while (run := live_run(server, "run_append")) is None or run.stop_cause != "user":
            await asyncio.sleep(0.005)
    stop_seen.set()
    assert await cancel == "cancelled"
    events = events_of(await response.read())
    assert_valid_run_stream(events, "run_append")
    assert [(e["seq"], e["type"]) for e in events[3:]] == [(4, "text"), (5, "done")]
    assert await logged_events(server, "run_append") == events, "one event per seq in the log"


async def test_a_live_run_cancels_its_generation_after_an_append_not_during_it() -> None:
    meta = RunMeta("run_live", "alice", "chat", "msg_a", "msg_u", 1, "demo")
    run, writing, answered = (
        LiveRun(meta, ServerTrace("run_live")),
        asyncio.Event(),
        asyncio.Event(),
    )
    steps: list[str] = []

    async def generation() -> ServerRunStatus | None:
        with run.appending():
            steps.append("writing")
            writing.set()
            await answered.wait()
            steps.append("recorded")
        steps.append("next token")
        return "completed"

    task = asyncio.create_task(generation())
    run.attach_task(task)
    await asyncio.wait_for(writing.wait(), 5)
    run.stop_generation("user")
    await asyncio.sleep(0.01)  # NOTE: time for a cancel to land, were the append cut in two
    assert not task.done(), "the append is not cut in two"
    answered.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert task.cancelled() and steps == ["writing", "recorded"]
    with run.appending():
        pass  # NOTE: an ending logged by another task is never cancelled by the Stop


async def test_cancel_twice_is_idempotent(api: Api) -> None:
    chat_id = await api.new_chat()
    response = await api.stream(chat_id, runId="run_twice")
    await read_events(response, 2)
    assert await api.cancel("run_twice") == "cancelled"
    assert await api.cancel("run_twice") == "cancelled"
    events = events_of(await response.read())
    assert sum(e["done"] for e in events) == 1, "exactly one terminal event"


async def test_cancel_after_completion_answers_completed(api: Api, server: TestServer) -> None:
    chat_id = await api.new_chat()
    events = await api.run_turn(chat_id, runId="run_done")
    await wait_stopped(server, "run_done")
    assert await api.cancel("run_done") == "completed"
    assert await logged_events(server, "run_done") == events, "a late cancel appends nothing"
    assert (await api.run("run_done"))["status"] == "completed"


async def test_cancel_before_first_event_of_a_scenario(api: Api, server: TestServer) -> None:
    chat_id = await api.new_chat()
    await api.scenario([{"sleep_ms": 10_000}, {"event": {"type": "text", "text": "late"}}])
    response = await api.stream(chat_id, runId="run_early")
    assert response.status == 200
    assert await api.cancel("run_early") == "cancelled"
    assert await response.read() == b"", "a scenario adds nothing of its own"
    assert await logged_events(server, "run_early") == []
    assert (await api.trace("run_early"))["generationStopped"] is True


async def test_cancel_that_arrives_before_the_stream_request_cancels_the_run(api: Api) -> None:
    chat_id = await api.new_chat()
    early = await api.json("POST", "/api/runs/run_race/cancel")
    assert early == {"runId": "run_race", "status": "running"}  # accepted, not yet confirmed
    events = await api.run_turn(chat_id, runId="run_race")
    assert [(e["type"], e.get("stopReason")) for e in events] == [("done", "cancelled")]
    assert (await api.run("run_race"))["status"] == "cancelled"


async def test_cancel_not_confirmed_in_time_answers_running(
    make_api: MakeApi, start_server: StartServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def stubborn(turn: demo.DemoTurn) -> AsyncIterator[StreamEvent]:
        yield demo.draft(UserMessageIdEvent, message_id=turn.user_message_id)
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            await asyncio.sleep(0.2)  # a provider that ignores the first cancel
        yield demo.draft(DoneEvent, message_id=turn.message_id, stop_reason="stop")

    monkeypatch.setattr(demo, "play", stubborn)
    server = await start_server(cancel_wait_s=0.05)
    api = await make_api("alice", on=server)
    response = await api.stream(await api.new_chat(), runId="run_stubborn")
    await read_events(response, 1)
    assert await api.cancel("run_stubborn") == "running"
    await wait_stopped(server, "run_stubborn")
    assert await api.cancel("run_stubborn") == "completed", "the persisted result wins"


async def test_disconnect_alone_does_not_stop_generation(api: Api, server: TestServer) -> None:
    chat_id = await api.new_chat()
    response = await api.stream(chat_id, runId="run_away")
    await read_events(response, 2)
    response.close()
    await wait_stopped(server, "run_away")
    assert (await api.run("run_away"))["status"] == "completed"
    trace = await api.trace("run_away")
    assert trace["clientDisconnected"] and not trace["cancelRequested"]


async def test_unread_run_is_cancelled_after_orphan_timeout(
    make_api: MakeApi, start_server: StartServer
) -> None:
    server = await start_server(orphan_s=0.05, demo_token_ms=50.0)
    api = await make_api("alice", on=server)
    response = await api.stream(await api.new_chat(), runId="run_orphan")
    await read_events(response, 1)
    response.close()
    await wait_stopped(server, "run_orphan")
    info = await api.run("run_orphan")
    assert (info["status"], info["reason"]) == ("cancelled", "orphaned")
    assert (await api.trace("run_orphan"))["orphaned"] is True


async def test_generation_that_raises_ends_with_an_error_event_and_failed(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(turn: demo.DemoTurn) -> AsyncIterator[StreamEvent]:
        yield demo.draft(UserMessageIdEvent, message_id=turn.user_message_id)
        raise RuntimeError("provider exploded")

    monkeypatch.setattr(demo, "play", broken)
    chat_id = await api.new_chat()
    events = await api.run_turn(chat_id, runId="run_boom")
    assert_valid_run_stream(events, "run_boom")
    assert (events[-1]["type"], events[-1]["error"]) == ("error", "provider exploded")
    assert (await api.run("run_boom"))["status"] == "failed"
    message = (await api.json("GET", f"/api/chats/{chat_id}"))["messages"][-1]
    assert (message["status"], message["partial"]) == ("failed", True)
    assert await api.cancel("run_boom") == "failed"


@pytest.mark.one_process
async def test_a_server_shutdown_interrupts_runs_instead_of_cancelling_them(
    server: TestServer, api: Api
) -> None:
    chat_id = await api.new_chat()
    response = await api.stream(chat_id, "a long answer", runId="run_shutdown")
    await read_events(response, 2)
    await services_of(server).runs.shutdown()
    assert (await api.run("run_shutdown"))["status"] == "interrupted"
    trace = await api.trace("run_shutdown")
    assert (trace["cancelRequested"], trace["generationStopped"]) == (False, True)
    events = await logged_events(server, "run_shutdown")
    assert not any(e["type"] == "done" and e["stopReason"] == "cancelled" for e in events)


# --- a cancel that says the page gave up waiting ----------------------------------------------


@pytest.mark.parametrize("reason", ["first_event_timeout", "idle_timeout", "total_timeout"])
async def test_a_cancel_for_the_page_s_timeout_is_kept_as_the_run_s_reason(
    api: Api, reason: str
) -> None:
    chat_id = await api.new_chat()
    await api.scenario([{"sleep_ms": 10_000}, {"event": {"type": "text", "text": "late"}}])
    response = await api.stream(chat_id, runId="run_gave_up")
    assert response.status == 200

    answer = await api.json("POST", "/api/runs/run_gave_up/cancel", json={"reason": reason})

    assert answer == {"runId": "run_gave_up", "status": "cancelled"}
    assert ((info := await api.run("run_gave_up"))["status"], info["reason"]) == (
        "cancelled",
        reason,
    )
    detail = await api.json("GET", f"/api/chats/{chat_id}")
    answer_out = next(m for m in detail["messages"] if m["role"] == "assistant")
    assert (answer_out["status"], answer_out["reason"]) == ("cancelled", reason)


@pytest.mark.parametrize("body", [None, {}, {"reason": None}])
async def test_a_cancel_without_a_reason_is_the_user_s_stop(api: Api, body: object) -> None:
    chat_id = await api.new_chat()
    await api.scenario([{"sleep_ms": 10_000}, {"event": {"type": "text", "text": "late"}}])
    await api.stream(chat_id, runId="run_stopped")

    await api.json("POST", "/api/runs/run_stopped/cancel", json=body)

    assert (await api.run("run_stopped"))["reason"] == "user_cancelled"


@pytest.mark.parametrize(
    "body", [{"reason": "bored"}, {"reason": 3}, ["first_event_timeout"], "x"], ids=repr
)
async def test_a_cancel_with_a_reason_outside_the_vocabulary_is_refused(
    api: Api, body: object
) -> None:
    chat_id = await api.new_chat()
    await api.scenario([{"sleep_ms": 10_000}, {"event": {"type": "text", "text": "late"}}])
    await api.stream(chat_id, runId="run_odd")

    error = await api.json("POST", "/api/runs/run_odd/cancel", expect=400, json=body)

    assert error["error"]["code"] == "invalid_body"
    assert (await api.run("run_odd"))["status"] == "running", "a refused cancel stops nothing"
    await api.cancel("run_odd")


async def test_an_early_cancel_keeps_the_page_s_reason_for_the_run_that_comes(api: Api) -> None:
    chat_id = await api.new_chat()
    body = {"reason": "first_event_timeout"}
    early = await api.json("POST", "/api/runs/run_late/cancel", json=body)
    assert early == {"runId": "run_late", "status": "running"}

    await api.run_turn(chat_id, runId="run_late")

    info = await api.run("run_late")
    assert (info["status"], info["reason"]) == ("cancelled", "first_event_timeout")
