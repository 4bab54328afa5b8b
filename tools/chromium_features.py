"""Chromium's features that crash a Pyodide page now and then, turned off for the tests' browsers.

Issue 39 (docs/runtime.md): Chromium 150's sampling profilers — the heap profiler that reports
allocation samples (``HeapProfilerReporting``) and GWP-ASan's sampled allocations — take a
stack trace on a sampled allocation by walking frame pointers. When the allocation happens
while a Pyodide page runs on a JSPI (WebAssembly stack switching) stack, the walk runs off that
stack into its guard page: the renderer dies of SIGSEGV (SEGV_ACCERR), now and then, while
Python starts. The end-to-end tests and the benchmarks launch Chromium with these samplers off.

Chromium honours only the LAST ``--disable-features`` switch on its command line, and Playwright
passes its own list first; a second switch would silently turn Playwright's list back on. So
:func:`disable_features_flag` reads Playwright's list off a probe browser's command line and
returns one switch holding both.
"""

from __future__ import annotations

import contextlib
import secrets
from pathlib import Path

from playwright.sync_api import Playwright

CRASH_PRONE_FEATURES = ("HeapProfilerReporting", "GwpAsanMalloc", "GwpAsanPartitionAlloc")
DISABLE = "--disable-features="


def disable_features_flag(playwright: Playwright, executable: str, args: list[str]) -> str:
    """One ``--disable-features`` switch: what Playwright and ``args`` disable, and the samplers."""
    features = playwright_disabled_features(playwright, executable)
    for arg in args:
        if arg.startswith(DISABLE):
            features += arg.removeprefix(DISABLE).split(",")
    features += CRASH_PRONE_FEATURES
    return DISABLE + ",".join(dict.fromkeys(feature for feature in features if feature))


def playwright_disabled_features(playwright: Playwright, executable: str) -> list[str]:
    """The features Playwright's launch disables, read off a probe browser's command line."""
    marker = f"--riacho-probe={secrets.token_hex(8)}"
    browser = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox", marker])
    try:
        command = _command_line_with(marker)
    finally:
        browser.close()
    if command is None:
        raise RuntimeError("the probe Chromium's command line was not found in /proc")
    return next(
        (arg.removeprefix(DISABLE).split(",") for arg in command if arg.startswith(DISABLE)), []
    )


def _command_line_with(marker: str) -> list[str] | None:
    for proc in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError):
            command = (proc / "cmdline").read_bytes().decode(errors="replace").split("\0")
            if marker in command:
                return command
    return None
