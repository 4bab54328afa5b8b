"""End-to-end fixtures: the reference server on a free port and a guarded Chromium page.

With ``RIACHO_E2E_CLUSTER=1`` every Riacho server a test starts is a small cluster instead
(tools/cluster.py): a throwaway redis-server, two workers with the same flags plus
``--redis-url``, and the round-robin proxy (server/cli/proxy.py) in front, whose URL the tests get;
any request may land on either worker. The workers' ``--db`` is then a PostgreSQL database
(one throwaway server for the session, one database per SQLite path a test names: see
:func:`database`).

With ``RIACHO_E2E_SNAPSHOT=1`` the booted page of every test (the ``app`` fixture) is a second
visit: after the first boot a worker makes and stores this browser's boot snapshot
(static/interpreter.mjs), the page is reloaded, and the test runs on the interpreter restored
from it.

Every test gets a page that fails the test on a console error, an uncaught page error, or a
request to anything but this machine (expected console errors, such as the browser's own
"Failed to load resource" line for a deliberate HTTP 503, are allowed per test).
"""

from __future__ import annotations

import asyncio
import http.cookiejar
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from playwright.sync_api import BrowserContext, ConsoleMessage, Page, Playwright, Request
from playwright.sync_api import Error as PlaywrightError

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import appwheel  # noqa: E402
import cluster  # noqa: E402
from chromium import find_chromium  # noqa: E402
from chromium_features import disable_features_flag  # noqa: E402

from tests.e2e.crashes import DUMP_HOME, crash_report, log_of, logging_flags  # noqa: E402

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1, EXCLUDE localhost",
]
LOCAL_URL = re.compile(r"^(?:https?://(?:127\.0\.0\.1|localhost)(?::\d+)?/|data:|blob:|about:)")
BOOT_TIMEOUT_MS = 60_000
CLUSTER = os.environ.get("RIACHO_E2E_CLUSTER") == "1"
SNAPSHOT_BOOT = os.environ.get("RIACHO_E2E_SNAPSHOT") == "1"
SNAPSHOT_STORE_TIMEOUT_MS = 60_000  # NOTE: a whole second boot, in a worker
CLUSTER_WORKERS = 2


def pytest_sessionstart(session: pytest.Session) -> None:
    """The page runs the app from its wheel: rebuilt here when a module changed since."""
    appwheel.build()


_session = ExitStack()
_postgres: list[str] = []  # NOTE: cluster mode: the session's PostgreSQL server, once started
_databases: dict[str, str] = {}  # NOTE: cluster mode: a test's SQLite path -> its database


def database(path: str) -> str:
    """The ``--db`` for a server a test starts on ``path``: the path itself, or in cluster mode
    a PostgreSQL database of its own (the same one again for the same path)."""
    if not CLUSTER or path.startswith("postgresql://"):
        return path
    if path not in _databases:
        if not _postgres:
            workdir = Path(tempfile.mkdtemp(prefix="riacho-e2e-postgres-"))
            _session.callback(shutil.rmtree, workdir, ignore_errors=True)
            _postgres.append(cluster.start_postgres(_session, workdir))
        name = f"e2e_{len(_databases) + 1}"
        # NOTE: a thread of its own: Playwright's sync API keeps this thread's loop running
        with ThreadPoolExecutor(1) as thread:
            thread.submit(asyncio.run, _create_database(_postgres[0], name)).result()
        _databases[path] = _postgres[0].rsplit("/", 1)[0] + "/" + name
    return _databases[path]


async def _create_database(server_url: str, name: str) -> None:
    admin = await asyncpg.connect(server_url)
    try:
        await admin.execute(f"CREATE DATABASE {name}")
    finally:
        await admin.close()


def pytest_sessionfinish(session: pytest.Session) -> None:
    _session.close()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/e2e/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def browser_type_launch_args(
    browser_type_launch_args: dict[str, Any], playwright: Playwright
) -> dict[str, Any]:
    """Chromium with the project's flags, its sampling profilers off (issue 39:
    tools/chromium_features.py), its log in a file of its own, and its crash handler on: a
    renderer that dies leaves a minidump under :data:`DUMP_HOME` that names the signal."""
    executable = os.environ.get("CHROMIUM_PATH") or find_chromium()
    if executable is None:
        pytest.fail("no Chromium found: run `make test` (it installs one) or set CHROMIUM_PATH")
    # NOTE: RIACHO_E2E_SAMPLERS=1 leaves the samplers on, to reproduce the crash (issue 39)
    samplers_on = os.environ.get("RIACHO_E2E_SAMPLERS") == "1"
    features = (
        [] if samplers_on else [disable_features_flag(playwright, executable, CHROMIUM_FLAGS)]
    )
    return {
        **browser_type_launch_args,
        "executable_path": executable,
        "args": [
            *CHROMIUM_FLAGS,
            *features,
            "--enable-crash-reporter",
            *logging_flags("session-browser"),
        ],
        "ignore_default_args": ["--disable-breakpad"],
        "env": {**os.environ, "XDG_CONFIG_HOME": str(DUMP_HOME)},
    }


def launch_args_of_own(launch_args: dict[str, Any], name: str) -> dict[str, Any]:
    """``launch_args`` for another browser (a persistent profile): its own Chromium log."""
    flags = [flag for flag in launch_args["args"] if log_of([flag]) is None]
    return {**launch_args, "args": [*flags, *logging_flags(name)]}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until_serving(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited early:\n{log.read_text(errors='replace')}")
        try:
            with urllib.request.urlopen(url, timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"server did not start in 30 s:\n{log.read_text(errors='replace')}")


@dataclass
class LiveServer:
    """The reference server started for the test session (the tests' own session with it)."""

    url: str
    log: Path
    opener: urllib.request.OpenerDirector = field(
        default_factory=lambda: urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )
    )

    def api(self, method: str, path: str, payload: bytes | None = None) -> bytes:
        """Call a route with the tests' session (made again if a reset dropped it)."""
        try:
            return self._call(method, path, payload)
        except urllib.error.HTTPError as error:
            if error.code != 401:
                raise
        self._call("GET", "/api/session", None)
        return self._call(method, path, payload)

    def _call(self, method: str, path: str, payload: bytes | None) -> bytes:
        request = urllib.request.Request(self.url + path, data=payload, method=method)
        request.add_header("Content-Type", "application/json")
        with self.opener.open(request, timeout=10) as response:
            return bytes(response.read())


@contextmanager
def serve(
    workdir: Path, arguments: list[str], ready_path: str = "/", port: int | None = None
) -> Iterator[LiveServer]:
    """``python -m <arguments> --port <port>`` (a free one by default) from the repository,
    until the block ends.

    In cluster mode (``RIACHO_E2E_CLUSTER=1``) a Riacho server (``arguments[0] == "server"``)
    is a cluster behind the proxy instead; other programs (the fake provider) run alone.
    """
    if CLUSTER and arguments[0] == "server":
        with _serve_cluster(workdir, arguments[1:], ready_path, port) as server:
            yield server
        return
    with _serve_one(workdir, arguments, ready_path, port) as server:
        yield server


@contextmanager
def _serve_one(
    workdir: Path, arguments: list[str], ready_path: str, port: int | None = None
) -> Iterator[LiveServer]:
    port = port or free_port()
    log = workdir / f"{arguments[0].replace('.', '_')}-{port}.log"
    command = [sys.executable, "-m", *arguments, "--port", str(port)]
    with log.open("ab") as log_file:  # NOTE: a server restarted on its port adds to its log
        process = subprocess.Popen(command, cwd=ROOT, stdout=log_file, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(url + ready_path, process, log)
        yield LiveServer(url=url, log=log)
    finally:
        process.terminate()
        process.wait(timeout=10)


@contextmanager
def _serve_cluster(
    workdir: Path, options: list[str], ready_path: str, port: int | None
) -> Iterator[LiveServer]:
    """Redis, ``CLUSTER_WORKERS`` workers with ``options`` on their ``--db``, and the proxy."""
    options, db = _take_option(options, "--db")
    options, _host = _take_option(options, "--host")  # NOTE: workers listen on 127.0.0.1
    if db is None:
        raise ValueError("a cluster's workers need one --db to share")
    with ExitStack() as stack:
        redis_url = cluster.start_redis(stack, workdir)
        workers = [
            cluster.start_worker(stack, workdir, database(db), redis_url, options)
            for _ in range(CLUSTER_WORKERS)
        ]
        upstreams = [argument for url in workers for argument in ("--upstream", url)]
        proxy = ["server.cli.proxy", "--host", "127.0.0.1", *upstreams]
        with _serve_one(workdir, proxy, ready_path, port) as server:
            yield server


def _take_option(options: list[str], name: str) -> tuple[list[str], str | None]:
    """``options`` without ``name VALUE``, and that value."""
    if name not in options:
        return options, None
    at = options.index(name)
    return options[:at] + options[at + 2 :], options[at + 1]


def add_password_user(db: str, name: str, password: str) -> None:
    """``python -m server users add NAME --password-stdin`` on the database ``db``."""
    added = subprocess.run(
        [sys.executable, "-m", "server", "users", "add", name, "--db", db, "--password-stdin"],
        cwd=ROOT,
        input=password + "\n",
        capture_output=True,
        text=True,
        check=False,
    )
    assert added.returncode == 0, added.stderr


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args: dict[str, Any]) -> dict[str, Any]:
    """No service worker: it answers the page's files from its cache, where ``page.route``
    cannot see them. The tests of the worker and of offline use allow it (test_offline.py)."""
    return {**browser_context_args, "service_workers": "block"}


@pytest.fixture(scope="session")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    workdir = tmp_path_factory.mktemp("server")
    arguments = ["server", "--host", "127.0.0.1", "--db", str(workdir / "riacho.db")]
    with serve(workdir, [*arguments, "--test-hooks", "--demo-token-ms", "5"]) as server:
        yield server


@dataclass
class PageGuard:
    """Collects what must not happen on a page; tests may allow expected console errors."""

    problems: list[str] = field(default_factory=list)
    nonlocal_requests: list[str] = field(default_factory=list)
    allowed: list[re.Pattern[str]] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    asked: list[Request] = field(default_factory=list)

    def allow_console_error(self, pattern: str) -> None:
        self.allowed.append(re.compile(pattern))

    def on_console(self, message: ConsoleMessage) -> None:
        if message.type == "error" and not any(p.search(message.text) for p in self.allowed):
            self.problems.append(f"console error: {message.text}")

    def on_request(self, request: Request) -> None:
        self.requests.append(request.url)
        self.asked.append(request)
        if not LOCAL_URL.match(request.url):
            self.nonlocal_requests.append(request.url)

    def on_crash(self, _page: Page) -> None:
        self.problems.append(crash_report())

    def watch(self, page: Page) -> None:
        """Collect from ``page``; block anything off this machine; a renderer crash is a
        problem whose report says what Chromium and the machine said then."""
        page.on("console", self.on_console)
        page.on("crash", self.on_crash)
        page.on("pageerror", lambda error: self.problems.append(f"page error: {error}"))
        page.on("request", self.on_request)
        page.route(OFF_MACHINE, lambda route: route.abort())


OFF_MACHINE = re.compile(r"^(?!https?://(127\.0\.0\.1|localhost)[:/])[a-z]+://.*")


@pytest.fixture
def guard(page: Page) -> Iterator[PageGuard]:
    watch = PageGuard()
    watch.watch(page)
    yield watch
    assert watch.nonlocal_requests == [], "the page made requests off this machine"
    assert watch.problems == [], "the page logged errors"


def _boot(page: Page, live_server: LiveServer) -> None:
    """Open the page and wait for ``html[data-ready]`` (with SNAPSHOT_BOOT: then reload it and
    wait again, booted from the snapshot)."""
    # NOTE: with SNAPSHOT_BOOT the worker makes the snapshot at once, not 5 s after
    page.goto(live_server.url + ("/?bootSnapshotDelayMs=0" if SNAPSHOT_BOOT else "/"))
    page.wait_for_selector("html[data-ready]", state="attached", timeout=BOOT_TIMEOUT_MS)
    if SNAPSHOT_BOOT:
        _boot_again_from_snapshot(page, live_server.url + "/")


def _boot_again_from_snapshot(page: Page, url: str) -> None:
    state = "globalThis.riachoInterpreter"
    page.wait_for_function(f"{state}.snapshot === 'stored'", timeout=SNAPSHOT_STORE_TIMEOUT_MS)
    page.goto(url)
    page.wait_for_selector("html[data-ready]", state="attached", timeout=BOOT_TIMEOUT_MS)
    history = page.evaluate(f"{state}.history")
    assert history == ["restored"], f"the second boot did not restore the snapshot: {history}"


@pytest.fixture
def page_server(live_server: LiveServer) -> LiveServer:
    """The server the page boots against: the demo server (a test module may override it)."""
    return live_server


@pytest.fixture
def app(page: Page, guard: PageGuard, page_server: LiveServer) -> Page:
    """The Riacho page, booted (``html[data-ready]``) against ``page_server``.

    NOTE: a renderer crash while booting fails the test with what Chromium and the machine
    said (tests/e2e/crashes.py), never retried away: it is what a user sees as "Aw, Snap!".
    """
    try:
        _boot(page, page_server)
    except PlaywrightError as error:
        if "crash" in str(error).lower():
            pytest.fail(f"{error}\n" + "\n".join(guard.problems), pytrace=False)
        raise
    return page


@pytest.fixture
def server(live_server: LiveServer) -> LiveServer:
    """The shared live server, wiped first: no scenario or live run left by another test."""
    live_server.api("POST", "/__test__/reset", b"{}")
    return live_server


@pytest.fixture
def riacho(server: LiveServer, app: Page) -> Page:
    """The booted page, on a server wiped before the page made its session."""
    return app


@pytest.fixture
def installed_profile(
    playwright: Playwright, browser_type_launch_args: dict[str, Any], tmp_path: Path
) -> Iterator[BrowserContext]:
    """A browser profile of its own (a persistent context), as a user's is: Chromium offers an
    install only there, never in an incognito-like context such as Playwright's default."""
    launch_args = launch_args_of_own(browser_type_launch_args, "installed-profile")
    context = playwright.chromium.launch_persistent_context(tmp_path / "profile", **launch_args)
    crashes: list[str] = []
    context.on("page", lambda page: page.on("crash", lambda _: crashes.append(crash_report())))
    try:
        yield context
    finally:
        context.close()
    assert not crashes, crashes[0]


def installability_errors(page: Page) -> list[dict[str, Any]]:
    """What Chromium's own installability check says of ``page`` (DevTools)."""
    cdp = page.context.new_cdp_session(page)
    found: dict[str, Any] = cdp.send("Page.getInstallabilityErrors")
    return list(found["installabilityErrors"])
