"""Booting from this browser's own snapshot (static/interpreter.mjs): after a first visit a worker
makes and stores it, the next visit restores it; one that does not fit is refused and remade."""

from __future__ import annotations

import io
import zipfile
from typing import Any
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import BOOT_TIMEOUT_MS, ROOT, LiveServer, PageGuard, appwheel
from tests.e2e.scenarios import send

STORE_TIMEOUT_MS = 60_000  # NOTE: a whole second boot, in a worker
STATE = "globalThis.riachoInterpreter"
# NOTE: PyScript's own hook hands over the page's interpreter (the same module instance).
PYODIDE_HANDLE = """
window.__pyodide = new Promise((resolve) => {
  import("/static/vendor/pyscript/core.js").then(({ hooks }) => {
    hooks.main.onReady.add((wrap) => resolve(wrap.interpreter));
  });
});
"""


def boot_state(page: Page) -> dict[str, Any]:
    state = page.evaluate(f"JSON.parse(JSON.stringify({STATE}))")
    assert isinstance(state, dict)
    return state


def wait_until_stored(page: Page) -> None:
    page.wait_for_function(f"{STATE}.snapshot === 'stored'", timeout=STORE_TIMEOUT_MS)


def reload_and_boot(page: Page) -> dict[str, Any]:
    page.reload()
    page.wait_for_selector("html[data-ready]", state="attached", timeout=BOOT_TIMEOUT_MS)
    return boot_state(page)


def rewrite_entry(
    page: Page,
    *,
    header: str | None = None,
    value: str = "",
    cut: int = 0,
    spoil_library: bool = False,
) -> None:
    """Store the snapshot again with one header changed, its body ``cut`` bytes short, or the
    first shared library's first byte (the wasm magic, right after the heap) changed."""
    page.evaluate(
        """async ([header, value, cut, spoil]) => {
          const cache = await caches.open("riacho-boot");
          const [request] = await cache.keys();
          const stored = await cache.match(request);
          const headers = new Headers(stored.headers);
          if (header !== null) headers.set(header, value);
          const body = new Uint8Array(await stored.arrayBuffer());
          if (spoil) body[Number(headers.get("x-riacho-snapshot-bytes"))] ^= 0xff;
          await cache.put(request, new Response(body.slice(0, body.length - cut), { headers }));
        }""",
        [header, value, cut, spoil_library],
    )


@pytest.fixture
def first_visit(page: Page, guard: PageGuard, server: LiveServer) -> Page:
    """A first visit (a fresh context, whatever RIACHO_E2E_SNAPSHOT says), booted normally; its
    snapshot is made at once, not 5 s after data-ready."""
    page.goto(server.url + "/?bootSnapshotDelayMs=0")
    page.wait_for_selector("html[data-ready]", state="attached", timeout=BOOT_TIMEOUT_MS)
    assert boot_state(page)["history"][0] == "booted"
    return page


def test_a_second_visit_boots_from_the_snapshot_the_first_made_and_streams(
    first_visit: Page,
) -> None:
    app = first_visit
    wait_until_stored(app)
    assert boot_state(app)["history"] == ["booted", "making", "stored"]
    app.add_init_script(PYODIDE_HANDLE)

    second = reload_and_boot(app)
    assert second["history"] == ["restored"], second
    held = "async () => (await window.__pyodide)._api.config._loadSnapshot === undefined"
    assert app.evaluate(held), "the page keeps the stored body (~50 MB) for its whole life"
    answer = send(app, "Hello from a restored heap")
    expect(answer).to_have_attribute("data-status", "completed", timeout=30_000)
    expect(answer.locator(".message-text")).to_contain_text("Hello from a restored heap")


def test_restored_interpreters_draw_fresh_random_numbers(first_visit: Page) -> None:
    app = first_visit
    app.add_init_script(PYODIDE_HANDLE)
    wait_until_stored(app)
    draws = []
    for _ in range(2):
        assert reload_and_boot(app)["snapshot"] == "restored"
        draws.append(
            app.evaluate(
                "async () => (await window.__pyodide).runPython("
                "'import random; random.getrandbits(64)').toString()"
            )
        )
    assert draws[0] != draws[1], "two restores of one heap drew the same numbers"


def redeployed_app_wheel() -> bytes:
    """The app's wheel as a new deploy serves it: the same modules, one file more."""
    out = io.BytesIO()
    with zipfile.ZipFile(ROOT / appwheel.URL) as shipped, zipfile.ZipFile(out, "w") as wheel:
        for info in shipped.infolist():
            wheel.writestr(info, shipped.read(info))
        wheel.writestr("app/DEPLOYED", "a later build\n")
    return out.getvalue()


def test_a_snapshot_of_another_app_build_is_refused_and_remade(first_visit: Page) -> None:
    app = first_visit
    wait_until_stored(app)
    body = redeployed_app_wheel()
    app.route(f"**/{appwheel.WHEEL}", lambda route: route.fulfill(body=body))

    state = reload_and_boot(app)
    assert state["history"][:2] == ["refused", "booted"], state
    assert "the app changed" in state["error"]
    answer = send(app, "Booted normally")
    expect(answer).to_have_attribute("data-status", "completed", timeout=30_000)
    wait_until_stored(app)
    assert reload_and_boot(app)["history"] == ["restored"]  # NOTE: the new build's snapshot


def test_the_snapshot_is_made_5_s_after_the_page_is_ready_not_while_it_starts(
    page: Page, guard: PageGuard, server: LiveServer
) -> None:
    workers: list[str] = []  # NOTE: each one's role (static/interpreter.mjs, startWorker)
    page.on("worker", lambda worker: workers.append(urlsplit(worker.url).fragment))
    page.goto(server.url + "/")
    page.wait_for_selector("html[data-ready]", state="attached", timeout=BOOT_TIMEOUT_MS)
    # NOTE: the packages' downloader (tests/e2e/test_first_visit_install.py); later one fetches
    # Pygments (tests/e2e/test_chat_product.py)
    assert workers.count("download") == 1 and "snapshot" not in workers
    page.wait_for_timeout(4_000)  # NOTE: data-ready was seen a moment after it was set
    assert "snapshot" not in workers and boot_state(page)["history"] == ["booted"]
    wait_until_stored(page)
    assert workers.count("snapshot") == 1, "made beside the page, in a worker, not in the page"


def test_a_snapshot_for_other_packages_is_refused_before_any_use(first_visit: Page) -> None:
    app = first_visit
    wait_until_stored(app)
    rewrite_entry(app, header="x-riacho-lock", value="f" * 64)

    state = reload_and_boot(app)
    assert state["history"][:2] == ["refused", "booted"], state
    assert "made for other packages" in state["error"]
    expect(app.locator("textarea[name=prompt]")).to_be_enabled()


def test_a_truncated_snapshot_is_refused_and_the_page_boots_normally(first_visit: Page) -> None:
    app = first_visit
    wait_until_stored(app)
    rewrite_entry(app, cut=1)

    state = reload_and_boot(app)
    assert state["history"][:2] == ["refused", "booted"], state
    assert "expected" in state["error"]
    answer = send(app, "Still here")
    expect(answer).to_have_attribute("data-status", "completed", timeout=30_000)


def test_a_snapshot_whose_library_does_not_load_is_refused_not_hung(first_visit: Page) -> None:
    app = first_visit
    wait_until_stored(app)
    rewrite_entry(app, spoil_library=True)

    state = reload_and_boot(app)  # NOTE: a preRun that failed would have waited forever
    assert state["history"][:2] == ["refused", "booted"], state
    answer = send(app, "Still answering")
    expect(answer).to_have_attribute("data-status", "completed", timeout=30_000)
