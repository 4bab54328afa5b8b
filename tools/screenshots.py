"""Regenerate the README's screenshots from a real Chromium session against the demo model.

``make screenshots`` starts the reference server on a free port with a fresh database, opens
the page at desktop (1280 x 800) and phone (390 x 844, touch) sizes in light and dark, asks the
demo model one question with thinking and tools on (so the answer has a thought, tool calls,
an image, a table, highlighted code and typeset math), and writes
``docs/screenshot-{desktop,mobile}-{light,dark}.png``; then, at phone size, the app as its
service worker serves it with the network off: a chat read from the device, a prompt waiting
for the connection (``docs/screenshot-offline.png``); the phone's top bar with a long
title, the context ring and the compaction callout (``docs/screenshot-phone-header-*.png``);
and, at desktop size, the model's
``python`` call run in the page (``docs/screenshot-python.png``).
"""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from chromium import find_chromium  # noqa: E402
from service_worker import WORKER_ACTIVE  # noqa: E402

DOCS = ROOT / "docs"
PYTHON_PROMPT = (
    "Run python: import statistics\nrain = {'Porto': 1254, 'Lisboa': 725, 'Faro': 509}\n"
    "for city, mm in rain.items():\n    print(f'{city:8} {mm:5} mm')\n"
    "print('mean', round(statistics.mean(rain.values())), 'mm')"
)
PROMPT = "Draw a river at dawn, then show the quadratic formula math with some code"
SIZES: dict[str, dict[str, Any]] = {
    "desktop": {"viewport": {"width": 1280, "height": 800}, "device_scale_factor": 1},
    "mobile": {
        "viewport": {"width": 390, "height": 844},
        "device_scale_factor": 2,
        "is_mobile": True,
        "has_touch": True,
    },
}
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"]
BOOT_MS = 90_000


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_until_serving(url: str, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"screenshots: the server exited with {server.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit("screenshots: the server did not start")


def toggle(page: Page, action: str, mobile: bool) -> None:
    if mobile:
        page.locator("[data-action=composer-options]").click()
    page.locator(f"[data-action={action}]").click()
    if mobile:
        page.locator("[data-action=composer-options]").click()


def shoot(page: Page, url: str, mobile: bool, path: Path) -> None:
    page.goto(url)
    page.wait_for_selector("html[data-ready]", state="attached", timeout=BOOT_MS)
    toggle(page, "thinking", mobile)
    toggle(page, "tools", mobile)
    page.locator("textarea[name=prompt]").fill(PROMPT)
    page.locator("[data-action=send]").click()
    answer = page.locator("[data-role=assistant][data-status=completed]")
    answer.wait_for(timeout=120_000)
    page.wait_for_selector(".math .katex", state="attached", timeout=30_000)
    page.wait_for_selector("code[data-highlighted] span", state="attached", timeout=30_000)
    # NOTE: code is highlighted a block per frame: wait for the last one too.
    page.wait_for_function(
        "!document.querySelector('.md-done code[data-lang]:not([data-highlighted])')"
    )
    page.wait_for_function("[...document.images].every(i => i.complete)")
    # NOTE: the end of the answer: highlighted code, typeset math, the actions.
    page.locator(".math[data-math=display]").first.evaluate(
        "e => e.scrollIntoView({block: 'center'})"
    )
    page.locator("[data-action=jump-to-latest]").evaluate("b => { b.hidden = true; }")
    page.mouse.move(0, 0)
    page.wait_for_timeout(400)
    page.screenshot(path=str(path))
    print(f"screenshots: wrote {path.relative_to(ROOT)}", flush=True)


LONG_TITLE = "Planning a slow trip along the rivers of the Pantanal and the coast of Brazil"


def shoot_phone_header(page: Page, url: str, path: Path) -> None:
    """The phone's top bar with a long title, the context ring and the compaction callout:
    three demo answers fill three quarters of the demo's 900-token window."""
    page.goto(url)
    page.wait_for_selector("html[data-ready]", state="attached", timeout=BOOT_MS)
    for answered, prompt in enumerate(
        (LONG_TITLE, "Which months are dry?", "And where should we stay?"), start=1
    ):
        page.locator("textarea[name=prompt]").fill(prompt)
        page.locator("[data-action=send]").click()
        page.wait_for_function(
            "n => document.querySelectorAll("
            "'[data-role=assistant][data-status=completed]').length >= n",
            arg=answered,
            timeout=120_000,
        )
    page.locator("[data-callout=compaction]").wait_for()
    page.locator("[data-action=jump-to-latest]").evaluate("b => { b.hidden = true; }")
    page.mouse.move(0, 0)
    page.wait_for_timeout(400)
    page.screenshot(path=str(path))
    print(f"screenshots: wrote {path.relative_to(ROOT)}", flush=True)


OFFLINE_PROMPT = "What is the source of the Douro?"


def shoot_offline(page: Page, url: str, path: Path) -> None:
    """A chat answered online, then the page reloaded with no network and a prompt sent."""
    page.goto(url)
    page.wait_for_selector("html[data-ready]", state="attached", timeout=BOOT_MS)
    page.locator("textarea[name=prompt]").fill("Name three rivers of Portugal")
    page.locator("[data-action=send]").click()
    page.locator("[data-role=assistant][data-status=completed]").wait_for(timeout=120_000)
    page.evaluate(WORKER_ACTIVE)
    page.context.set_offline(True)
    page.reload()
    page.wait_for_selector("html[data-ready]", state="attached", timeout=BOOT_MS)
    page.locator("[data-offline]").wait_for()
    page.locator("textarea[name=prompt]").fill(OFFLINE_PROMPT)
    page.locator("[data-action=send]").click()
    page.locator("[data-queued]").wait_for()
    page.locator("[data-queued]").evaluate("e => e.scrollIntoView({block: 'end'})")
    page.locator("[data-action=jump-to-latest]").evaluate("b => { b.hidden = true; }")
    page.mouse.move(0, 0)
    page.wait_for_timeout(400)
    page.screenshot(path=str(path))
    print(f"screenshots: wrote {path.relative_to(ROOT)}", flush=True)


def shoot_python(page: Page, url: str, path: Path) -> None:
    """The demo model's python call: its code in the tool card, run in the page, the answer."""
    page.goto(url)
    page.wait_for_selector("html[data-ready]", state="attached", timeout=BOOT_MS)
    page.locator("textarea[name=prompt]").fill(PYTHON_PROMPT)
    page.locator("[data-action=send]").click()
    run = page.locator("[data-runs-in=client] [data-action=approve-tool]")
    run.wait_for(timeout=120_000)
    run.click()
    page.locator("[data-role=assistant][data-status=completed]").wait_for(timeout=120_000)
    page.locator("[data-runs-in=client]").evaluate("e => e.scrollIntoView({block: 'start'})")
    page.mouse.move(0, 0)
    page.wait_for_timeout(400)
    page.screenshot(path=str(path))
    print(f"screenshots: wrote {path.relative_to(ROOT)}", flush=True)


def main() -> None:
    executable = find_chromium()
    if executable is None:
        raise SystemExit("screenshots: no Chromium found (see tools/chromium.py)")
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    with tempfile.TemporaryDirectory() as workdir:
        command = [sys.executable, "-m", "server", "--host", "127.0.0.1", "--port", str(port)]
        command += ["--db", str(Path(workdir) / "shots.db"), "--demo-token-ms", "2"]
        server = subprocess.Popen(command, cwd=ROOT)
        try:
            wait_until_serving(url, server)
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=executable, args=FLAGS)
                for size, options in SIZES.items():
                    for scheme in ("light", "dark"):
                        context = browser.new_context(**options, color_scheme=scheme)
                        path = DOCS / f"screenshot-{size}-{scheme}.png"
                        shoot(context.new_page(), url, size == "mobile", path)
                        context.close()
                for scheme in ("light", "dark"):
                    context = browser.new_context(**SIZES["mobile"], color_scheme=scheme)
                    path = DOCS / f"screenshot-phone-header-{scheme}.png"
                    shoot_phone_header(context.new_page(), url, path)
                    context.close()
                context = browser.new_context(**SIZES["mobile"], color_scheme="light")
                shoot_offline(context.new_page(), url, DOCS / "screenshot-offline.png")
                context.close()
                context = browser.new_context(**SIZES["desktop"], color_scheme="light")
                shoot_python(context.new_page(), url, DOCS / "screenshot-python.png")
                context.close()
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=10)


if __name__ == "__main__":
    main()
