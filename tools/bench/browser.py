"""Browser benchmarks of SPEC §10, one line per figure, each a ratio or a count.

Run from the repository root after ``make setup``: ``.venv/bin/python tools/bench/browser.py``.
It starts the reference server on a free port (temporary static root, access log to a file),
drives the system Chromium with Playwright, and stops everything at the end. On a small,
noisy machine only the ratios and counts are figures; absolute times are shown alongside.

1. boot to ``html[data-ready]``, cold and warm, against a bare PyScript page (same runtime);
2. client throughput for 20,000 ``text`` events in Pyodide against a plain-JS consumer;
3. render cost per 1,000 tokens at the end of a 100,000-token answer against the first 1,000;
4. longest main-thread stall while streaming 2,000 events/s;
5. Stop click to ``cancelling`` shown, and to server-confirmed.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import boot
import client
import harness
import live
from playwright.sync_api import Browser, Playwright, sync_playwright
from playwright.sync_api import Error as PlaywrightError

DEMO_TOKEN_MS = 10  # the demo model's pace: a long answer streams for several seconds


def emit(line: str) -> None:
    """Print one figure now (the whole run takes minutes)."""
    print(line, flush=True)


def report_boot(times: dict[str, boot.BootTimes]) -> None:
    """§10.1: boot ratios, cold and warm."""
    kinds = (
        ("cold", boot.COLD_ROUNDS, "fresh context"),
        ("warm", boot.WARM_ROUNDS, f"reopened {boot.WARM_PAUSE_S:g} s after a first boot"),
    )
    for kind, rounds, how in kinds:
        t = times[kind]
        emit(
            f"boot {kind} to data-ready: riacho {t.riacho:.2f} s / bare PyScript {t.bare:.2f} s"
            f" = {t.riacho / t.bare:.2f}x (medians of {rounds} alternating runs, {how})"
        )


def report_throughput(result: client.Throughput) -> None:
    """§10.2: Pyodide consumer against the plain-JS one."""
    emit(
        f"client {client.EVENTS:,} text events (decode+parse+validate+apply):"
        f" pyodide {result.python:,.0f} events/s / plain JS {result.javascript:,.0f} events/s"
        f" = {result.python / result.javascript:.3f}x (JS {result.javascript / result.python:.0f}x"
        f" faster; median of {client.ROUNDS})"
    )


def _ratio_line(label: str, pair: tuple[float, float], extra: str = "") -> str:
    first, last = pair
    end = f"{client.RENDER_TOKENS - client.RENDER_WINDOW + 1:,}-{client.RENDER_TOKENS:,}"
    return (
        f"{label}: first {client.RENDER_WINDOW:,} tokens {first * 1000:,.0f} ms, tokens {end}"
        f" {last * 1000:,.0f} ms = {last / max(first, 1e-6):.1f}x (~1 = linear{extra})"
    )


def report_render(cost: client.RenderCost) -> None:
    """§10.3: last window against the first (with the DOM, without it, and the reducer)."""
    frame = f"1 render / {client.TOKENS_PER_FRAME} tokens"
    size = f"; answer HTML {cost.html_chars / 1e6:.2f} M chars at the end"
    emit(_ratio_line(f"render per 1,000 tokens (View + real DOM, {frame})", cost.dom, size))
    emit(_ratio_line("render per 1,000 tokens (View HTML only, no DOM)", cost.html))
    emit(_ratio_line("apply per 1,000 tokens (reducer only)", cost.apply))


def report_stalls(result: live.Stalls) -> None:
    """§10.4: frame gaps and long tasks while streaming."""
    pace = f"streaming {live.STALL_EVENTS:,} text events at 2,000/s"
    got = f"(got {result.events_per_s:,.0f}/s)"
    quarters = "/".join(str(count) for count in result.over_by_quarter)
    emit(
        f"longest main-thread stall {pace}: {result.longest_frame_ms:,.0f} ms between frames {got}"
    )
    emit(
        f"frames over {live.STALL_MS} ms {pace}: {result.frames_over}"
        f" (by quarter of the stream: {quarters})"
    )
    emit(f"long tasks {pace}: {result.long_tasks} (longest {result.longest_task_ms:,.0f} ms)")


def report_stop(result: live.StopLatency) -> None:
    """§10.5: Stop latencies."""
    runs = f"absolute ms, median of {result.runs} runs, performance.now() in the page"
    emit(f"stop click to 'cancelling' shown: {result.cancelling_ms:,.1f} ms ({runs})")
    emit(f"stop click to server-confirmed: {result.confirmed_ms:,.1f} ms ({runs})")


def in_page(browser: Browser, server: harness.Server) -> None:
    """Sections 2 to 5 on booted Riacho pages (one page for 2 and 3, a fresh one for 4 and 5)."""
    context = browser.new_context()
    try:
        page, _ = harness.boot(context, server.url + "/", tools=True)
        client.install(page)
        report_throughput(client.throughput(page))
        report_render(client.render_cost(page))
        page.close()
        page, _ = harness.boot(context, server.url + "/", tools=True)
        report_stalls(live.stalls(page, server))
        page.locator("[data-action=new-chat]").click()
        report_stop(live.stop_latency(page))
    finally:
        context.close()


def run(playwright: Playwright, executable: str, workdir: Path) -> None:
    """Every section against one server (stopped at the end, whatever happens)."""
    server = harness.start_server(workdir, harness.make_static_root(workdir), DEMO_TOKEN_MS)
    try:
        report_boot(boot.boot_times(playwright, executable, server.url))
        browser = harness.launch(playwright, executable)
        try:
            in_page(browser, server)
        finally:
            browser.close()
    finally:
        server.stop()


def note_load(when: str) -> None:
    """The machine's load on stderr: figures from a busy machine are noisier."""
    one, five, _ = os.getloadavg()
    cores = os.cpu_count()
    print(
        f"bench: {when}: load average {one:.1f} (5 min {five:.1f}), {cores} cores", file=sys.stderr
    )


def main() -> int:
    note_load("start")
    try:
        harness.check_setup()
        executable = harness.chromium_path()
    except harness.BenchError as error:
        print(f"bench: {error}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="riacho-bench-") as workdir, sync_playwright() as pw:
        try:
            run(pw, executable, Path(workdir))
        except (RuntimeError, PlaywrightError) as error:  # NOTE: BenchError is a RuntimeError
            print(f"bench: {type(error).__name__}: {error}", file=sys.stderr)
            return 1
    note_load("end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
