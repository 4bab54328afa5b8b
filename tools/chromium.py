"""Find a Chromium for the end-to-end tests; install Debian's when possible.

Prints the executable's path on stdout. Looks at $CHROMIUM_PATH, then the usual names. When
none is found and apt-get is usable as root, installs Debian's `chromium`; otherwise says
exactly what to install and exits 1.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

CANDIDATES = ("/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome")


def find_chromium() -> str | None:
    explicit = os.environ.get("CHROMIUM_PATH")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


def apt_install() -> bool:
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        return False
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-q", "chromium"]
    print("chromium: installing Debian's chromium with apt-get", file=sys.stderr, flush=True)
    quiet = {"stdout": sys.stderr, "env": env, "check": False}
    if subprocess.run(install, **quiet).returncode == 0:  # type: ignore[call-overload]
        return True
    subprocess.run(["apt-get", "update", "-q"], **quiet)  # type: ignore[call-overload]
    return subprocess.run(install, **quiet).returncode == 0  # type: ignore[call-overload]


def main() -> int:
    path = find_chromium()
    if path is None and apt_install():
        path = find_chromium()
    if path is None:
        print(
            "chromium: no Chromium found. Install one"
            " (Debian/Ubuntu: `sudo apt-get install chromium`)"
            " or set CHROMIUM_PATH to a Chromium or Chrome executable.",
            file=sys.stderr,
        )
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
