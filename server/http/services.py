"""The objects shared by every route, stored once on the application."""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web

from server.config import Config
from server.http.passwords import PasswordChecker
from server.http.throttle import Throttle
from server.model.catalog import Catalog
from server.runs.readers import Readers
from server.runs.registry import RunRegistry
from server.scenarios.hooks import TestHooks
from server.store.db import Database


@dataclass(slots=True)
class Services:
    """Configuration, database, run registry, the models offered, the password checks and
    their throttle and (with ``--test-hooks``)
    the test hooks' state."""

    config: Config
    db: Database
    runs: RunRegistry
    catalog: Catalog
    passwords: PasswordChecker
    throttle: Throttle
    allowed_hosts: frozenset[str]
    readers: Readers
    hooks: TestHooks | None = None


SERVICES = web.AppKey("services", Services)


def services(request: web.Request) -> Services:
    """The services of the application serving ``request``."""
    return request.app[SERVICES]
