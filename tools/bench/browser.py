"""Browser benchmarks of SPEC §10, one line per figure, each a ratio or a count.

Run from the repository root after ``make setup``: ``.venv/bin/python tools/bench/browser.py``.
It starts the reference server on a free port (temporary static root, access log to a file),
drives the system Chromium with Playwright, and stops everything at the end. On a small,
noisy machine only the ratios and counts are figures; absolute times are shown alongside.

0. bytes on the wire to ``html[data-ready]``, first and second visit, against the bare page;
1. boot to ``html[data-ready]``, cold and warm on loopback and cold on an emulated network,
   against a bare PyScript page (same runtime); and when Riacho's composer accepts typing;
2. client throughput for 20,000 ``text`` events in Pyodide against a plain-JS consumer;
3. render cost per 1,000 tokens at the end of a 100,000-token answer against the first 1,000;
4. longest main-thread stall while streaming 2,000 events/s;
5. Stop click to ``cancelling`` shown, and to server-confirmed.

Then the targets of "Fast on a real network", met or not, and the path of the JSON results
(``.cache/bench/latest.json``; the run before is kept as ``previous.json``).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # NOTE: tools/, for boot.py

import boot
import client
import harness
import live
import results
import transfer
from playwright.sync_api import Browser, Playwright, sync_playwright
from playwright.sync_api import Error as PlaywrightError

DEMO_TOKEN_MS = 10  # the demo model's pace: a long answer streams for several seconds


def emit(line: str) -> None:
    """Print one figure now (the whole run takes minutes)."""
    print(line, flush=True)


def _ratio(value: float, base: float) -> str:
    return f"{value / base:.2f}x" if base > 0 else "n/a"


def _mb(count: int) -> str:
    return f"{count / results.MB:.2f} MB"


def report_bytes(pairs: dict[str, transfer.VisitPair], out: dict[str, Any]) -> None:
    """Bytes on the wire to data-ready: first visit, then second visit in the same profile."""
    riacho, bare = pairs["riacho"], pairs["bare"]
    how = (
        "CDP Network.loadingFinished encodedDataLength: compressed bytes as received,"
        " headers included, cache hits 0"
    )
    first_r, first_b = riacho.first, bare.first
    emit(
        f"bytes first visit to data-ready: riacho {_mb(first_r.total)}"
        f" / bare PyScript {_mb(first_b.total)} = {_ratio(first_r.total, first_b.total)}"
        f" ({how}; {len(first_r.fetches)} / {len(first_b.fetches)} requests,"
        f" {first_r.compressed} / {first_b.compressed} with a Content-Encoding; fresh profile)"
    )
    second_r, second_b = riacho.second, bare.second
    emit(
        f"bytes second visit to data-ready: riacho {_mb(second_r.total)} ({second_r.total:,} B)"
        f" / bare PyScript {_mb(second_b.total)} ({second_b.total:,} B)"
        f" = {_ratio(second_r.total, second_b.total)} (same counting; same profile reopened"
        f" {transfer.VISIT_PAUSE_S:g} s after the first; from cache / revalidated / fetched:"
        f" riacho {_hows(second_r)}, bare {_hows(second_b)})"
    )
    for name, pair in pairs.items():
        workers = pair.first.count("worker") + pair.second.count("worker")
        if workers:
            print(
                f"bench: {name}: {workers} requests of a worker (unseen by the page's CDP"
                " session) counted with Playwright's sizes",
                file=sys.stderr,
            )
    out["bytes"] = {
        name: {"first": pair.first.as_json(), "second": pair.second.as_json()}
        for name, pair in pairs.items()
    }


def _hows(visit: transfer.Visit) -> str:
    """Requests with no byte on the wire / revalidated (304) / the others."""
    cached = sum(fetch.bytes == 0 for fetch in visit.fetches)
    revalidated = visit.count("revalidated")
    return f"{cached}/{revalidated}/{len(visit.fetches) - cached - revalidated}"


def report_boot(times: dict[str, boot.BootTimes], out: dict[str, Any]) -> None:
    """§10.1: boot ratios, cold, warm and emulated; the composer after each."""
    kinds = (
        ("cold", "cold", boot.COLD_ROUNDS, "fresh context"),
        ("warm", "warm", boot.WARM_ROUNDS, f"reopened {boot.WARM_PAUSE_S:g} s after a first boot"),
        (
            "emulated",
            f"emulated cold ({boot.EMULATED_LINE})",
            boot.EMULATED_ROUNDS,
            "fresh context, CDP Network.emulateNetworkConditions",
        ),
    )
    for kind, label, rounds, how in kinds:
        t = times[kind]
        emit(
            f"boot {label} to data-ready: riacho {t.riacho:.2f} s / bare PyScript {t.bare:.2f} s"
            f" = {t.riacho / t.bare:.2f}x (medians of {rounds} alternating runs, {how})"
        )
        booted, restored = t.snapshot_runs("booted"), t.snapshot_runs("restored")
        emit(
            f"boot {kind}: riacho booted normally in {booted} and from this browser's boot"
            f" snapshot in {restored} of {len(t.runs['riacho'])} runs (static/interpreter.mjs)"
        )
        composer = "n/a" if t.composer is None else f"{t.composer:.2f} s"
        lost = t.composer_lost_runs
        lost_note = (
            f"; it stopped accepting typing before data-ready in {lost} runs" if lost else ""
        )
        ratio = "n/a" if t.composer is None else _ratio(t.composer, t.bare)
        emit(
            f"composer typeable {kind}: riacho {composer} / bare PyScript data-ready {t.bare:.2f} s"
            f" = {ratio} (riacho data-ready {t.riacho:.2f} s{lost_note}; medians of {rounds},"
            " same runs: first frame with textarea[name=prompt] enabled, visible, uncovered;"
            " performance.now() from navigation start)"
        )
    worker = times["worker"]
    emit(
        f"boot warm with the service worker: riacho {worker.riacho:.2f} s / the same page with"
        f" the worker blocked {worker.bare:.2f} s = {worker.riacho / worker.bare:.2f}x"
        f" (medians of {boot.WARM_ROUNDS} alternating runs, each reopened"
        f" {boot.WARM_PAUSE_S:g} s after a first boot whose worker had activated)"
    )
    out["boot"] = {kind: t.as_json() for kind, t in times.items()}
    out["boot"]["emulated"]["line"] = {
        "down_mbit_s": boot.EMULATED_DOWN_MBIT,
        "up_mbit_s": boot.EMULATED_UP_MBIT,
        "latency_ms": boot.EMULATED_LATENCY_MS,
    }


def report_throughput(result: client.Throughput, out: dict[str, Any]) -> None:
    """§10.2: Pyodide consumer against the plain-JS one."""
    out["client"] = {
        "events": client.EVENTS,
        "pyodide_events_per_s": round(result.python),
        "js_events_per_s": round(result.javascript),
        "ratio": round(result.python / result.javascript, 4),
    }
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


def report_render(cost: client.RenderCost, out: dict[str, Any]) -> None:
    """§10.3: last window against the first (with the DOM, without it, and the reducer)."""
    out["render"] = {
        name: {
            "first_ms": round(pair[0] * 1000, 1),
            "last_ms": round(pair[1] * 1000, 1),
            "ratio": round(pair[1] / max(pair[0], 1e-6), 3),
        }
        for name, pair in (("dom", cost.dom), ("html", cost.html), ("apply", cost.apply))
    }
    out["render"]["html_chars"] = cost.html_chars
    frame = f"1 render / {client.TOKENS_PER_FRAME} tokens"
    size = f"; answer HTML {cost.html_chars / 1e6:.2f} M chars at the end"
    emit(_ratio_line(f"render per 1,000 tokens (View + real DOM, {frame})", cost.dom, size))
    emit(_ratio_line("render per 1,000 tokens (View HTML only, no DOM)", cost.html))
    emit(_ratio_line("apply per 1,000 tokens (reducer only)", cost.apply))


def report_stalls(result: live.Stalls, out: dict[str, Any], key: str, visit: str) -> None:
    """§10.4: frame gaps and long tasks while streaming, on a page of a first or a return visit."""
    out[key] = {
        "events_per_s": round(result.events_per_s),
        "longest_frame_ms": round(result.longest_frame_ms, 1),
        "frames_over_50ms": result.frames_over,
        "over_by_quarter": list(result.over_by_quarter),
        "long_tasks": result.long_tasks,
        "longest_task_ms": round(result.longest_task_ms, 1),
    }
    pace = f"streaming {live.STALL_EVENTS:,} text events at 2,000/s ({visit})"
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


def report_stop(result: live.StopLatency, out: dict[str, Any]) -> None:
    """§10.5: Stop latencies."""
    out["stop"] = {
        "cancelling_ms": round(result.cancelling_ms, 1),
        "confirmed_ms": round(result.confirmed_ms, 1),
        "runs": result.runs,
    }
    runs = f"absolute ms, median of {result.runs} runs, performance.now() in the page"
    emit(f"stop click to 'cancelling' shown: {result.cancelling_ms:,.1f} ms ({runs})")
    emit(f"stop click to server-confirmed: {result.confirmed_ms:,.1f} ms ({runs})")


def in_page(browser: Browser, server: harness.Server, out: dict[str, Any]) -> None:
    """Sections 2 to 5 on booted Riacho pages: stalls on a first visit; then in one context one
    page for 2 and 3, and a second one (a return visit) for 4 and 5."""
    context = browser.new_context()
    try:
        page, _ = harness.boot(context, server.url + "/", tools=True)
        harness.settle_snapshot(page)
        report_stalls(live.stalls(page, server), out, "stalls_first_visit", "first visit")
    finally:
        context.close()
    context = browser.new_context()
    try:
        page, _ = harness.boot(context, server.url + "/", tools=True)
        harness.settle_snapshot(page)  # NOTE: a page at rest: its first-visit work done
        client.install(page)
        report_throughput(client.throughput(page), out)
        report_render(client.render_cost(page), out)
        page.close()
        # NOTE: this context's second page: booted from the snapshot the first one left
        page, _ = harness.boot(context, server.url + "/", tools=True)
        harness.settle_snapshot(page)
        report_stalls(live.stalls(page, server), out, "stalls", "return visit, restored")
        page.locator("[data-action=new-chat]").click()
        report_stop(live.stop_latency(page), out)
    finally:
        context.close()


def measure_bytes(
    playwright: Playwright, executable: str, base_url: str
) -> dict[str, transfer.VisitPair]:
    """A first and a second visit of each page, on a fresh profile each."""
    return {
        "riacho": transfer.visit_pair(playwright, executable, base_url + boot.RIACHO_PATH),
        "bare": transfer.visit_pair(playwright, executable, base_url + boot.BARE_PATH),
    }


def run(playwright: Playwright, executable: str, workdir: Path, out: dict[str, Any]) -> None:
    """Every section against one server (stopped at the end, whatever happens)."""
    server = harness.start_server(workdir, harness.make_static_root(workdir), DEMO_TOKEN_MS)
    try:
        report_bytes(measure_bytes(playwright, executable, server.url), out)
        report_boot(boot.boot_times(playwright, executable, server.url), out)
        browser = harness.launch(playwright, executable)
        try:
            in_page(browser, server, out)
        finally:
            browser.close()
    finally:
        server.stop()


def finish(out: dict[str, Any]) -> None:
    """The targets (against the previous run's figures too), then the JSON file."""
    previous = results.load_latest()
    for line in results.target_lines(out, previous):
        emit(line)
    out["targets"] = results.target_json(out)
    one, five, _ = os.getloadavg()
    out["load_end"] = [round(one, 2), round(five, 2)]
    latest, kept = results.save(out)
    before = f"; the run before: {results.relative(kept)}" if kept else ""
    emit(f"results: {results.relative(latest)}{before}")


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
    out = results.header()
    with tempfile.TemporaryDirectory(prefix="riacho-bench-") as workdir, sync_playwright() as pw:
        try:
            run(pw, executable, Path(workdir), out)
        except (RuntimeError, PlaywrightError) as error:  # NOTE: BenchError is a RuntimeError
            print(f"bench: {type(error).__name__}: {error}", file=sys.stderr)
            return 1
    finish(out)
    note_load("end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
