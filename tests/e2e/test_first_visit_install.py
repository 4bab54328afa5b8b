"""A first visit's packages (static/interpreter.mjs): a worker downloads the runtime's files
first and the wheels after, unpacks them while the page starts the runtime, and the page
installs what it unpacked once Python runs; Pyodide's own loader installs them when that fails.
A return visit, restored from its snapshot, starts no such worker."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from playwright.sync_api import Page, Request, Route, expect

from tests.e2e.conftest import BOOT_TIMEOUT_MS, ROOT, LiveServer, PageGuard, appwheel
from tests.e2e.scenarios import send
from tests.e2e.test_boot_snapshot import (
    PYODIDE_HANDLE,
    boot_state,
    reload_and_boot,
    wait_until_stored,
)

NO_SNAPSHOT = "/?bootSnapshotDelayMs=600000"  # NOTE: nothing made while the test runs
LOCK = json.loads((ROOT / "static/vendor/pyodide/pyodide-lock.json").read_text(encoding="utf-8"))
# NOTE: pyscript.toml's list and what it depends on; pygments is locked but loaded on demand
LOCKED = {
    "pydantic",
    "pydantic-core",
    "typing-extensions",
    "typing-inspection",
    "annotated-types",
    "markdown-it-py",
    "mdurl",
    "mdit-py-plugins",
}
WHEELS = {LOCK["packages"][name]["file_name"] for name in LOCKED} | {appwheel.WHEEL}
PYGMENTS = LOCK["packages"]["pygments"]["file_name"]
WASM = "pyodide.asm.wasm"
# NOTE: the bench's line (tools/bench/boot.py): the runtime takes seconds to arrive
SLOW_LINE = {
    "offline": False,
    "latency": 40,
    "downloadThroughput": 2_500_000,
    "uploadThroughput": 625_000,
}


def loaded_packages(page: Page) -> dict[str, str]:
    loaded: dict[str, str] = page.evaluate(
        "async () => JSON.parse(JSON.stringify((await window.__pyodide).loadedPackages))"
    )
    return loaded


def boot(page: Page, url: str) -> dict[str, Any]:
    page.goto(url)
    page.wait_for_selector("html[data-ready]", state="attached", timeout=BOOT_TIMEOUT_MS)
    return boot_state(page)


def test_a_first_visit_installs_the_wheels_a_worker_unpacked(
    page: Page, guard: PageGuard, server: LiveServer
) -> None:
    page.add_init_script(PYODIDE_HANDLE)
    state = boot(page, server.url + NO_SNAPSHOT)

    assert state["history"] == ["booted"] and state["install"] == "unpacked in a worker", state
    loaded = loaded_packages(page)
    assert {name for name, channel in loaded.items() if channel == "default channel"} == LOCKED
    assert loaded["riacho-app"] == server.url + appwheel.URL.removeprefix(".")
    answer = send(page, "Installed without Pyodide's loader")
    expect(answer).to_have_attribute("data-status", "completed", timeout=30_000)


def test_the_wheels_are_asked_for_once_each_after_the_runtime_has_arrived(
    page: Page, guard: PageGuard, server: LiveServer
) -> None:
    events: list[tuple[str, str]] = []

    def asked(route: Route) -> None:
        events.append(("asked", route.request.url.rsplit("/", 1)[-1]))
        route.continue_()

    def finished(request: Request) -> None:
        if request.url.endswith(WASM):
            events.append(("arrived", WASM))

    page.route("**/*.whl", asked)  # NOTE: the worker's requests too
    page.on("requestfinished", finished)  # NOTE: the page's own (its preload of the runtime)
    page.context.new_cdp_session(page).send("Network.emulateNetworkConditions", SLOW_LINE)
    state = boot(page, server.url + NO_SNAPSHOT)

    assert state["install"] == "unpacked in a worker", state
    # NOTE: Pygments is no boot wheel: it may be asked for right after data-ready, when idle
    wheels = [name for kind, name in events if kind == "asked" and name != PYGMENTS]
    assert sorted(wheels) == sorted(WHEELS), "each wheel once, none fetched again by Pyodide"
    first_wheel = next(i for i, (kind, _) in enumerate(events) if kind == "asked")
    assert ("arrived", WASM) in events[:first_wheel], events


def test_when_the_worker_cannot_unpack_pyodides_loader_installs_the_packages(
    page: Page, guard: PageGuard, server: LiveServer
) -> None:
    page.add_init_script(PYODIDE_HANDLE)
    # NOTE: the first request of the app's wheel (the worker's) gets a body that is no zip;
    # the next (Pyodide's) the real one
    page.route(f"**/{appwheel.WHEEL}", lambda route: route.fulfill(body=b"not a wheel"), times=1)
    state = boot(page, server.url + NO_SNAPSHOT)

    assert state["install"].startswith("by Pyodide") and "not a zip archive" in state["install"]
    assert server.url + appwheel.URL.removeprefix(".") in loaded_packages(page).values()
    answer = send(page, "Installed by Pyodide")
    expect(answer).to_have_attribute("data-status", "completed", timeout=30_000)


def test_a_restored_visit_starts_no_download_worker(
    page: Page, guard: PageGuard, server: LiveServer
) -> None:
    boot(page, server.url + "/?bootSnapshotDelayMs=0")
    wait_until_stored(page)
    workers: list[str] = []  # NOTE: each one's role (static/interpreter.mjs, startWorker)
    page.on("worker", lambda worker: workers.append(urlsplit(worker.url).fragment))

    assert reload_and_boot(page)["history"] == ["restored"]
    assert "download" not in workers and "install" not in boot_state(page)
