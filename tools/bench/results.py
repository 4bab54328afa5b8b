"""The bench's results as JSON (``.cache/bench/latest.json``, the run before kept as
``previous.json``) and the targets of the issue "Fast on a real network", met or not.

Every figure is read back from the JSON by a path, so a target can also be read from the
previous run's file (two commits compared: run ``make bench`` on each).
"""

from __future__ import annotations

import json
import operator
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness import ROOT

RESULTS_DIR = ROOT / ".cache" / "bench"
LATEST = RESULTS_DIR / "latest.json"
PREVIOUS = RESULTS_DIR / "previous.json"
MB = 1_000_000
FRAME_MS = 1000 / 60


def _git(*args: str) -> str:
    try:
        done = subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=10, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip()


def header() -> dict[str, Any]:
    """What the run ran on: commit (and whether the work tree differed), time, machine."""
    one, five, _ = os.getloadavg()
    return {
        "schema": 1,
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": _git("rev-parse", "--short=12", "HEAD"),
        "dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
        "cores": os.cpu_count(),
        "load_start": [round(one, 2), round(five, 2)],
        "mb": "1 MB = 1,000,000 bytes",
    }


def save(results: dict[str, Any]) -> tuple[Path, Path | None]:
    """Write ``latest.json``; the former one becomes ``previous.json``. Both paths."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    previous = None
    if LATEST.is_file():
        LATEST.replace(PREVIOUS)
        previous = PREVIOUS
    LATEST.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    return LATEST, previous


def load_latest() -> dict[str, Any] | None:
    """The last run's results (before this run replaces them), if readable."""
    try:
        data: dict[str, Any] = json.loads(LATEST.read_text())
    except (OSError, ValueError):
        return None
    return data


def relative(path: Path) -> str:
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


# --- targets -------------------------------------------------------------------------------------


def _get(results: dict[str, Any], path: str) -> Any:
    value: Any = results
    for key in path.split("."):
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


@dataclass(frozen=True, slots=True)
class Target:
    """One target: the figures it reads (all must pass), the test and how to show them."""

    name: str
    paths: tuple[str, ...]
    test: Callable[[float, float], bool]
    limit: float
    show: Callable[[float], str]
    labels: tuple[str, ...] = ()

    def figures(self, results: dict[str, Any] | None) -> list[float] | None:
        if results is None:
            return None
        values = [_get(results, path) for path in self.paths]
        if any(not isinstance(value, int | float) for value in values):
            return None
        return [float(value) for value in values]

    def text(self, values: list[float]) -> str:
        shown = " / ".join(self.show(value) for value in values)
        return f"{shown} ({' / '.join(self.labels)})" if self.labels else shown

    def met(self, values: list[float]) -> bool:
        return all(self.test(value, self.limit) for value in values)


def _mb(value: float) -> str:
    return f"{value / MB:.2f} MB"


def _s(value: float) -> str:
    return f"{value:.2f} s"


def _ms(value: float) -> str:
    return f"{value:,.1f} ms"


def _x(value: float) -> str:
    return f"{value:.2f}x"


LE, LT, GE = operator.le, operator.lt, operator.ge
TARGETS = (
    Target("first visit <= 8 MB", ("bytes.riacho.first.bytes",), LE, 8 * MB, _mb),
    Target("second visit <= 0.1 MB", ("bytes.riacho.second.bytes",), LE, 0.1 * MB, _mb),
    Target("composer typeable <= 0.3 s (cold)", ("boot.cold.composer_s",), LE, 0.3, _s),
    Target(
        "ready ratio to bare PyScript < 1",
        ("boot.cold.ratio", "boot.warm.ratio", "boot.emulated.ratio"),
        LT,
        1.0,
        _x,
        ("cold", "warm", "emulated"),
    ),
    Target("cold ready <= 1.5 s", ("boot.cold.riacho_s",), LE, 1.5, _s),
    Target("warm ready <= 1.2 s", ("boot.warm.riacho_s",), LE, 1.2, _s),
    Target("emulated cold ready <= 5 s", ("boot.emulated.riacho_s",), LE, 5.0, _s),
    Target("render ratio (View + real DOM) <= 1.5", ("render.dom.ratio",), LE, 1.5, _x),
    Target(
        "pipeline >= 100,000 events/s (pyodide)",
        ("client.pyodide_events_per_s",),
        GE,
        100_000,
        lambda value: f"{value:,.0f} events/s",
    ),
    Target(
        "longest stall <= 33 ms",
        ("stalls_first_visit.longest_frame_ms", "stalls.longest_frame_ms"),
        LE,
        33,
        _ms,
        ("first visit", "return visit"),
    ),
    Target(
        f"stop to 'cancelling' within a frame (<= {FRAME_MS:.1f} ms)",
        ("stop.cancelling_ms",),
        LE,
        FRAME_MS,
        _ms,
    ),
    Target("stop to confirmed <= 300 ms", ("stop.confirmed_ms",), LE, 300, _ms),
)


def target_lines(results: dict[str, Any], previous: dict[str, Any] | None) -> list[str]:
    """A summary line, then one line per target: met / not met, the figure, the previous one."""
    rows: list[tuple[str, bool | None]] = []
    for target in TARGETS:
        values = target.figures(results)
        if values is None:
            rows.append((f"  {target.name}: no figure", None))
            continue
        met = target.met(values)
        line = f"  {target.name}: {'met' if met else 'NOT met'}, {target.text(values)}"
        before = target.figures(previous)
        if before is not None:
            line += f" [previous run: {target.text(before)}]"
        rows.append((line, met))
    count = sum(met is True for _, met in rows)
    where = ""
    if previous is not None:
        commit = previous.get("commit", "?")
        dirty = "+changes" if previous.get("dirty") else ""
        where = f"; [previous run] = {previous.get('when', '?')} at {commit}{dirty}"
    summary = f"targets: {count} of {len(rows)} met (this run{where})"
    return [summary, *(line for line, _ in rows)]


def target_json(results: dict[str, Any]) -> list[dict[str, Any]]:
    """The targets as JSON: name, figures, met."""
    out = []
    for target in TARGETS:
        values = target.figures(results)
        out.append(
            {
                "name": target.name,
                "figures": values,
                "met": None if values is None else target.met(values),
            }
        )
    return out
