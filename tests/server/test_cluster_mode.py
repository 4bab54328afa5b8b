"""The cluster mode of these tests (``RIACHO_TEST_CLUSTER=1``) really spreads one user's
requests over both workers, a run's stream included."""

from __future__ import annotations

import pytest
from aiohttp.test_utils import TestServer

from tests.server.conftest import ClusterServer, in_cluster, live_run
from tests.server.helpers import Api

pytestmark = pytest.mark.skipif(not in_cluster(), reason="checks RIACHO_TEST_CLUSTER=1 itself")


async def test_one_user_s_requests_land_on_every_worker(server: TestServer, api: Api) -> None:
    assert isinstance(server, ClusterServer) and len(server.workers) == 2
    chat_id = await api.new_chat()
    response = await api.stream(chat_id, runId="run_spread")
    await response.read()
    for _ in range(4):
        await api.json("GET", f"/api/chats/{chat_id}")
    streamed = [any(p == "/api/respond/stream" for p in paths) for paths in server.served]
    assert sorted(streamed) == [False, True], "one worker wrote the answer"
    assert all(any(p.startswith("/api/chats/") for p in paths) for paths in server.served)
    assert live_run(server, "run_spread") is None
