"""Boot to ``html[data-ready]`` (§10.1): Riacho against the bare PyScript page, cold and warm.

Cold: a fresh (in-memory) browser context per page load. Warm: a persistent context on a
fresh user-data dir; the page boots once, stays open WARM_PAUSE_S (V8 writes its compiled-wasm
cache then, see RUNTIME-NOTES), is closed and opened again: that second boot is measured.
Riacho and the bare page alternate (COLD_ROUNDS, WARM_ROUNDS each); the figure is the ratio
of the medians.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness import boot, launch, launch_persistent, median
from playwright.sync_api import Browser, Playwright

COLD_ROUNDS = 5
WARM_ROUNDS = 3  # NOTE: a warm measurement costs a browser launch, two boots and a pause
WARM_PAUSE_S = 2.0
RIACHO_PATH = "/"
BARE_PATH = "/static/bench/bare.html"


@dataclass(frozen=True, slots=True)
class BootTimes:
    """Median seconds to ``data-ready`` of each page."""

    riacho: float
    bare: float


def cold_boot(browser: Browser, url: str) -> float:
    """Seconds to ready in a fresh (in-memory) context: no HTTP cache, no code cache."""
    context = browser.new_context()
    try:
        _, ready_ms = boot(context, url)
    finally:
        context.close()
    return ready_ms / 1000


def warm_boot(playwright: Playwright, executable: str, url: str) -> float:
    """Seconds to ready on a second visit, with the HTTP and V8 caches of the first."""
    with tempfile.TemporaryDirectory(prefix="riacho-bench-profile-") as user_data:
        context = launch_persistent(playwright, executable, Path(user_data))
        try:
            first, _ = boot(context, url)
            first.wait_for_timeout(WARM_PAUSE_S * 1000)
            first.close()
            _, ready_ms = boot(context, url)
        finally:
            context.close()
    return ready_ms / 1000


def alternate(measure: Callable[[str], float], base_url: str, rounds: int) -> BootTimes:
    """``rounds`` alternating measurements of Riacho and the bare page; medians."""
    riacho, bare = [], []
    for _ in range(rounds):
        riacho.append(measure(base_url + RIACHO_PATH))
        bare.append(measure(base_url + BARE_PATH))
    return BootTimes(median(riacho), median(bare))


def boot_times(playwright: Playwright, executable: str, base_url: str) -> dict[str, BootTimes]:
    """Cold and warm boot times of both pages."""
    browser = launch(playwright, executable)
    try:
        cold = alternate(lambda url: cold_boot(browser, url), base_url, COLD_ROUNDS)
    finally:
        browser.close()
    warm = alternate(lambda url: warm_boot(playwright, executable, url), base_url, WARM_ROUNDS)
    return {"cold": cold, "warm": warm}
