"""``python -m server``: start the reference server (demo model, page files, optional hooks)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ipaddress
import logging
import signal
import sys
from pathlib import Path
from urllib.parse import urlsplit

from aiohttp import web

from server.app import create_app
from server.cli import users as users_cli
from server.config import DEFAULT_MAX_MODEL_CALLS, LOOPBACK_PROXIES, REPO_ROOT, Config, Limits
from server.config.providers import (
    PROVIDER_KINDS,
    ProviderSettings,
    ProvidersFile,
    SettingsError,
    check_unique_ids,
    from_command_line,
    load_file,
)
from server.config.tools import DEFAULT_CLIENT_TOOL_TIMEOUT_S
from server.http.deadlines import handler_options
from server.http.services import SERVICES
from server.model.catalog import DEMO_MODELS
from server.store.db import is_postgres_url


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m server", description=__doc__)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument(
        "--db",
        default=str(REPO_ROOT / ".cache" / "riacho.db"),
        help="SQLite file (':memory:' for a throw-away database) or postgresql://USER@HOST:PORT/DB",
    )
    p.add_argument("--test-hooks", action="store_true", help="enable the /__test__/ routes")
    p.add_argument("--keepalive-s", type=float, default=15.0)
    p.add_argument("--retention-s", type=float, default=3600.0)
    p.add_argument("--orphan-s", type=float, default=120.0)
    p.add_argument("--demo-token-ms", type=float, default=30.0)
    p.add_argument(
        "--coalesce-ms",
        type=float,
        default=50.0,
        help="merge an answer's text deltas into one event per window this long (0: one per token)",
    )
    p.add_argument("--static-root", type=Path, default=REPO_ROOT)
    p.add_argument("--access-log", help="file for the access log (default: none)")
    p.add_argument(
        "--redis-url",
        help="redis://HOST:PORT/DB shared by several server processes on one --db",
    )
    p.add_argument(
        "--lease-s",
        type=float,
        default=5.0,
        help="with --redis-url: a run whose process is silent this long is interrupted",
    )
    _security_arguments(p.add_argument_group("accounts, origins and limits (see docs/deploy.md)"))
    _provider_arguments(
        p.add_argument_group("real models (see docs/providers.md and riacho.example.toml)")
    )
    return p


def _security_arguments(g: argparse._ArgumentGroup) -> None:
    g.add_argument("--auth", choices=["anonymous", "password", "proxy"], default="anonymous")
    g.add_argument("--trusted-user-header", help="with --auth proxy: the header naming the user")
    g.add_argument(
        "--trusted-proxy",
        action="append",
        default=[],
        help="with --auth proxy: an address or network (10.0.0.0/8) of the proxy; the user"
        " header is honoured only from these (default: 127.0.0.1 and ::1; repeat)",
    )
    g.add_argument(
        "--allow-anonymous",
        action="store_true",
        help="serve anonymous users on a non-loopback host (anyone who reaches it can chat)",
    )
    g.add_argument(
        "--allowed-origin",
        action="append",
        default=[],
        help="another origin the page may be served from (CORS with credentials; repeat)",
    )
    g.add_argument(
        "--public-url",
        action="append",
        default=[],
        help="a URL users reach the server by (https://chat.example.org): its name passes the"
        " Host check, and https there makes the session cookie Secure (repeat)",
    )
    g.add_argument(
        "--no-cross-origin-isolation",
        action="store_true",
        help="send no Cross-Origin-Embedder-Policy: Stop then restarts code's Python",
    )
    defaults = Limits()
    g.add_argument("--max-prompt-bytes", type=int, default=defaults.prompt_max_bytes)
    g.add_argument("--max-attachments", type=int, default=defaults.attachments_per_request)
    g.add_argument("--max-runs-per-user", type=int, default=defaults.runs_per_user)
    g.add_argument("--shutdown-grace-s", type=float, default=10.0)
    g.add_argument(
        "--header-deadline-s",
        type=float,
        default=defaults.header_deadline_s,
        help="a request's headers must arrive within this (and an idle connection closes)",
    )
    g.add_argument(
        "--body-min-rate",
        type=float,
        default=defaults.body_min_bytes_per_s,
        help="bytes per second a request body must keep up after its first seconds",
    )


LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})


def _check_security(parser: argparse.ArgumentParser, a: argparse.Namespace) -> None:
    if a.auth == "anonymous" and a.host not in LOOPBACK and not a.allow_anonymous:
        parser.error(
            f"--host {a.host} is reachable by others: use --auth password or --auth proxy "
            "(or --allow-anonymous to let anyone who reaches it chat)"
        )
    if a.auth == "proxy" and not a.trusted_user_header:
        parser.error("--auth proxy needs --trusted-user-header NAME")
    if a.redis_url is not None and not a.redis_url.startswith(("redis://", "rediss://", "unix://")):
        parser.error(f"--redis-url {a.redis_url!r} must be like redis://127.0.0.1:6379/0")
    if a.lease_s <= 0:
        parser.error("--lease-s must be positive")
    if not a.coalesce_ms >= 0:
        parser.error("--coalesce-ms must be 0 or more")
    for proxy in a.trusted_proxy:
        try:
            ipaddress.ip_network(proxy, strict=False)
        except ValueError:
            parser.error(f"--trusted-proxy {proxy!r} must be an address or a network (10.0.0.0/8)")
    for url in a.public_url:
        if not url.startswith(("http://", "https://")) or not urlsplit(url).hostname:
            parser.error(f"--public-url {url!r} must be like https://chat.example.org")
    for origin in a.allowed_origin:
        if not origin.startswith(("http://", "https://")) or origin.rstrip("/") != origin:
            parser.error(f"--allowed-origin {origin!r} must be like https://chat.example.org")


def _provider_arguments(g: argparse._ArgumentGroup) -> None:
    g.add_argument("--config", type=Path, help="TOML file with [[providers]] (several providers)")
    g.add_argument("--provider", choices=PROVIDER_KINDS, help="one provider from the command line")
    g.add_argument("--model", action="append", default=[], help="a model id (repeat for more)")
    g.add_argument("--base-url", help="the provider's endpoint (default: its public one)")
    g.add_argument("--api-key-env", help="the environment variable holding the API key")
    g.add_argument("--context-window", type=int, help="tokens of the models' context window")
    g.add_argument("--connect-timeout-s", type=float, help="TCP connect timeout")
    g.add_argument("--first-byte-timeout-s", type=float, help="wait for the response to start")
    g.add_argument("--provider-idle-timeout-s", type=float, help="longest silence mid-stream")
    g.add_argument("--max-model-calls", type=int, help="cap of model calls per turn (tool loop)")
    g.add_argument(
        "--approval-timeout-s", type=float, help="an acting tool's wait for approval (default 600)"
    )
    g.add_argument(
        "--client-tool-timeout-s",
        type=float,
        help="the wait for a page to run the model's python (default 300)",
    )


def _providers(a: argparse.Namespace) -> tuple[tuple[ProviderSettings, ...], ProvidersFile]:
    """Providers from ``--config`` then ``--provider`` (and the file's other settings);
    ``SettingsError`` says what is wrong."""
    providers: list[ProviderSettings] = []
    file = ProvidersFile.model_construct(max_model_calls=None)
    if a.config is not None:
        file = load_file(a.config)
        providers += file.providers
    if a.provider is not None:
        if not a.model:
            raise SettingsError("--provider needs at least one --model")
        providers.append(from_command_line(a.provider, a.model, a.base_url, a.api_key_env))
        providers[-1] = _with_overrides(providers[-1], a)
    elif a.model or a.base_url or a.api_key_env:
        raise SettingsError("--model, --base-url and --api-key-env need --provider")
    check_unique_ids(tuple(providers), {model.info.id for model in DEMO_MODELS})
    return tuple(providers), file


def _with_overrides(provider: ProviderSettings, a: argparse.Namespace) -> ProviderSettings:
    fields = {
        "connect_timeout_s": a.connect_timeout_s,
        "first_byte_timeout_s": a.first_byte_timeout_s,
        "idle_timeout_s": a.provider_idle_timeout_s,
    }
    changes: dict[str, object] = {k: v for k, v in fields.items() if v is not None}
    if a.context_window is not None:
        changes["models"] = [
            {**model.model_dump(), "context_window": a.context_window} for model in provider.models
        ]
    try:
        return ProviderSettings.model_validate({**provider.model_dump(), **changes})
    except ValueError as exc:
        raise SettingsError(str(exc)) from exc


def parse_args(argv: list[str]) -> Config:
    """The configuration from command-line arguments (exits with a message when unusable)."""
    parser = _parser()
    a = parser.parse_args(argv)
    _check_security(parser, a)
    try:
        providers, file = _providers(a)
    except SettingsError as exc:
        parser.error(str(exc))
    return Config(
        host=a.host,
        port=a.port,
        db_path=a.db,
        test_hooks=a.test_hooks,
        keepalive_s=a.keepalive_s,
        retention_s=a.retention_s,
        orphan_s=a.orphan_s,
        demo_token_ms=a.demo_token_ms,
        coalesce_ms=a.coalesce_ms,
        static_root=a.static_root.resolve(),
        access_log=a.access_log,
        providers=providers,
        max_model_calls=a.max_model_calls or file.max_model_calls or DEFAULT_MAX_MODEL_CALLS,
        mcp=file.mcp,
        approval_timeout_s=a.approval_timeout_s or file.approval_timeout_s,
        client_tool_timeout_s=a.client_tool_timeout_s or DEFAULT_CLIENT_TOOL_TIMEOUT_S,
        auth=a.auth,
        trusted_user_header=a.trusted_user_header,
        trusted_proxies=tuple(a.trusted_proxy) or LOOPBACK_PROXIES,
        allowed_origins=tuple(a.allowed_origin),
        public_urls=tuple(a.public_url) + (file.public_urls if file else ()),
        cross_origin_isolation=not a.no_cross_origin_isolation,
        shutdown_grace_s=a.shutdown_grace_s,
        redis_url=a.redis_url,
        lease_s=a.lease_s,
        limits=Limits(
            prompt_max_bytes=a.max_prompt_bytes,
            attachments_per_request=a.max_attachments,
            runs_per_user=a.max_runs_per_user,
            header_deadline_s=a.header_deadline_s,
            body_min_bytes_per_s=a.body_min_rate,
        ),
    )


def _access_logger(path: str | None) -> logging.Logger | None:
    if path is None:
        return None
    logger = logging.getLogger("riacho.access")
    logger.propagate = False
    logger.addHandler(logging.FileHandler(path))
    logger.setLevel(logging.INFO)
    return logger


async def serve(config: Config) -> None:
    """Serve until SIGINT/SIGTERM, then stop cleanly."""
    if config.db_path != ":memory:" and not is_postgres_url(config.db_path):
        Path(config.db_path).parent.mkdir(parents=True, exist_ok=True)
    access = _access_logger(config.access_log)
    app = create_app(config)
    runner = web.AppRunner(
        app,
        handler_cancellation=True,
        access_log=access,
        shutdown_timeout=2.0,
        **handler_options(config.limits),
    )
    await runner.setup()
    site = web.TCPSite(runner, config.host, config.port)
    await site.start()
    print(
        f"Riacho is running on http://{config.host}:{config.port}/"
        f"{'  (test hooks on)' if config.test_hooks else ''}",
        flush=True,
    )
    for line in _model_lines(config):
        print(line, flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        print(f"Stopping: running answers get {config.shutdown_grace_s:g} s to finish…", flush=True)
        await app[SERVICES].runs.drain(config.shutdown_grace_s)
        await runner.cleanup()


def _model_lines(config: Config) -> list[str]:
    """One line per configured model: where it is served from, and whether it can be used."""
    lines = []
    for provider in config.providers:
        problem = provider.missing_key()
        where = provider.base_url or "the provider's public endpoint"
        for model in provider.models:
            state = f"unavailable: {problem}" if problem else "ready"
            lines.append(f"  model {model.id} ({provider.kind} at {where}): {state}")
    return lines


def main(argv: list[str] | None = None) -> None:
    arguments = sys.argv[1:] if argv is None else argv
    if arguments[:1] == ["users"]:
        sys.exit(users_cli.run(arguments[1:]))
    config = parse_args(arguments)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("alembic.runtime.plugins").setLevel(logging.WARNING)  # NOTE: one line each
    asyncio.run(serve(config))


if __name__ == "__main__":
    main()
