"""``python -m server``: start the reference server (demo model, page files, optional hooks)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
from pathlib import Path

from aiohttp import web

from server.app import create_app
from server.catalog import DEMO_MODELS
from server.config import DEFAULT_MAX_MODEL_CALLS, REPO_ROOT, Config
from server.providers.settings import (
    PROVIDER_KINDS,
    ProviderSettings,
    SettingsError,
    check_unique_ids,
    from_command_line,
    load_file,
)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m server", description=__doc__)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument(
        "--db",
        default=str(REPO_ROOT / ".cache" / "riacho.db"),
        help="SQLite file (':memory:' for a throw-away database)",
    )
    p.add_argument("--test-hooks", action="store_true", help="enable the /__test__/ routes")
    p.add_argument("--keepalive-s", type=float, default=15.0)
    p.add_argument("--retention-s", type=float, default=3600.0)
    p.add_argument("--orphan-s", type=float, default=120.0)
    p.add_argument("--demo-token-ms", type=float, default=30.0)
    p.add_argument("--static-root", type=Path, default=REPO_ROOT)
    p.add_argument("--access-log", help="file for the access log (default: none)")
    _provider_arguments(p.add_argument_group("real models (see README and riacho.example.toml)"))
    return p


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


def _providers(a: argparse.Namespace) -> tuple[tuple[ProviderSettings, ...], int | None]:
    """Providers from ``--config`` then ``--provider``; ``SettingsError`` says what is wrong."""
    providers: list[ProviderSettings] = []
    cap = None
    if a.config is not None:
        file = load_file(a.config)
        providers += file.providers
        cap = file.max_model_calls
    if a.provider is not None:
        if not a.model:
            raise SettingsError("--provider needs at least one --model")
        providers.append(from_command_line(a.provider, a.model, a.base_url, a.api_key_env))
        providers[-1] = _with_overrides(providers[-1], a)
    elif a.model or a.base_url or a.api_key_env:
        raise SettingsError("--model, --base-url and --api-key-env need --provider")
    check_unique_ids(tuple(providers), {model.info.id for model in DEMO_MODELS})
    return tuple(providers), cap


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
    try:
        providers, file_cap = _providers(a)
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
        static_root=a.static_root.resolve(),
        access_log=a.access_log,
        providers=providers,
        max_model_calls=a.max_model_calls or file_cap or DEFAULT_MAX_MODEL_CALLS,
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
    if config.db_path != ":memory:":
        Path(config.db_path).parent.mkdir(parents=True, exist_ok=True)
    access = _access_logger(config.access_log)
    runner = web.AppRunner(
        create_app(config), handler_cancellation=True, access_log=access, shutdown_timeout=2.0
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
        print("Stopping…", flush=True)
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
    config = parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    asyncio.run(serve(config))


if __name__ == "__main__":
    main()
