"""Find a `redis-server` for the multi-worker tests; install Debian's when possible.

Prints the executable's path on stdout. Looks at $REDIS_SERVER_PATH, then `redis-server` on the
PATH. When none is found and apt-get is usable as root, installs Debian's `redis-server`;
otherwise says exactly what to install and exits 1. (Modelled on tools/chromium.py.)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

PACKAGE = "redis-server"


def find_redis_server() -> str | None:
    explicit = os.environ.get("REDIS_SERVER_PATH")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    return shutil.which("redis-server") or _sbin("redis-server")


def _sbin(name: str) -> str | None:
    path = f"/usr/bin/{name}"
    return path if os.access(path, os.X_OK) else None


def apt_install() -> bool:
    """Install Debian's redis-server (as root with apt-get only); whether it worked."""
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        return False
    print("redis-server: installing Debian's redis-server with apt-get", file=sys.stderr)
    install = ["apt-get", "install", "-y", "-q", "--no-install-recommends", PACKAGE]
    return _apt(install) or (_apt(["apt-get", "update", "-q"]) and _apt(install))


def _apt(command: list[str]) -> bool:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    return subprocess.run(command, stdout=sys.stderr, env=env, check=False).returncode == 0


def ensure_redis_server() -> str | None:
    """The path of a redis-server, installing one when that is possible."""
    path = find_redis_server()
    if path is None and apt_install():
        path = find_redis_server()
    return path


def main() -> int:
    path = ensure_redis_server()
    if path is None:
        print(
            "redis-server: none found. Install one"
            " (Debian/Ubuntu: `sudo apt-get install redis-server`)"
            " or set REDIS_SERVER_PATH to a redis-server executable.",
            file=sys.stderr,
        )
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
