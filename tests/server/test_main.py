"""``python -m server`` as a real process: prints its URL, streams, logs, stops on Ctrl-C."""

from __future__ import annotations

import asyncio
import signal
import socket
import sys
from pathlib import Path

import aiohttp
import pytest

from server.__main__ import parse_args
from tests.server.helpers import events_of

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_arguments_map_to_config(tmp_path: Path) -> None:
    config = parse_args(
        [
            "--host",
            "0.0.0.0",
            "--port",
            "9",
            "--db",
            "x.db",
            "--test-hooks",
            "--keepalive-s",
            "1.5",
            "--retention-s",
            "60",
            "--orphan-s",
            "7",
            "--demo-token-ms",
            "3",
            "--static-root",
            str(tmp_path),
            "--access-log",
            "a.log",
            "--allow-anonymous",
        ]
    )
    assert (config.host, config.port, config.db_path, config.test_hooks) == (
        "0.0.0.0",
        9,
        "x.db",
        True,
    )
    assert (config.keepalive_s, config.retention_s, config.orphan_s, config.demo_token_ms) == (
        1.5,
        60.0,
        7.0,
        3.0,
    )
    assert (config.static_root, config.access_log) == (tmp_path.resolve(), "a.log")
    assert parse_args([]).test_hooks is False, "test hooks are off by default"


def test_public_urls_come_from_the_command_line_and_the_toml(tmp_path: Path) -> None:
    toml = tmp_path / "riacho.toml"
    toml.write_text(
        'public_urls = ["https://b.example.org"]\n[[providers]]\nkind = "openai-chat"\n'
        'base_url = "http://127.0.0.1:1/v1"\n[[providers.models]]\nid = "m"\n'
    )
    config = parse_args(["--public-url", "https://a.example.org", "--config", str(toml)])
    assert config.public_urls == ("https://a.example.org", "https://b.example.org")


def test_trusted_proxies_default_to_loopback() -> None:
    assert parse_args([]).trusted_proxies == ("127.0.0.1", "::1")
    given = parse_args(["--trusted-proxy", "10.0.0.0/8", "--trusted-proxy", "192.0.2.7"])
    assert given.trusted_proxies == ("10.0.0.0/8", "192.0.2.7")


def test_redis_url_and_lease_map_to_config() -> None:
    config = parse_args(["--redis-url", "redis://127.0.0.1:6390/2", "--lease-s", "2.5"])
    assert (config.redis_url, config.lease_s) == ("redis://127.0.0.1:6390/2", 2.5)
    assert parse_args([]).redis_url is None, "one process, runs in memory, by default"


async def test_server_process_streams_and_stops_cleanly_on_ctrl_c(tmp_path: Path) -> None:
    port, access_log = free_port(), tmp_path / "access.log"
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "server",
        "--port",
        str(port),
        "--db",
        str(tmp_path / "r.db"),
        "--demo-token-ms",
        "1",
        "--access-log",
        str(access_log),
        cwd=REPO,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        line = await asyncio.wait_for(process.stdout.readline(), 20)
        assert f"http://127.0.0.1:{port}/" in line.decode()
        base = f"http://127.0.0.1:{port}"
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
            await (await session.get(f"{base}/api/session")).read()
            chat = await (await session.post(f"{base}/api/chats")).json()
            response = await session.post(
                f"{base}/api/respond/stream", json={"chatId": chat["id"], "prompt": "hi"}
            )
            events = events_of(await response.read())
        assert events[-1]["type"] == "done"
        process.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(process.wait(), 10) == 0
        assert "POST /api/respond/stream" in access_log.read_text()
        assert process.stderr is not None
        log = (await process.stderr.read()).decode()
        assert "run end" in log and "status=completed" in log and "Traceback" not in log
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(["--host", "0.0.0.0"], "is reachable by others", id="open-host-anonymous"),
        pytest.param(["--auth", "proxy"], "needs --trusted-user-header", id="proxy-no-header"),
        pytest.param(
            ["--allowed-origin", "chat.example.org"], "must be like", id="origin-not-a-url"
        ),
        pytest.param(["--redis-url", "127.0.0.1:6379"], "must be like", id="redis-not-a-url"),
        pytest.param(["--lease-s", "0"], "must be positive", id="lease-not-positive"),
        pytest.param(["--public-url", "chat.example.org"], "must be like", id="public-url-bare"),
        pytest.param(["--trusted-proxy", "proxy.lan"], "must be an address", id="proxy-name"),
    ],
)
def test_an_unsafe_set_up_refuses_to_start(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_args(argv)
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


def test_a_non_loopback_host_starts_with_accounts() -> None:
    config = parse_args(["--host", "0.0.0.0", "--auth", "password"])
    assert (config.host, config.auth) == ("0.0.0.0", "password")
