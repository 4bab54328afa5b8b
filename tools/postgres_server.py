"""Find PostgreSQL's server binaries (installing Debian's when possible); run a throwaway server.

``python tools/postgres_server.py`` prints the directory holding ``initdb``, ``pg_ctl`` and
``postgres``: $POSTGRES_BIN_DIR, else the newest ``/usr/lib/postgresql/*/bin`` (Debian's layout),
else the directory of ``initdb`` on the PATH. When none is found and apt-get is usable as root,
installs Debian's ``postgresql``; otherwise says what to install and exits 1. (Modelled on
tools/redis_server.py.)

``python tools/postgres_server.py --run DIR`` runs a throwaway server with its files in DIR and
prints its URL until Ctrl-C. ``running_postgres(workdir)`` does the same for tests and
tools/cluster.py: a fresh cluster (trust auth, user ``postgres``, no fsync) on 127.0.0.1 and a
free port with a database ``riacho``; it yields ``postgresql://postgres@127.0.0.1:PORT/riacho``
and stops the server when the block ends. PostgreSQL refuses to run as root: as root, initdb and
the server run as the ``postgres`` system user (which Debian's package creates).
"""

from __future__ import annotations

import argparse
import os
import pwd
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

PACKAGE = "postgresql"
SERVER_USER = "postgres"
DATABASE = "riacho"
BINARIES = ("initdb", "pg_ctl", "postgres")
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0
LOG_TAIL_LINES = 30
# NOTE: a Unix socket's path must fit sun_path (108 bytes with its NUL on Linux).
SOCKET_PATH_MAX = 100
SETTINGS = {
    "listen_addresses": "127.0.0.1",
    "max_connections": "200",
    # NOTE: a throwaway cluster: losing it in a crash costs nothing, waiting for disks does.
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "logging_collector": "off",  # NOTE: the log is the server's stderr, our postgres.log
}


def find_postgres_bin() -> Path | None:
    """The directory holding ``initdb``, ``pg_ctl`` and ``postgres``, if there is one."""
    explicit = os.environ.get("POSTGRES_BIN_DIR")
    if explicit:
        return Path(explicit) if _has_binaries(Path(explicit)) else None
    debian = [path for path in Path("/usr/lib/postgresql").glob("*/bin") if _has_binaries(path)]
    if debian:
        return max(debian, key=_version_key)
    initdb = shutil.which("initdb")
    if initdb is None:
        return None
    # NOTE: resolved: an initdb on the PATH may be a symlink (/usr/local/bin/initdb here) into
    # the real bin directory, which also holds pg_isready and createdb.
    directory = Path(initdb).resolve().parent
    return directory if _has_binaries(directory) else None


def _has_binaries(directory: Path) -> bool:
    return all(os.access(directory / name, os.X_OK) for name in BINARIES)


def _version_key(bin_dir: Path) -> tuple[int, ...]:
    """``/usr/lib/postgresql/15/bin`` → (15,): numerically, so 9.6 sorts below 10."""
    return tuple(int(part) for part in re.findall(r"\d+", bin_dir.parent.name))


def apt_install() -> bool:
    """Install Debian's PostgreSQL (as root with apt-get only); whether it worked.

    The package may also start Debian's own cluster on port 5432; it is left alone (a throwaway
    server listens on a free port of its own).
    """
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        return False
    print("postgres: installing Debian's postgresql with apt-get", file=sys.stderr)
    install = ["apt-get", "install", "-y", "-q", "--no-install-recommends", PACKAGE]
    return _apt(install) or (_apt(["apt-get", "update", "-q"]) and _apt(install))


def _apt(command: list[str]) -> bool:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    return subprocess.run(command, stdout=sys.stderr, env=env, check=False).returncode == 0


def ensure_postgres_bin() -> Path | None:
    """The directory of PostgreSQL's server binaries, installing them when that is possible."""
    path = find_postgres_bin()
    # NOTE: not when $POSTGRES_BIN_DIR names a directory: installing would not change that.
    if path is None and not os.environ.get("POSTGRES_BIN_DIR") and apt_install():
        path = find_postgres_bin()
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class _Account:
    """Who runs initdb and the server: ourselves, or (as root) the ``postgres`` user.

    ``user``, ``group`` and ``extra_groups`` are ``subprocess``'s arguments for that: None
    (unchanged) unless we are root.
    """

    def __init__(self) -> None:
        self.user: int | None = None
        self.group: int | None = None
        self.extra_groups: list[int] | None = None
        self.uid, self.gid = os.geteuid(), os.getegid()
        self.gids = {*os.getgroups(), self.gid}
        if self.uid != 0:
            return
        try:
            entry = pwd.getpwnam(SERVER_USER)
        except KeyError:
            raise RuntimeError(
                f"postgres: refusing to run as root and there is no {SERVER_USER!r} user"
                " (Debian's postgresql package creates it)"
            ) from None
        self.user = self.uid = entry.pw_uid
        self.group = self.gid = entry.pw_gid
        # NOTE: extra_groups too, or the child keeps root's supplementary groups.
        self.extra_groups = os.getgrouplist(SERVER_USER, entry.pw_gid)
        self.gids = set(self.extra_groups)

    def reaches(self, directory: Path) -> bool:
        """Whether this account may enter ``directory`` and every directory above it."""
        for path in [directory, *directory.parents]:
            mode = path.stat()
            if mode.st_uid == self.uid:
                bit = stat.S_IXUSR
            elif mode.st_gid in self.gids:
                bit = stat.S_IXGRP
            else:
                bit = stat.S_IXOTH
            if not mode.st_mode & bit:
                return False
        return True


def _server_dir(workdir: Path, account: _Account, stack: list[Path]) -> Path:
    """An empty directory the server's account owns, for its data directory and socket.

    ``workdir/postgres`` when that account can reach it. As root, pytest's and ``tempfile``'s
    directories are 0700 and root's: the ``postgres`` user could not even enter them, so the
    server's files go to a private directory of the system's temporary directory instead
    (appended to ``stack``: removed when the server has stopped).
    """
    directory = workdir / "postgres"
    if directory.exists():
        raise RuntimeError(f"postgres: {directory} exists (an earlier server's?): use a new dir")
    if account.reaches(workdir):
        directory.mkdir()
    else:
        directory = Path(tempfile.mkdtemp(prefix="riacho-postgres-"))
        stack.append(directory)
        if not account.reaches(directory.parent):
            raise RuntimeError(f"postgres: the {SERVER_USER!r} user cannot enter {directory}")
    if account.user is not None:
        os.chown(directory, account.uid, account.gid)
    return directory


def _log_tail(log: Path) -> str:
    lines = log.read_text(errors="replace").splitlines()
    return "\n".join(lines[-LOG_TAIL_LINES:])


def _initdb(bin_dir: Path, data: Path, account: _Account, log: Path) -> None:
    # NOTE: --no-locale: the environment's locale may not exist here; UTF8 is set explicitly.
    command = [str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust"]
    command += ["-E", "UTF8", "--no-locale", "--no-sync"]
    with log.open("ab") as log_file:
        done = subprocess.run(
            command,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            cwd=data.parent,
            check=False,
            user=account.user,
            group=account.group,
            extra_groups=account.extra_groups,
        )
    if done.returncode != 0:
        raise RuntimeError(f"postgres: initdb failed ({done.returncode}):\n{_log_tail(log)}")


def _start(
    bin_dir: Path, data: Path, port: int, account: _Account, log: Path
) -> subprocess.Popen[bytes]:
    """``postgres`` itself (not ``pg_ctl start``, which daemonizes): our child to stop and reap."""
    sockets = str(data.parent)
    if len(f"{sockets}/.s.PGSQL.{port}") > SOCKET_PATH_MAX:
        sockets = ""  # NOTE: TCP only; every client here connects to 127.0.0.1 anyway
    # NOTE: always set: the default (/var/run/postgresql) is not ours to write to.
    settings = {**SETTINGS, "unix_socket_directories": sockets}
    command = [str(bin_dir / "postgres"), "-D", str(data), "-p", str(port)]
    for name, value in settings.items():
        command += ["-c", f"{name}={value}"]
    with log.open("ab") as log_file:
        return subprocess.Popen(
            command,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=data.parent,
            # NOTE: its own process group: a Ctrl-C in the terminal reaches us, not the server,
            # so it stops after the processes that use it (tools/cluster.py's workers).
            process_group=0,
            user=account.user,
            group=account.group,
            extra_groups=account.extra_groups,
        )


def _client(bin_dir: Path, name: str) -> str | None:
    """A client program (``pg_isready``, ``createdb``) of ``bin_dir``, else of the PATH."""
    path = bin_dir / name
    return str(path) if os.access(path, os.X_OK) else shutil.which(name)


def _accepts(port: int, pg_isready: str | None) -> bool:
    """Whether the server accepts connections (a listening postmaster may still be starting)."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
    except OSError:
        return False
    if pg_isready is None:
        return True
    command = [pg_isready, "-q", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres"]
    return subprocess.run(command, check=False, timeout=10).returncode == 0


def _wait_until_ready(
    process: subprocess.Popen[bytes], port: int, bin_dir: Path, log: Path
) -> None:
    pg_isready = _client(bin_dir, "pg_isready")
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = _log_tail(log)
            raise RuntimeError(f"postgres: exited with {process.returncode}:\n{tail}")
        if _accepts(port, pg_isready):
            return
        time.sleep(0.05)
    raise RuntimeError(f"postgres: not ready in {START_TIMEOUT_S:g} s:\n{_log_tail(log)}")


def _createdb(bin_dir: Path, port: int, log: Path) -> None:
    createdb = _client(bin_dir, "createdb")
    if createdb is None:
        raise RuntimeError(f"postgres: no createdb in {bin_dir} or on the PATH")
    command = [createdb, "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", DATABASE]
    with log.open("ab") as log_file:
        done = subprocess.run(command, stdout=log_file, stderr=subprocess.STDOUT, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"postgres: createdb failed ({done.returncode}):\n{_log_tail(log)}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Fast shutdown (SIGINT), then immediate (SIGQUIT), then SIGKILL; reaped in every case."""
    # NOTE: SIGQUIT before SIGKILL: a killed postmaster would leave its backends behind.
    for signum in (signal.SIGINT, signal.SIGQUIT, signal.SIGKILL):
        if process.poll() is not None:
            return
        process.send_signal(signum)
        try:
            process.wait(timeout=STOP_TIMEOUT_S)
            return
        except subprocess.TimeoutExpired:
            continue
    process.wait()


@contextmanager
def running_postgres_process(
    workdir: Path, bin_dir: Path | None = None
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``running_postgres``, also yielding the server's process (to notice when it dies)."""
    bin_dir = bin_dir or ensure_postgres_bin()
    if bin_dir is None:
        raise RuntimeError("postgres: no server binaries; run `python tools/postgres_server.py`")
    account, log = _Account(), workdir / "postgres.log"
    removals: list[Path] = []
    try:
        directory = _server_dir(workdir, account, removals)
        log.write_bytes(b"")
        data = directory / "data"
        _initdb(bin_dir, data, account, log)
        port = free_port()
        process = _start(bin_dir, data, port, account, log)
        try:
            _wait_until_ready(process, port, bin_dir, log)
            _createdb(bin_dir, port, log)
            yield f"postgresql://postgres@127.0.0.1:{port}/{DATABASE}", process
        finally:
            _stop(process)
    finally:
        for path in removals:
            shutil.rmtree(path, ignore_errors=True)


@contextmanager
def running_postgres(workdir: Path, bin_dir: Path | None = None) -> Iterator[str]:
    """A throwaway PostgreSQL with its log (and, when it can, its files) in ``workdir``.

    Yields ``postgresql://postgres@127.0.0.1:PORT/riacho`` once the server accepts connections
    and the database exists; stops the server and reaps it when the block ends. ``bin_dir``
    defaults to ``ensure_postgres_bin()``. Raises RuntimeError (with the log's tail) when the
    server cannot be started.
    """
    with running_postgres_process(workdir, bin_dir) as (url, _process):
        yield url


def _interrupt(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _run(directory: Path, bin_dir: Path) -> int:
    # NOTE: SIGTERM too, and SIGINT even when started with it ignored (as `… &` does): without
    # a handler we would die at once and leave the server (in its own process group) running.
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _interrupt)
    directory.mkdir(parents=True, exist_ok=True)
    try:
        with running_postgres_process(directory.resolve(), bin_dir) as (url, process):
            print(url, flush=True)
            log = directory / "postgres.log"
            print(f"postgres: log in {log}; Ctrl-C stops the server", file=sys.stderr)
            try:
                process.wait()
            except KeyboardInterrupt:
                return 0
    except RuntimeError as error:
        print(error, file=sys.stderr)
        return 1
    print(f"postgres: the server exited with {process.returncode}", file=sys.stderr)
    return 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tools/postgres_server.py", description=__doc__)
    parser.add_argument("--run", type=Path, metavar="DIR", help="run a throwaway server in DIR")
    args = parser.parse_args(argv)
    bin_dir = ensure_postgres_bin()
    if bin_dir is None:
        print(
            "postgres: no server binaries found. Install PostgreSQL"
            " (Debian/Ubuntu: `sudo apt-get install postgresql`)"
            " or set POSTGRES_BIN_DIR to the directory holding initdb, pg_ctl and postgres.",
            file=sys.stderr,
        )
        return 1
    if args.run is None:
        print(bin_dir)
        return 0
    return _run(args.run, bin_dir)


if __name__ == "__main__":
    raise SystemExit(main())
