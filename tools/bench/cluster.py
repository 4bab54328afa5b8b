"""``make bench-cluster``: N concurrent streaming answers on 1 worker against 2 workers.

For each database engine and N in LOADS: a fresh Redis, K workers (``--redis-url``, one shared
SQLite file or one throwaway PostgreSQL database, the demo model with no token delay) and N
clients, each its own user (an anonymous session), spread over
the workers in turn as a round-robin balancer would. Each client sends one prompt and reads the
answer to its end through Riacho's own SSE decoder and event models. Checked for every stream:
it completes (a terminal ``done``), and its seqs are 1, 2, 3, … without a gap or a repeat.
Printed side by side: the median and 95th percentile time to the first event, the time until
the last answer ended, and the events per second delivered in all.

NOTE: everything (client, workers, Redis) shares this machine's cores; compare the two columns
of one run, not runs on different machines.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from aiohttp import ClientSession, ClientTimeout, CookieJar  # noqa: E402
from cluster import start_postgres, start_redis, start_worker  # noqa: E402

from app.sse import SSEDecoder  # noqa: E402
from app.wire.protocol import DoneEvent, ParsedEvent, parse_event  # noqa: E402

LOADS = (50, 200)
ENGINES = ("sqlite", "postgresql")
WORKER_COUNTS = (1, 2)
PROMPT = "Tell me about rivers"
STREAM_TIMEOUT_S = 300


@dataclass(frozen=True, slots=True)
class Stream:
    """One answer as a client saw it."""

    first_event_s: float | None
    ended_s: float
    events: int
    complete: bool
    contiguous: bool
    problem: str | None = None


async def one_answer(base: str, index: int, started: float) -> Stream:
    """Sign in anonymously at ``base``, send one prompt, read the answer to its end."""
    # NOTE: unsafe: keep the session cookie of an IP-address host (127.0.0.1).
    jar = CookieJar(unsafe=True)
    timeout = ClientTimeout(total=STREAM_TIMEOUT_S)
    async with ClientSession(timeout=timeout, cookie_jar=jar) as client:
        async with client.get(base + "/api/session") as response:
            if response.status != 200:
                return _failed(started, f"session: HTTP {response.status}")
        body = {"chatId": f"chat_bench{index:06d}", "prompt": PROMPT}
        async with client.post(base + "/api/respond/stream", json=body) as response:
            if response.status != 200:
                return _failed(started, f"stream: HTTP {response.status} {await response.text()}")
            return await _read(response.content.iter_any(), started)


async def _read(chunks: object, started: float) -> Stream:
    decoder, seqs, first, done = SSEDecoder(), [], None, False
    async for chunk in chunks:  # type: ignore[attr-defined]
        for message in decoder.feed(chunk):
            parsed = parse_event(message.data)
            if not isinstance(parsed, ParsedEvent):
                return _failed(started, f"bad frame: {parsed}")
            first = first if first is not None else time.monotonic() - started
            seqs.append(parsed.event.seq)
            done = done or isinstance(parsed.event, DoneEvent)
    contiguous = seqs == list(range(1, len(seqs) + 1))
    return Stream(first, time.monotonic() - started, len(seqs), done, contiguous)


def _failed(started: float, problem: str) -> Stream:
    return Stream(None, time.monotonic() - started, 0, False, False, problem)


@dataclass(frozen=True, slots=True)
class Load:
    """N answers at once on K workers."""

    workers: int
    streams: list[Stream]

    @property
    def ok(self) -> int:
        return sum(s.complete and s.contiguous for s in self.streams)

    def first_event(self, quantile: float) -> float:
        times = sorted(s.first_event_s for s in self.streams if s.first_event_s is not None)
        return times[min(int(quantile * len(times)), len(times) - 1)] if times else float("nan")

    @property
    def wall_s(self) -> float:
        return max(s.ended_s for s in self.streams)

    @property
    def events_per_s(self) -> float:
        return sum(s.events for s in self.streams) / self.wall_s


async def run_load(bases: list[str], count: int) -> list[Stream]:
    started = time.monotonic()
    answers = [one_answer(bases[i % len(bases)], i, started) for i in range(count)]
    return list(await asyncio.gather(*answers))


def measure(engine: str, workers: int, count: int) -> Load:
    """A fresh cluster of ``workers`` on ``engine`` and ``count`` concurrent answers on it."""
    # NOTE: the directory outlives the processes using it (an ExitStack exits first)
    with tempfile.TemporaryDirectory(prefix="riacho-bench-") as work, ExitStack() as stack:
        workdir = Path(work)
        redis_url = start_redis(stack, workdir)
        db = start_postgres(stack, workdir) if engine == "postgresql" else workdir / "riacho.db"
        args = ["--demo-token-ms", "0", "--coalesce-ms", "0"]  # NOTE: events per token, as before
        bases = [start_worker(stack, workdir, db, redis_url, args) for _ in range(workers)]
        return Load(workers, asyncio.run(run_load(bases, count)))


def report(engine: str, count: int, loads: list[Load]) -> None:
    def column(load: Load) -> str:
        return (
            f"{load.workers} worker{'s' if load.workers > 1 else ''}: "
            f"{load.ok}/{count} complete with contiguous seqs, first event median "
            f"{load.first_event(0.5) * 1000:,.0f} ms / p95 {load.first_event(0.95) * 1000:,.0f} ms,"
            f" all done in {load.wall_s:,.2f} s, {load.events_per_s:,.0f} events/s"
        )

    columns = "  |  ".join(column(load) for load in loads)
    print(f"cluster {engine} {count} concurrent answers: {columns}")
    problems = {s.problem for load in loads for s in load.streams if s.problem}
    for problem in sorted(problems)[:5]:
        print(f"  problem: {problem}")


def main() -> int:
    failed = False
    for engine in ENGINES:
        for count in LOADS:
            loads = [measure(engine, workers, count) for workers in WORKER_COUNTS]
            report(engine, count, loads)
        failed = failed or any(load.ok != count for load in loads)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
