"""Boot to ``html[data-ready]`` (§10.1): Riacho against the bare PyScript page, cold and warm on
loopback and cold on an emulated network; and when Riacho's composer first accepts typing.

Cold: a fresh (in-memory) browser context per page load. Warm: a persistent context on a
fresh user-data dir; the page boots once, stays open WARM_PAUSE_S (V8 writes its compiled-wasm
cache then, see RUNTIME-NOTES), is closed and opened again: that second boot is measured.
Emulated: cold, with Chromium's network emulation (CDP ``Network.emulateNetworkConditions`` on
the page's session before it navigates: a latency added to every request until its response
headers, and the download and upload throughputs shared by all requests; it also applies to
what a dedicated worker of the page fetches).
Riacho and the bare page alternate (COLD_ROUNDS, WARM_ROUNDS, EMULATED_ROUNDS each); the figure
is the ratio of the medians. The composer time is ``ready.js``'s, taken in the same runs.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import boot, composer_ms, launch, launch_persistent, median, settle_snapshot
from playwright.sync_api import Browser, BrowserContext, Page, Playwright
from service_worker import WORKER_ACTIVE

COLD_ROUNDS = 5
WARM_ROUNDS = 3  # NOTE: a warm measurement costs a browser launch, two boots and a pause
EMULATED_ROUNDS = 3  # NOTE: ~10-15 s a boot on the emulated line
WARM_PAUSE_S = 2.0
RIACHO_PATH = "/"
BARE_PATH = "/static/bench/bare.html"
# The emulated line: Mbit/s = 1e6 bit/s; CDP wants bytes/s and the latency in ms.
EMULATED_DOWN_MBIT = 20
EMULATED_UP_MBIT = 5
EMULATED_LATENCY_MS = 40
EMULATED_LINE = (
    f"{EMULATED_DOWN_MBIT} Mbit/s down, {EMULATED_UP_MBIT} Mbit/s up,"
    f" {EMULATED_LATENCY_MS} ms latency"
)


@dataclass(frozen=True, slots=True)
class Sample:
    """One boot: seconds to ``data-ready``; to a typeable composer (None: no composer); to the
    composer's loss before ``data-ready`` (None: kept); what Riacho's interpreter did with its
    boot snapshot (static/interpreter.mjs: "restored", "booted", …; None: the bare page)."""

    ready: float
    composer: float | None
    composer_lost: float | None = None
    snapshot: str | None = None


@dataclass(frozen=True, slots=True)
class BootTimes:
    """Median seconds to ``data-ready`` of each page, Riacho's composer, and every run."""

    riacho: float
    bare: float
    composer: float | None
    runs: dict[str, list[Sample]]

    def snapshot_runs(self, state: str) -> int:
        """Riacho runs whose interpreter's first boot step was ``state`` ("restored", "booted")."""
        return sum(s.snapshot == state for s in self.runs["riacho"])

    @property
    def composer_lost_runs(self) -> int:
        """Riacho runs in which the composer stopped accepting typing before data-ready."""
        return sum(s.composer_lost is not None for s in self.runs["riacho"])

    def as_json(self) -> dict[str, Any]:
        def runs(name: str) -> list[dict[str, float | str | None]]:
            return [
                {
                    "ready_s": round(s.ready, 4),
                    "composer_s": _round(s.composer),
                    "composer_lost_s": _round(s.composer_lost),
                    "snapshot": s.snapshot,
                }
                for s in self.runs[name]
            ]

        return {
            "riacho_s": round(self.riacho, 4),
            "bare_s": round(self.bare, 4),
            "ratio": round(self.riacho / self.bare, 4),
            "composer_s": _round(self.composer),
            "composer_lost_runs": self.composer_lost_runs,
            "riacho_runs": runs("riacho"),
            "bare_runs": runs("bare"),
        }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _sample(context: BrowserContext, url: str, setup: Callable[[Page], object] | None) -> Sample:
    page, ready_ms = boot(context, url, setup=setup)
    composer, lost = composer_ms(page)
    # NOTE: the first step only: a first visit goes on to "stored" in an idle moment
    snapshot = page.evaluate("globalThis.riachoInterpreter?.history[0] ?? null")
    return Sample(ready_ms / 1000, _seconds(composer), _seconds(lost), snapshot)


def _seconds(ms: float | None) -> float | None:
    return None if ms is None else ms / 1000


def cold_boot(browser: Browser, url: str) -> Sample:
    """A boot in a fresh (in-memory) context: no HTTP cache, no code cache."""
    context = browser.new_context()
    try:
        return _sample(context, url, None)
    finally:
        context.close()


def emulate_line(page: Page) -> None:
    """Throttle the page's network to the emulated line (call before it navigates)."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send(
        "Network.emulateNetworkConditions",
        {
            "offline": False,
            "latency": EMULATED_LATENCY_MS,
            "downloadThroughput": EMULATED_DOWN_MBIT * 1_000_000 / 8,
            "uploadThroughput": EMULATED_UP_MBIT * 1_000_000 / 8,
        },
    )


def emulated_boot(browser: Browser, url: str) -> Sample:
    """A cold boot on the emulated line."""
    context = browser.new_context()
    try:
        return _sample(context, url, emulate_line)
    finally:
        context.close()


def warm_boot(
    playwright: Playwright, executable: str, url: str, *, service_workers: bool = True
) -> Sample:
    """A second visit, with the HTTP and V8 caches of the first (and, for Riacho with
    ``service_workers``, its service worker, installed and active since the first)."""
    with tempfile.TemporaryDirectory(prefix="riacho-bench-profile-") as user_data:
        context = launch_persistent(
            playwright, executable, Path(user_data), service_workers=service_workers
        )
        try:
            first, _ = boot(context, url)
            first.wait_for_timeout(WARM_PAUSE_S * 1000)
            settle_snapshot(first)
            if service_workers and url.endswith(RIACHO_PATH):
                first.evaluate(WORKER_ACTIVE)
            first.close()
            sample = _sample(context, url, None)
            if service_workers and url.endswith(RIACHO_PATH):
                controlled = context.pages[-1].evaluate("navigator.serviceWorker.controller")
                if controlled is None:
                    raise RuntimeError("the warm visit was not controlled by the service worker")
            return sample
        finally:
            context.close()


def worker_times(playwright: Playwright, executable: str, base_url: str) -> BootTimes:
    """Riacho's warm visit with its service worker (``riacho``) and without it (``bare``
    here: the same page, the worker blocked), alternating."""
    url = base_url + RIACHO_PATH
    with_worker: list[Sample] = []
    without: list[Sample] = []
    for _ in range(WARM_ROUNDS):
        with_worker.append(warm_boot(playwright, executable, url))
        without.append(warm_boot(playwright, executable, url, service_workers=False))
    return BootTimes(
        median([s.ready for s in with_worker]),
        median([s.ready for s in without]),
        None,
        {"riacho": with_worker, "bare": without},
    )


def alternate(measure: Callable[[str], Sample], base_url: str, rounds: int) -> BootTimes:
    """``rounds`` alternating measurements of Riacho and the bare page; medians."""
    riacho: list[Sample] = []
    bare: list[Sample] = []
    for _ in range(rounds):
        riacho.append(measure(base_url + RIACHO_PATH))
        bare.append(measure(base_url + BARE_PATH))
    composers = [s.composer for s in riacho if s.composer is not None]
    return BootTimes(
        median([s.ready for s in riacho]),
        median([s.ready for s in bare]),
        median(composers) if len(composers) == len(riacho) else None,
        {"riacho": riacho, "bare": bare},
    )


def boot_times(playwright: Playwright, executable: str, base_url: str) -> dict[str, BootTimes]:
    """Cold, warm and emulated-cold boot times of both pages."""
    browser = launch(playwright, executable)
    try:
        cold = alternate(lambda url: cold_boot(browser, url), base_url, COLD_ROUNDS)
    finally:
        browser.close()
    warm = alternate(lambda url: warm_boot(playwright, executable, url), base_url, WARM_ROUNDS)
    browser = launch(playwright, executable)
    try:
        emulated = alternate(lambda url: emulated_boot(browser, url), base_url, EMULATED_ROUNDS)
    finally:
        browser.close()
    worker = worker_times(playwright, executable, base_url)
    return {"cold": cold, "warm": warm, "emulated": emulated, "worker": worker}
