"""What Chromium and the machine said when a page's renderer crashed, for the test's failure.

Every browser the end-to-end tests launch writes Chromium's own log to a file of its own
(``--enable-logging --log-file``; :func:`logging_flags`). When a page's renderer goes away,
:func:`crash_report` puts into words what there is to know: Chromium's verdict on the tab (its
``sad_tab`` line: crashed, killed, out of memory), the log lines of the moments before, and the
machine's state then (memory available, load, the renderers alive and their resident memory
and memory maps), and what the crash handler's minidump says killed it (the signal, where it
struck: tests/e2e/minidump.py). A crash is never retried away: the test fails with this report
(issue 39).
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import tempfile
import time
from pathlib import Path

from tests.e2e.minidump import crashes_in

LOG_DIR = Path(tempfile.mkdtemp(prefix="riacho-chromium-logs-"))
# NOTE: the browsers' XDG_CONFIG_HOME: their crash handler writes minidumps under it
DUMP_HOME = Path(tempfile.mkdtemp(prefix="riacho-chromium-dumps-"))
# NOTE: what a crash needs of the logs and dumps is in its report: they go with the test session
atexit.register(shutil.rmtree, LOG_DIR, ignore_errors=True)
atexit.register(shutil.rmtree, DUMP_HOME, ignore_errors=True)
# NOTE: lines Chromium writes on every start in this sandbox (no D-Bus, no GPU): not evidence
NOISE = re.compile(r"dbus|D-Bus|Floss|UPower|ScreenSaver|vaapi|InitializeSandbox|skottie|cpufreq")
TAIL_LINES = 25
RECENT_S = 120
# NOTE: Chromium writes its verdict on the tab a moment after Playwright hears of the crash
VERDICT_WAIT_S = 2.0
_launches = 0


def logging_flags(name: str) -> list[str]:
    """Chromium's flags that log to a new file in :data:`LOG_DIR` named after ``name``."""
    global _launches
    _launches += 1
    path = LOG_DIR / f"{_launches:03d}-{re.sub(r'[^A-Za-z0-9_.-]', '_', name)}.log"
    return ["--enable-logging", f"--log-file={path}", "--v=0"]


def log_of(flags: list[str]) -> Path | None:
    """The log file that ``flags`` name, if they name one."""
    for flag in flags:
        if flag.startswith("--log-file="):
            return Path(flag.removeprefix("--log-file="))
    return None


def crash_report() -> str:
    """Everything known about a renderer that just went away, in words: from the logs of the
    browsers that wrote in the last :data:`RECENT_S` seconds (the session's browser and a
    persistent profile's may both be open)."""
    recent = [log for log in sorted(LOG_DIR.glob("*.log")) if _age_s(log) < RECENT_S]
    _wait_for_a_verdict(recent)
    dumps = _wait_for_dumps(time.time() - RECENT_S)
    report = [
        "Chromium's renderer crashed (what a user sees as 'Aw, Snap!').",
        f"Machine: {_memory_available()} available, load {_load()}",
        "Chromium renderers on this machine: " + _renderers(),
        *(f"Minidump {dump}" for dump in dumps or ["none written"]),
    ]
    for log in recent:
        lines = _evidence(log)
        verdicts = [line for line in lines if _is_verdict(line)]
        report.append(f"Chromium's log {log.name}: verdict: {verdicts[-1] if verdicts else 'none'}")
        report.extend("  " + line for line in lines[-TAIL_LINES:])
    return "\n".join(report)


def _is_verdict(line: str) -> bool:
    return "sad_tab" in line or "Renderer process" in line


def _wait_for_a_verdict(logs: list[Path]) -> None:
    deadline = time.monotonic() + VERDICT_WAIT_S
    while time.monotonic() < deadline:
        if any(_is_verdict(line) for log in logs for line in _evidence(log)):
            return
        time.sleep(0.1)


def _wait_for_dumps(since: float) -> list[str]:
    """The minidumps written since ``since``, waiting a moment for the crash handler's."""
    deadline = time.monotonic() + VERDICT_WAIT_S
    while not (dumps := crashes_in(DUMP_HOME, since)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return dumps


def _age_s(path: Path) -> float:
    try:
        return time.time() - path.stat().st_mtime
    except OSError:
        return float("inf")


def _evidence(log: Path | None) -> list[str]:
    if log is None or not log.exists():
        return []
    text = log.read_text(errors="replace").splitlines()
    return [line for line in text if line.strip() and not NOISE.search(line)]


def _memory_available() -> str:
    try:
        meminfo = Path("/proc/meminfo").read_text()
    except OSError:
        return "unknown"
    found = re.search(r"MemAvailable:\s+(\d+) kB", meminfo)
    return f"{int(found.group(1)) // 1024} MiB" if found else "unknown"


def _load() -> str:
    try:
        return " ".join(f"{value:.2f}" for value in os.getloadavg())
    except OSError:
        return "unknown"


def _renderers() -> str:
    """Each Chromium renderer's pid, resident memory and count of memory maps."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if b"--type=renderer" not in (proc / "cmdline").read_bytes():
                continue
            rss = re.search(r"VmRSS:\s+(\d+) kB", (proc / "status").read_text())
            maps = sum(1 for _ in (proc / "maps").open())
        except OSError:
            continue
        resident = f"{int(rss.group(1)) // 1024} MiB" if rss else "?"
        found.append(f"{proc.name} ({resident}, {maps} maps)")
    return ", ".join(found) or "none"
