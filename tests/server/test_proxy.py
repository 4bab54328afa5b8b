"""The cluster's front proxy (server/cli/proxy.py) against small stand-in workers."""

from __future__ import annotations

import asyncio
import logging
import socket
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from aiohttp import ClientPayloadError, ClientSession, web
from aiohttp.test_utils import TestServer
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from server.cli.proxy import forwarded_headers, make_proxy, returned_headers

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Worker:
    """A stand-in worker: answers with its name, echoes, streams, and remembers."""

    name: str
    seen: list[web.Request] = field(default_factory=list)
    stream_closed: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/api/who", self.who)
        app.router.add_post("/api/echo", self.echo)
        app.router.add_get("/api/stream", self.stream)
        app.router.add_get("/file", self.file)
        app.router.add_get("/api/cut", self.cut)
        return app

    async def file(self, request: web.Request) -> web.Response:
        """A file of known length, coded only as the client asked."""
        self.seen.append(request)
        body = b"x" * 1000
        return web.Response(
            body=body, headers={"X-Coding": request.headers.get("Accept-Encoding", "-")}
        )

    async def cut(self, request: web.Request) -> web.StreamResponse:
        """Part of an answer, then the connection dropped (a worker dying mid-answer)."""
        self.seen.append(request)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(b"data: part\n\n")
        assert request.transport is not None
        request.transport.abort()
        return response

    async def who(self, request: web.Request) -> web.Response:
        self.seen.append(request)
        response = web.json_response({"worker": self.name})
        response.set_cookie("riacho_session", "token")
        return response

    async def echo(self, request: web.Request) -> web.Response:
        self.seen.append(request)
        return web.Response(body=await request.read(), headers={"X-Worker": self.name})

    async def stream(self, request: web.Request) -> web.StreamResponse:
        """One event, then nothing until released (or the reader goes away), then another."""
        self.seen.append(request)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        try:
            await response.write(b"data: first\n\n")
            await self.release.wait()
            await response.write(b"data: second\n\n")
            await response.write_eof()
        finally:
            self.stream_closed.set()
        return response


Workers = tuple[list[Worker], list[str]]  # the stand-ins and their URLs
StartProxy = Callable[[list[str]], Awaitable[str]]  # a proxy over these URLs: its URL


@pytest.fixture
async def workers() -> AsyncIterator[Workers]:
    pair = [Worker("a"), Worker("b")]
    servers = [TestServer(worker.app()) for worker in pair]
    for server in servers:
        await server.start_server()
    yield pair, [str(server.make_url("")).rstrip("/") for server in servers]
    for server in servers:
        await server.close()


@pytest.fixture
async def proxy_url() -> AsyncIterator[StartProxy]:
    started: list[TestServer] = []

    async def start(upstreams: list[str]) -> str:
        server = TestServer(make_proxy(upstreams))
        await server.start_server()
        started.append(server)
        return str(server.make_url("")).rstrip("/")

    yield start
    for server in started:
        await server.close()


def _closed_port() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"  # NOTE: closed when this returns


async def test_requests_take_turns_across_workers(workers: Workers, proxy_url: StartProxy) -> None:
    _, upstreams = workers
    url = await proxy_url(upstreams)
    async with ClientSession() as client:
        answered = []
        for _ in range(4):
            async with client.get(url + "/api/who") as response:
                assert response.status == 200
                assert response.cookies["riacho_session"].value == "token"
                answered.append((await response.json())["worker"])
    assert answered == ["a", "b", "a", "b"]


async def test_a_body_query_and_host_reach_the_worker_unchanged(
    workers: Workers,
    proxy_url: StartProxy,
) -> None:
    pair, upstreams = workers
    url = await proxy_url(upstreams[:1])
    payload = b'{"prompt": "ol\xc3\xa1"}' * 1000
    async with (
        ClientSession() as client,
        client.post(
            URL(url + "/api/echo?x=1&y=%2F&z=%26", encoded=True),
            data=payload,
            headers={"Content-Type": "application/json", "Origin": url},
        ) as response,
    ):
        assert await response.read() == payload
        assert response.headers["X-Worker"] == "a"
    request = pair[0].seen[-1]
    assert request.rel_url.raw_query_string == "x=1&y=%2F&z=%26"
    assert request.headers["Host"] == url.removeprefix("http://")  # NOTE: Origin checks use it
    assert request.headers["Origin"] == url
    assert request.headers["X-Forwarded-For"] == "127.0.0.1"


async def test_a_stream_reaches_the_client_event_by_event(
    workers: Workers,
    proxy_url: StartProxy,
) -> None:
    pair, upstreams = workers
    url = await proxy_url(upstreams[:1])
    async with ClientSession() as client, client.get(url + "/api/stream") as response:
        first = await asyncio.wait_for(response.content.readuntil(b"\n\n"), timeout=5)
        assert first == b"data: first\n\n"  # NOTE: while the worker still holds the second
        pair[0].release.set()
        assert await response.content.read() == b"data: second\n\n"


async def test_a_client_that_leaves_closes_its_worker_stream(
    workers: Workers,
    proxy_url: StartProxy,
) -> None:
    pair, upstreams = workers
    url = await proxy_url(upstreams[:1])
    async with ClientSession() as client:
        response = await client.get(url + "/api/stream")
        await asyncio.wait_for(response.content.readuntil(b"\n\n"), timeout=5)
        response.close()  # NOTE: the browser's tab closed
    await asyncio.wait_for(pair[0].stream_closed.wait(), timeout=5)


async def test_the_proxy_process_closes_the_worker_stream_of_a_client_that_leaves(
    workers: Workers,
) -> None:
    """``python -m server.cli.proxy``, not the TestServer (which cancels handlers of its own)."""
    pair, upstreams = workers
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = ["-m", "server.cli.proxy", "--port", str(port), "--upstream", upstreams[0]]
    proxy = await asyncio.create_subprocess_exec(sys.executable, *command, cwd=ROOT)
    try:
        async with asyncio.timeout(15):
            while True:  # NOTE: until it listens
                try:
                    _reader, writer = await asyncio.open_connection("127.0.0.1", port)
                except OSError:
                    await asyncio.sleep(0.05)
                    continue
                writer.close()
                break
        async with ClientSession() as client:
            response = await client.get(f"http://127.0.0.1:{port}/api/stream")
            await asyncio.wait_for(response.content.readuntil(b"\n\n"), timeout=5)
            response.close()  # NOTE: the browser's tab closed; the worker stays silent
        await asyncio.wait_for(pair[0].stream_closed.wait(), timeout=5)
    finally:
        proxy.terminate()
        await proxy.wait()


async def test_a_file_keeps_its_length_and_the_client_s_own_codings(
    workers: Workers, proxy_url: StartProxy
) -> None:
    pair, upstreams = workers
    url = await proxy_url(upstreams[:1])
    async with ClientSession(skip_auto_headers=("Accept-Encoding",)) as client:
        async with client.get(url + "/file") as response:
            assert response.headers["Content-Length"] == "1000"
            assert response.headers["X-Coding"] == "-", "the proxy asked for a coding itself"
            assert len(await response.read()) == 1000
        async with client.head(url + "/file") as response:
            assert response.headers["Content-Length"] == "1000"
        async with client.get(url + "/file", headers={"Accept-Encoding": "br"}) as response:
            assert response.headers["X-Coding"] == "br"
    assert len(pair[0].seen) == 3


async def test_a_worker_cutting_its_answer_short_cuts_the_client_s_too(
    workers: Workers, proxy_url: StartProxy, caplog: pytest.LogCaptureFixture
) -> None:
    _, upstreams = workers
    url = await proxy_url(upstreams[:1])
    async with ClientSession() as client, client.get(url + "/api/cut") as response:
        assert await response.content.readuntil(b"\n\n") == b"data: part\n\n"
        with pytest.raises(ClientPayloadError):  # NOTE: not a clean end the client would trust
            await response.content.read()
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


async def test_a_worker_that_is_down_is_skipped(workers: Workers, proxy_url: StartProxy) -> None:
    _, upstreams = workers
    url = await proxy_url([_closed_port(), upstreams[1]])
    async with ClientSession() as client:
        for _ in range(2):
            async with client.get(url + "/api/who") as response:
                assert (await response.json())["worker"] == "b"


async def test_no_worker_answering_is_a_502_with_the_api_error_body(proxy_url: StartProxy) -> None:
    url = await proxy_url([_closed_port()])
    async with ClientSession() as client, client.get(url + "/api/who") as response:
        assert response.status == 502
        assert (await response.json())["error"]["code"] == "no_worker"


@pytest.mark.parametrize(
    ("name", "forwarded"),
    [
        ("Connection", False),
        ("Keep-Alive", False),
        ("Transfer-Encoding", False),
        ("Content-Length", False),
        ("Upgrade", False),
        ("Cookie", True),
        ("Origin", True),
        ("Last-Event-ID", True),
        ("Accept-Encoding", True),
    ],
)
def test_hop_by_hop_headers_stay_behind(name: str, forwarded: bool) -> None:
    headers = CIMultiDictProxy(CIMultiDict({name: "v", "Host": "proxy:8000"}))

    assert (name in forwarded_headers(headers, "10.0.0.1")) is forwarded
    assert (name in returned_headers(headers)) is forwarded
    assert forwarded_headers(headers, "10.0.0.1")["Host"] == "proxy:8000"


def test_an_earlier_forwarded_for_is_extended() -> None:
    headers = CIMultiDictProxy(CIMultiDict({"X-Forwarded-For": "1.2.3.4"}))

    assert forwarded_headers(headers, "10.0.0.1")["X-Forwarded-For"] == "1.2.3.4, 10.0.0.1"


def test_a_proxy_needs_a_worker() -> None:
    with pytest.raises(ValueError, match="at least one upstream"):
        make_proxy([])
