"""What every browser benchmark needs: a static root, the reference server, Chromium, pages.

The server is started on a free port with a temporary ``--static-root``: symlinks to the
repository's ``index.html``, ``pyscript.toml``, ``app/`` and ``static/*``, plus
``static/bench/`` holding this folder's pages (the bare PyScript page). So the bare page and
Riacho are served from the same origin, with the same URLs (and cache headers) for the
vendored runtime, and no server code or repository file is touched.
"""

from __future__ import annotations

import http.cookiejar
import json
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, BrowserContext, Page, Playwright
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from chromium_features import disable_features_flag  # noqa: E402

VENDOR_FILES = ("static/vendor/pyodide/pyodide.mjs", "static/vendor/pyscript/core.js")
BENCH_PAGES = ("bare.html", "bare.toml")
# NOTE: the flags of tests/e2e/conftest.py (CHROMIUM_FLAGS), copied: quiet and local only;
# the features that crash a Pyodide page are added by flags()
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
BOOT_TIMEOUT_MS = 90_000
_flags: dict[str, list[str]] = {}
COMPOSER_WAIT_MS = 10_000
READY_SCRIPT = (HERE / "ready.js").read_text()
PAGE_SCRIPT = (HERE / "page.js").read_text()


class BenchError(RuntimeError):
    """A benchmark cannot run (missing set-up, no browser, server failure)."""


def check_setup() -> None:
    """Fail with a clear message if ``make setup`` has not vendored the runtime."""
    missing = [name for name in VENDOR_FILES if not (ROOT / name).is_file()]
    if missing:
        raise BenchError(
            f"missing {', '.join(missing)}: run `make setup` first (it writes static/vendor/)"
        )


def chromium_path() -> str:
    """The system Chromium (``$CHROMIUM_PATH``, ``/usr/bin/chromium``, …), or a clear error."""
    sys.path.insert(0, str(ROOT / "tools"))
    from chromium import find_chromium

    path = find_chromium()
    if path is None:
        raise BenchError(
            "no Chromium found: install one (Debian/Ubuntu: `apt-get install chromium`), "
            "run `make test` (it installs one), or set CHROMIUM_PATH"
        )
    return path


def make_static_root(workdir: Path) -> Path:
    """A static root of symlinks to the page files, plus ``static/bench/`` (this folder's pages)."""
    root = workdir / "www"
    (root / "static" / "bench").mkdir(parents=True)
    for name in ("index.html", "pyscript.toml", "sw.js", "app"):
        (root / name).symlink_to(ROOT / name)
    for entry in (ROOT / "static").iterdir():
        (root / "static" / entry.name).symlink_to(entry)
    for name in BENCH_PAGES:
        shutil.copyfile(HERE / name, root / "static" / "bench" / name)
    return root


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    """The reference server, started by :func:`start_server`."""

    url: str
    process: subprocess.Popen[bytes]
    log: Path
    opener: urllib.request.OpenerDirector = field(
        default_factory=lambda: urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )
    )

    def api(self, method: str, path: str, payload: Any = None) -> Any:
        """A JSON request to the server (test hooks included) with the bench's own session
        (made on first use: the test routes need one); the decoded answer."""
        try:
            return self._call(method, path, payload)
        except urllib.error.HTTPError as error:
            if error.code != 401:
                raise
        self._call("GET", "/api/session", None)
        return self._call(method, path, payload)

    def _call(self, method: str, path: str, payload: Any) -> Any:
        data = None if payload is None else json.dumps(payload).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        with self.opener.open(request, timeout=30) as response:
            return json.loads(response.read() or b"null")

    def stop(self) -> None:
        """Terminate the server and wait for it."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_server(workdir: Path, static_root: Path, demo_token_ms: int) -> Server:
    """The server on a free port (``:memory:`` db, test hooks); logs go to files in ``workdir``."""
    port = _free_port()
    log = workdir / "server.log"
    command = [sys.executable, "-m", "server", "--host", "127.0.0.1", "--port", str(port)]
    command += ["--db", ":memory:", "--test-hooks", "--demo-token-ms", str(demo_token_ms)]
    command += ["--static-root", str(static_root), "--access-log", str(workdir / "access.log")]
    with log.open("wb") as log_file:
        process = subprocess.Popen(command, cwd=ROOT, stdout=log_file, stderr=subprocess.STDOUT)
    server = Server(f"http://127.0.0.1:{port}", process, log)
    _wait_until_serving(server)
    return server


def _wait_until_serving(server: Server) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise BenchError(f"server exited early:\n{server.log.read_text(errors='replace')}")
        try:
            with urllib.request.urlopen(server.url + "/", timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    server.stop()
    raise BenchError(f"server did not start in 30 s:\n{server.log.read_text(errors='replace')}")


SNAPSHOT_WAIT_MS = 60_000
SNAPSHOT_SETTLED = (
    "!['booted', 'making', 'refused'].includes(globalThis.riachoInterpreter?.snapshot ?? 'none')"
)


def flags(playwright: Playwright, executable: str) -> list[str]:
    """The project's flags, Chromium's crash-prone samplers off (tools/chromium_features.py)."""
    if executable not in _flags:
        features = disable_features_flag(playwright, executable, CHROMIUM_FLAGS)
        _flags[executable] = [*CHROMIUM_FLAGS, features]
    return _flags[executable]


def launch(playwright: Playwright, executable: str) -> Browser:
    """Headless Chromium with the project's flags."""
    return playwright.chromium.launch(
        executable_path=executable, args=flags(playwright, executable)
    )


def launch_persistent(
    playwright: Playwright, executable: str, user_data: Path, *, service_workers: bool = True
) -> BrowserContext:
    """A Chromium whose one context keeps its HTTP cache (and V8's code cache) in ``user_data``;
    ``service_workers`` False blocks them (the page then never has its worker)."""
    return playwright.chromium.launch_persistent_context(
        str(user_data),
        executable_path=executable,
        args=flags(playwright, executable),
        headless=True,
        service_workers="allow" if service_workers else "block",
    )


def boot(
    context: BrowserContext,
    url: str,
    *,
    tools: bool = False,
    setup: Callable[[Page], object] | None = None,
) -> tuple[Page, float]:
    """Open ``url`` in a new page; wait for ``html[data-ready]``; the ms from navigation start.

    ``tools`` also installs ``page.js`` (the in-page helpers and the Pyodide handle); ``setup``
    is called with the new page before it navigates (a CDP session, network emulation, …).
    """
    page = context.new_page()
    page.add_init_script(READY_SCRIPT)
    if tools:
        page.add_init_script(PAGE_SCRIPT)
    if setup is not None:
        setup(page)
    page.on("pageerror", lambda error: print(f"bench: page error: {error}", file=sys.stderr))
    page.goto(url)
    page.wait_for_selector(
        "html[data-ready], html[data-boot=failed]", state="attached", timeout=BOOT_TIMEOUT_MS
    )
    if page.evaluate("document.documentElement.dataset.boot") == "failed":
        raise BenchError(f"{url}: {page.locator('#boot-text').text_content()}")
    ready_ms = page.evaluate("window.__benchReadyAt")
    if not isinstance(ready_ms, int | float):
        raise BenchError(f"{url}: data-ready appeared but its time was not recorded")
    return page, float(ready_ms)


def settle_snapshot(page: Page) -> None:
    """Wait until Riacho's first visit has made and stored its boot snapshot (a worker, started
    5 s after data-ready: static/interpreter.mjs), so that it runs beside nothing measured and a
    return visit finds it; at once on a page that has nothing to make (restored, bare page)."""
    page.wait_for_function(SNAPSHOT_SETTLED, timeout=SNAPSHOT_WAIT_MS, polling=100)


def composer_ms(page: Page) -> tuple[float | None, float | None]:
    """Ms from navigation start to the first frame in which ``textarea[name=prompt]`` accepts
    typing, and to the moment it stopped accepting it again before ``data-ready`` (``ready.js``;
    None: never). (None, None) on a page without a composer. Waits COMPOSER_WAIT_MS at most
    after ``data-ready``: a composer still unusable then is an error."""
    try:
        page.wait_for_function(
            "window.__benchComposerAt !== undefined", timeout=COMPOSER_WAIT_MS, polling=50
        )
    except PlaywrightTimeoutError as error:
        raise BenchError(
            f"{page.url}: textarea[name=prompt] still not typeable"
            f" {COMPOSER_WAIT_MS / 1000:g} s after data-ready"
        ) from error
    at, lost = page.evaluate("[window.__benchComposerAt, window.__benchComposerLostAt ?? null]")
    return (None if at is None else float(at)), (None if lost is None else float(lost))


def median(values: list[float]) -> float:
    """The median (the mean of the middle two for an even count)."""
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2
