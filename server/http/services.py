"""The objects shared by every route, stored once on the application."""

from __future__ import annotations

from dataclasses import dataclass, field

from aiohttp import web

from server.config import Config
from server.http.passwords import PasswordChecker
from server.http.throttle import Throttle
from server.model.catalog import Catalog
from server.runs.readers import Readers
from server.runs.registry import RunRegistry
from server.scenarios.hooks import TestHooks
from server.store.db import Database
from server.tools.approvals import DecisionBell
from server.tools.connections import McpServers


@dataclass(slots=True)
class Services:
    """Configuration, database, run registry, the models offered, the password checks and
    their throttle, the server's host names, the readers of runs, (with ``--test-hooks``) the
    test hooks' state, and the MCP servers connected."""

    config: Config
    db: Database
    runs: RunRegistry
    catalog: Catalog
    passwords: PasswordChecker
    throttle: Throttle
    allowed_hosts: frozenset[str]
    readers: Readers
    hooks: TestHooks | None = None
    mcp: McpServers = field(default_factory=lambda: McpServers(()))
    bell: DecisionBell = field(default_factory=DecisionBell)


SERVICES = web.AppKey("services", Services)


def services(request: web.Request) -> Services:
    """The services of the application serving ``request``."""
    return request.app[SERVICES]
