"""Loop the first-visit flows that crashed a renderer (issue 39) and count the crashes.

Each round is a new pytest (so a new Playwright driver and new browsers) running the flows that
crashed: a fresh persistent profile's first visit (tests/e2e/test_install.py), the first visit
that installs the worker-unpacked wheels (tests/e2e/test_first_visit_install.py) and the static
bundle's installability from a plain host. A crash fails its test with the report of
tests/e2e/crashes.py (the minidump's signal included); this script prints one line a round and
a summary, and keeps every failing round's output in --out.

    .venv/bin/python tools/loop_first_visit.py --rounds 30
    RIACHO_E2E_SAMPLERS=1 .venv/bin/python tools/loop_first_visit.py --rounds 300   # samplers on
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FLOWS = (
    "tests/e2e/test_install.py",
    "tests/e2e/test_first_visit_install.py",
    "tests/e2e/test_static_deploy.py::test_the_static_bundle_is_installable_from_its_plain_host",
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--out", type=Path, default=Path("/tmp/riacho-loop-first-visit"))
    options = parser.parse_args()
    options.out.mkdir(parents=True, exist_ok=True)
    crashed = failed = 0
    for round_number in range(1, options.rounds + 1):
        started = time.monotonic()
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *FLOWS]
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
        output = done.stdout + done.stderr
        crash = "renderer crashed" in output or "Target crashed" in output
        crashed += crash
        failed += done.returncode != 0 and not crash
        verdict = "crash" if crash else ("failed" if done.returncode else "passed")
        load = " ".join(f"{value:.1f}" for value in os.getloadavg())
        print(
            f"round {round_number}: {verdict} in {time.monotonic() - started:.0f} s, load {load}",
            flush=True,
        )
        if done.returncode:
            (options.out / f"round-{round_number:03d}.txt").write_text(output)
    print(f"{options.rounds} rounds: {crashed} crashed, {failed} failed otherwise")
    return 1 if crashed or failed else 0


if __name__ == "__main__":
    sys.exit(main())
