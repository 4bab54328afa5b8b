"""``create_app(config)``: the aiohttp application of the reference server."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable

from aiohttp import web

from server.config import Config
from server.contract.errors import error_middleware
from server.http.auth import auth_middleware, session_lifetime
from server.http.deadlines import body_rate_middleware
from server.http.hosts import allowed_host_names, host_middleware
from server.http.passwords import PasswordChecker
from server.http.security import add_response_headers, security_middleware
from server.http.services import SERVICES, Services
from server.http.static import add_static_routes
from server.http.storage import storage_middleware
from server.http.throttle import Throttle
from server.model.catalog import Catalog
from server.routes import add_test_routes, api_routes
from server.runs.bus import LocalBus, RunBus
from server.runs.readers import Readers
from server.runs.redis_bus import RedisBus
from server.runs.registry import RunRegistry
from server.runs.remote import watch_owners
from server.scenarios.hooks import make_hooks
from server.store import runlog
from server.store.db import open_database
from server.store.faults import is_storage_failure
from server.store.users import expire_sessions
from server.tools.connections import McpServers

log = logging.getLogger("riacho.app")
_BODY_SLACK = 1024 * 1024


async def _sweep(svc: Services) -> None:
    """Drop expired event logs and sessions now and then."""
    while True:
        try:
            dropped = await runlog.expire_logs(svc.db, svc.config.retention_s)
            if dropped:
                log.info("dropped the event logs of %d runs", dropped)
            await expire_sessions(svc.db, session_lifetime(svc.config))
        except Exception as error:
            if not is_storage_failure(error):
                raise
            log.warning("sweep skipped, storage unavailable: %s", error)  # NOTE: next time
        await asyncio.sleep(svc.config.sweep_interval_s)


async def _recover(svc: Services) -> asyncio.Task[None] | None:
    """Runs left ``running`` by a process that is gone become ``interrupted``: all of them at
    start when this process is alone; else those whose owner's lease expires, all along."""
    bus = svc.runs.bus
    if bus.spans_processes:
        return asyncio.get_running_loop().create_task(watch_owners(svc.runs, svc.config.lease_s))
    recovered = await runlog.recover_after_restart(svc.db)
    if recovered:
        log.info("runs interrupted by the last shutdown: %s", ", ".join(recovered))
    return None


def _lifecycle(svc: Services) -> Callable[[web.Application], AsyncIterator[None]]:
    async def lifecycle(_app: web.Application) -> AsyncIterator[None]:
        await svc.db.open()
        await svc.mcp.start()
        await svc.runs.bus.start(svc.runs.on_cancel_sent)
        if svc.hooks is not None:
            await svc.hooks.start()
        loop = asyncio.get_running_loop()
        background = [loop.create_task(_sweep(svc)), await _recover(svc)]
        yield
        for task in filter(None, background):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await svc.runs.shutdown()
        await svc.runs.bus.aclose()
        if svc.hooks is not None:
            await svc.hooks.aclose()
        await svc.catalog.aclose()
        await svc.mcp.stop()
        await svc.db.close()
        svc.passwords.close()

    return lifecycle


def _bus(config: Config) -> RunBus:
    if config.redis_url is None:
        return LocalBus()
    return RedisBus(config.redis_url, config.lease_s, config.retention_s)


def create_app(config: Config) -> web.Application:
    """The application: API, page files, and (with ``test_hooks``) the test routes."""
    limits = config.limits
    # NOTE: bodies are read with per-route limits (jsonio.read_body, the upload's own); this
    # cap only guards an accidental whole-body read.
    app = web.Application(
        middlewares=[
            error_middleware,
            storage_middleware,
            body_rate_middleware,
            host_middleware,
            auth_middleware,
            security_middleware,
        ],
        client_max_size=limits.body_max_bytes + _BODY_SLACK,
    )
    app.on_response_prepare.append(add_response_headers)
    app.router.add_routes(api_routes())
    if config.test_hooks:
        add_test_routes(app)
    add_static_routes(app, config.static_root)
    db = open_database(config.db_path)
    runs = RunRegistry(db, config, _bus(config))
    hooks = make_hooks(config.redis_url, runs) if config.test_hooks else None
    svc = Services(
        config,
        db,
        runs,
        Catalog(config.providers),
        PasswordChecker(config.limits),
        Throttle(config.limits),
        allowed_host_names(config),
        Readers(config.limits),
        hooks,
        McpServers(config.mcp),
    )
    app[SERVICES] = svc
    app.cleanup_ctx.append(_lifecycle(svc))
    return app
