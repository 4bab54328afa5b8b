"""Connections to MCP servers through the official ``mcp`` SDK (stdio or Streamable HTTP).

Each :class:`McpConnection` holds its SDK session open in a task of its own (the SDK's
transports are context managers that must be entered and left in one task) and is asked for
its tools and calls from any task. A server that cannot be reached, or dies later, is
``down`` with the reason in words; its tools are then not offered, and a call answers a
:class:`ToolUnavailable` error instead of raising through the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Literal, cast

import mcp.types as mt
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import RequestParamsMeta

from server.config.tools import McpSettings

log = logging.getLogger("riacho.tools")
PING_INTERVAL_S = 5.0
START_TIMEOUT_S = 20.0
SEPARATOR = "__"
ConnectionState = Literal["starting", "up", "down"]


class ToolUnavailable(Exception):
    """The tool's server is down (or the tool unknown): the words say why."""


@dataclass(frozen=True, slots=True)
class McpTool:
    """One tool of an MCP server, as offered to models (``<server>__<tool>``)."""

    server: str
    name: str
    description: str
    parameters: dict[str, Any]
    read_only: bool

    @property
    def qualified_name(self) -> str:
        return f"{self.server}{SEPARATOR}{self.name}"


def _tool(settings: McpSettings, tool: mt.Tool) -> McpTool:
    hint = tool.annotations.read_only_hint if tool.annotations is not None else None
    return McpTool(
        server=settings.name,
        name=tool.name,
        description=tool.description or tool.title or tool.name,
        parameters=dict(tool.input_schema),
        read_only=bool(hint) or tool.name in settings.read_only,
    )


class McpConnection:
    """One MCP server: started, listed, called, stopped."""

    def __init__(self, settings: McpSettings) -> None:
        self.settings = settings
        self.state: ConnectionState = "starting"
        self.reason: str | None = None
        self.tools: tuple[McpTool, ...] = ()
        self._session: ClientSession | None = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def name(self) -> str:
        return self.settings.name

    async def start(self, timeout_s: float = START_TIMEOUT_S) -> None:
        """Connect and list the tools; a failure leaves the connection ``down``, never raises."""
        self._task = asyncio.get_running_loop().create_task(self._hold())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._ready.wait(), timeout_s)
        if self.state == "starting":
            self._down(f"no answer within {timeout_s:g} s")

    async def stop(self) -> None:
        """Close the session (a stdio server's process is stopped with it)."""
        self._stop.set()
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(self._task, 10)

    async def call(
        self, tool: str, arguments: dict[str, Any], key: str, timeout_s: float
    ) -> mt.CallToolResult:
        """Call ``tool`` with ``_meta["riacho/idempotencyKey"] = key``; a cancelled caller
        sends MCP cancellation (the SDK's request cancellation)."""
        session = self._session
        if self.state != "up" or session is None:
            raise ToolUnavailable(f"the MCP server {self.name!r} is down: {self.reason}")
        try:
            meta = cast(RequestParamsMeta, {IDEMPOTENCY_KEY: key})
            return await session.call_tool(
                tool, arguments, read_timeout_seconds=timeout_s, meta=meta
            )
        except (OSError, ConnectionError) as exc:
            self._down(f"the connection broke: {exc}")
            raise ToolUnavailable(f"the MCP server {self.name!r} went down: {exc}") from exc

    async def _hold(self) -> None:
        try:
            async with self._transport() as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                listed = await session.list_tools()
                self.tools = tuple(_tool(self.settings, tool) for tool in listed.tools)
                self._session, self.state, self.reason = session, "up", None
                self._ready.set()
                log.info("mcp up server=%s tools=%d", self.name, len(self.tools))
                await self._watch(session)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # NOTE: an SDK task group raises groups; all mean "down"
            self._down(_words(exc))
        finally:
            self._session = None
            if self.state == "up":
                self._down("stopped", quiet=self._stop.is_set())

    async def _watch(self, session: ClientSession) -> None:
        """Until stopped, ping the server now and then: a dead one is said ``down``."""
        while not self._stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), PING_INTERVAL_S)
                return
            try:
                await asyncio.wait_for(session.send_ping(), PING_INTERVAL_S)
            except Exception as exc:
                self._down(f"it stopped answering: {_words(exc)}")
                return

    def _down(self, reason: str, *, quiet: bool = False) -> None:
        if self.state != "down" and not quiet:
            log.warning("mcp down server=%s reason=%s", self.name, reason)
        self.state, self.reason, self.tools = "down", reason, ()
        self._ready.set()

    @contextlib.asynccontextmanager
    async def _transport(self) -> AsyncIterator[tuple[Any, Any]]:
        settings = self.settings
        if settings.command is not None:
            command, *args = settings.command
            params = StdioServerParameters(
                command=sys.executable if command in ("python", "python3") else command,
                args=args,
                env={**os.environ, **settings.env},
            )
            async with stdio_client(params) as (read, write):
                yield read, write
            return
        assert settings.url is not None
        client = create_mcp_http_client(headers=settings.headers())
        async with client, streamable_http_client(settings.url, http_client=client) as streams:
            yield streams[0], streams[1]


IDEMPOTENCY_KEY = "riacho/idempotencyKey"


def _words(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_words(inner) for inner in exc.exceptions)
    return str(exc) or type(exc).__name__


class McpServers:
    """Every configured MCP server: the tools they offer now, and how each one is."""

    def __init__(self, settings: tuple[McpSettings, ...]) -> None:
        self.connections = {s.name: McpConnection(s) for s in settings}

    async def start(self) -> None:
        await asyncio.gather(*(c.start() for c in self.connections.values()))

    async def stop(self) -> None:
        await asyncio.gather(*(c.stop() for c in self.connections.values()))

    def tools(self) -> tuple[McpTool, ...]:
        """The tools of the servers that are up."""
        return tuple(t for c in self.connections.values() if c.state == "up" for t in c.tools)

    def find(self, qualified_name: str) -> McpTool | None:
        return next((t for t in self.tools() if t.qualified_name == qualified_name), None)

    def connection(self, server: str) -> McpConnection | None:
        return self.connections.get(server)

    def down(self) -> dict[str, str]:
        """Each server that is down, with why."""
        return {c.name: c.reason or "down" for c in self.connections.values() if c.state == "down"}


def tools_note(servers: McpServers) -> str | None:
    """The MCP servers that are down, in words (``None``: all are up)."""
    down = servers.down()
    if not down:
        return None
    return "; ".join(f"the MCP server {name!r} is down ({why})" for name, why in down.items())
