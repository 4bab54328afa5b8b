"""Tools that act across processes (SPEC §12): two workers on one database and one Redis (each
test on SQLite and on PostgreSQL), the real example MCP server started by each worker. A
decision taken on B runs the call on A once; killing A while the tool runs leaves the call
``unknown``, and nothing runs it again."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import aiohttp
import pytest

from server.store.db import open_database
from tests.mcp_notes import SERVER, saved
from tests.server.helpers import JsonObject, events_of
from tests.server.test_workers import (  # noqa: F401 (fixtures)
    LEASE_S,
    MakeUser,
    StartWorkers,
    make_user,
    redis_url,
    shared_database,
    start_workers,
)
from tests.server.workers import Worker, WorkerApi

pytestmark = pytest.mark.workers
NOTE = "save a note that the river is high"


def _config(tmp_path: Path, notes: Path, slow_s: float = 0) -> str:
    path = tmp_path / "riacho.toml"
    path.write_text(
        "[[mcp]]\n"
        'name = "notes"\n'
        f'command = ["{sys.executable}", "{SERVER}"]\n'
        f'env = {{ NOTES_FILE = "{notes}", NOTES_SLOW_S = "{slow_s}" }}\n',
        encoding="utf-8",
    )
    return str(path)


async def _stream(api: WorkerApi, worker: Worker, run_id: str) -> aiohttp.ClientResponse:
    chat = await api.new_chat(worker)
    body = {"chatId": chat, "prompt": NOTE, "runId": run_id, "toolIntent": True}
    response = await api.session.post(f"{worker.url}/api/respond/stream", json=body)
    assert response.status == 200, await response.text()
    return response


async def _until(response: aiohttp.ClientResponse, kind: str) -> JsonObject:
    while True:
        block = await response.content.readuntil(b"\n\n")
        assert block, f"the stream ended before {kind}"
        for event in events_of(block):
            if event["type"] == kind:
                return event


async def _decide(api: WorkerApi, worker: Worker, run_id: str, call_id: str) -> JsonObject:
    path = f"/api/runs/{run_id}/tool-calls/{call_id}/decision"
    answer: JsonObject = await api.json(worker, "POST", path, json={"approved": True})
    return answer


async def test_a_decision_taken_on_b_runs_the_call_on_a_once(
    start_workers: StartWorkers,  # noqa: F811
    make_user: MakeUser,  # noqa: F811
    tmp_path: Path,
) -> None:
    notes = tmp_path / "notes.txt"
    a, b = start_workers("--config", _config(tmp_path, notes))
    alice = await make_user("alice", a)
    on_a = await _stream(alice, a, "run_two")
    asked = await _until(on_a, "tool_approval_requested")
    call_id = asked["toolCallId"]
    waiting = await alice.run(b, "run_two")
    assert waiting["waitingFor"] == {"kind": "approval", "toolCallId": call_id}
    answers = await asyncio.gather(
        _decide(alice, b, "run_two", call_id), _decide(alice, a, "run_two", call_id)
    )
    assert {answer["decision"] for answer in answers} == {"approved"}
    result = await _until(on_a, "tool_result")
    assert result["effect"] == "done"
    on_a.close()
    assert saved(notes) == [{"text": "the river is high", "key": f"run_two:{call_id}"}]


async def test_killing_a_mid_call_leaves_unknown_and_nothing_runs_it_again(
    start_workers: StartWorkers,  # noqa: F811
    make_user: MakeUser,  # noqa: F811
    shared_database: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    notes = tmp_path / "notes.txt"
    a, b = start_workers("--config", _config(tmp_path, notes, slow_s=60))
    alice = await make_user("alice", a)
    on_a = await _stream(alice, a, "run_kill")
    call_id = (await _until(on_a, "tool_approval_requested"))["toolCallId"]
    await _decide(alice, b, "run_kill", call_id)
    await _until(on_a, "tool_decided")
    await _until_started(shared_database, "run_kill")
    a.kill()  # NOTE: SIGKILL while the tool runs: no chance to write its end
    on_a.close()
    async with asyncio.timeout(LEASE_S * 8):
        while (await alice.run(b, "run_kill"))["status"] == "running":
            await asyncio.sleep(0.1)
    (call,) = await _calls(alice, b, "run_kill")
    assert call["effect"] == "unknown", json.dumps(call)
    assert "unknown" in call["result"] and call["isError"]
    replayed = events_of(await (await alice.resume(b, "run_kill", after=0)).read())
    assert replayed[-1]["code"] == "worker_lost"
    assert [e["effect"] for e in replayed if e["type"] == "tool_result"] == []
    assert all(line["key"] == f"run_kill:{call_id}" for line in saved(notes))


async def _calls(api: WorkerApi, worker: Worker, run_id: str) -> list[JsonObject]:
    answer = await api.json(worker, "GET", f"/api/runs/{run_id}/tool-calls")
    calls: list[JsonObject] = answer["toolCalls"]
    return calls


async def _until_started(database: str, run_id: str) -> None:
    """Until the ledger says the call was sent (``running``: approved is not enough)."""
    db = open_database(database)
    await db.open()
    try:
        while True:
            row = await db.one(
                "SELECT state FROM tool_calls WHERE run_key LIKE ?", (f"%/{run_id}",)
            )
            if row is not None and row["state"] == "running":
                return
            await asyncio.sleep(0.05)
    finally:
        await db.close()
