"""In-page benchmarks of the booted Riacho page: client throughput (§10.2) and render cost (§10.3).

Both run Python on the page's own Pyodide (reached through PyScript's ``onReady`` hook, see
``page.js``), with the app modules the page loaded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from harness import HERE, median
from playwright.sync_api import Page

EVENTS = 20_000
READ_BYTES = 4096  # NOTE: the chunk size of tools/bench_sse.py; the network's varies
ROUNDS = 3
RENDER_TOKENS = 100_000
RENDER_WINDOW = 1_000
TOKENS_PER_FRAME = 16

_INSTALL = """async ([source]) => {
  const py = await window.__benchPyodide;
  py.FS.writeFile("bench_inpage.py", source);
  await py.runPythonAsync("import importlib; importlib.invalidate_caches(); import bench_inpage");
}"""
_RUN = "async ([code]) => (await window.__benchPyodide).runPythonAsync(code)"


def install(page: Page) -> None:
    """Make ``inpage.py`` importable as ``bench_inpage`` in the page's Pyodide."""
    page.evaluate(_INSTALL, [(HERE / "inpage.py").read_text()])


def run_python(page: Page, code: str) -> dict[str, Any]:
    """Run ``code`` (its last expression a JSON string) on the page's Pyodide; the decoded value."""
    result: dict[str, Any] = json.loads(page.evaluate(_RUN, [code]))
    return result


@dataclass(frozen=True, slots=True)
class Throughput:
    """Events per second of the two consumers of the same bytes (medians of ROUNDS)."""

    python: float
    javascript: float


def _check(name: str, result: dict[str, Any]) -> None:
    if result["status"] != "completed" or result["events"] != EVENTS + 1:
        raise RuntimeError(f"{name} consumer did not complete the stream: {result}")


def throughput(page: Page) -> Throughput:
    """Alternate the Pyodide consumer (the app's own path) and the plain-JS one, ROUNDS each."""
    page.evaluate("([run, count]) => window.riachoBench.prepare(run, count)", ["run_bench", EVENTS])
    python_code = f"await bench_inpage.client_throughput({READ_BYTES})"
    js_code = f"() => window.riachoBench.timeConsumer({READ_BYTES})"
    run_python(page, python_code)  # NOTE: warm-up (first calls compile and import)
    page.evaluate(js_code)
    py_rates, js_rates = [], []
    for _ in range(ROUNDS):
        result = run_python(page, python_code)
        _check("pyodide", result)
        py_rates.append(EVENTS / result["seconds"])
        js_result: dict[str, Any] = page.evaluate(js_code)
        _check("javascript", js_result)
        js_rates.append(EVENTS / max(js_result["seconds"], 1e-4))
    return Throughput(median(py_rates), median(js_rates))


@dataclass(frozen=True, slots=True)
class RenderCost:
    """Seconds per RENDER_WINDOW tokens: (first window, last window) for each measured part."""

    dom: tuple[float, float]
    html: tuple[float, float]
    apply: tuple[float, float]
    html_chars: int


def render_cost(page: Page) -> RenderCost:
    """Grow one answer to RENDER_TOKENS tokens; time its first and last RENDER_WINDOW tokens."""
    code = f"bench_inpage.render_growth({RENDER_TOKENS}, {RENDER_WINDOW}, {TOKENS_PER_FRAME})"
    result = run_python(page, code)
    timers = result["timers"]

    def pair(name: str) -> tuple[float, float]:
        first, last, *_ = timers[name]
        return float(first), float(last)

    return RenderCost(pair("dom"), pair("html"), pair("apply"), int(result["htmlChars"]))
