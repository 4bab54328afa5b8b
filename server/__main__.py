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
from server.config import REPO_ROOT, Config


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
    return p


def parse_args(argv: list[str]) -> Config:
    """The configuration from command-line arguments."""
    a = _parser().parse_args(argv)
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


def main(argv: list[str] | None = None) -> None:
    config = parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    asyncio.run(serve(config))


if __name__ == "__main__":
    main()
