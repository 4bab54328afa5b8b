"""Riacho as a small cluster on this machine: Redis, PostgreSQL, several workers, one proxy.

``make run-cluster`` (or ``python tools/cluster.py --workers 2 --port 8000 -- <server args>``):
starts a ``redis-server`` (Debian's, installed when missing and run as root; no persistence), a
throwaway PostgreSQL (tools/postgres_server.py: Debian's, installed when missing; a fresh cluster
without fsync on a free port, gone with its data when the cluster stops), N workers
(``python -m server``) on free ports sharing that database (``--db postgresql://…``) and that
Redis, and the round-robin proxy (``server/cli/proxy.py``) on ``--port``. With ``--sqlite`` the
workers share the SQLite file ``--db`` instead, which outlives the cluster, and no PostgreSQL
runs. Open the proxy's URL; any worker answers any request, and a stream started on one can be
resumed or stopped through another. Ctrl-C stops everything. Arguments after ``--`` go to every
worker (``--auth``, ``--config``, …).
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from postgres_server import ensure_postgres_bin, running_postgres  # noqa: E402
from redis_server import ensure_redis_server  # noqa: E402

from server.cli.proxy import run_proxy  # noqa: E402

START_TIMEOUT_S = 30.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_redis(stack: ExitStack, workdir: Path) -> str:
    """A throwaway redis-server on a free port; its URL."""
    binary = ensure_redis_server()
    if binary is None:
        raise SystemExit("cluster: no redis-server (Debian: apt-get install redis-server)")
    port = free_port()
    command = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
    command += ["--appendonly", "no", "--dir", str(workdir)]
    process = stack.enter_context(_running(command, workdir / "redis.log"))
    _wait_for_port(port, process)
    return f"redis://127.0.0.1:{port}/0"


def start_postgres(stack: ExitStack, workdir: Path) -> str:
    """A throwaway PostgreSQL on a free port (tools/postgres_server.py); its database's URL."""
    bin_dir = ensure_postgres_bin()
    if bin_dir is None:
        raise SystemExit("cluster: no PostgreSQL (Debian: apt-get install postgresql)")
    try:
        return stack.enter_context(running_postgres(workdir, bin_dir))
    except RuntimeError as error:
        raise SystemExit(f"cluster: {error}") from None


def start_worker(
    stack: ExitStack, workdir: Path, db: Path | str, redis_url: str, args: list[str]
) -> str:
    """One ``python -m server`` on a free port with ``--db db`` (a file or a URL); its URL."""
    port = free_port()
    command = [sys.executable, "-m", "server", "--host", "127.0.0.1", "--port", str(port)]
    command += ["--db", str(db), "--redis-url", redis_url, *args]
    process = stack.enter_context(_running(command, workdir / f"worker-{port}.log"))
    _wait_for_port(port, process)
    url = f"http://127.0.0.1:{port}"
    urllib.request.urlopen(url + "/", timeout=5).close()
    return url


class _running:
    """A child process for the ``with`` block; terminated (then killed) when it ends."""

    def __init__(self, command: list[str], log: Path) -> None:
        self.command, self.log = command, log

    def __enter__(self) -> subprocess.Popen[bytes]:
        with self.log.open("wb") as log_file:
            self.process = subprocess.Popen(
                self.command, cwd=ROOT, stdout=log_file, stderr=subprocess.STDOUT
            )
        return self.process

    def __exit__(self, *_exc: object) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()  # NOTE: reaped, not left a zombie


def _wait_for_port(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"cluster: {process.args!r} exited with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"cluster: nothing listens on port {port} after {START_TIMEOUT_S:.0f} s")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    split = argv.index("--") if "--" in argv else len(argv)
    ours, server_args = argv[:split], argv[split + 1 :]
    parser = argparse.ArgumentParser(prog="tools/cluster.py", description=__doc__)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--port", type=int, default=8000, help="the proxy's port")
    parser.add_argument(
        "--sqlite", action="store_true", help="share the SQLite file --db, not a PostgreSQL"
    )
    parser.add_argument(
        "--db",
        type=Path,
        default=ROOT / ".cache" / "cluster" / "riacho.db",
        help="the SQLite file (with --sqlite)",
    )
    args = parser.parse_args(ours)
    if args.workers < 1:
        parser.error("--workers must be at least 1")
    # NOTE: the directory outside the stack: it is removed only once everything has stopped
    # (PostgreSQL, when not root, keeps its data there until its shutdown checkpoint).
    with tempfile.TemporaryDirectory(prefix="riacho-cluster-") as work, ExitStack() as stack:
        workdir = Path(work)
        redis_url = start_redis(stack, workdir)
        if args.sqlite:
            args.db.parent.mkdir(parents=True, exist_ok=True)
            db: Path | str = args.db
        else:
            db = start_postgres(stack, workdir)
        workers = [
            start_worker(stack, workdir, db, redis_url, server_args) for _ in range(args.workers)
        ]
        print(f"cluster: {redis_url}; {db}; workers {', '.join(workers)}; logs in {workdir}")
        print(f"cluster: open http://127.0.0.1:{args.port}/ (Ctrl-C stops everything)")
        run_proxy(workers, "127.0.0.1", args.port)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
