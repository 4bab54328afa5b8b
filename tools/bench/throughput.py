"""Delta coalescing's worth (issue 22), one line per figure; part of ``make bench``.

Both figures go a real model's way through the server (``--provider openai-chat``: the
``openai`` SDK, the model loop, the run registry, the run log, SSE) to a paced fake Chat
Completions provider, a process of its own on loopback, which sends the tokens the prompt asks
for, one character a chunk, on a fixed schedule.

1. Events and logged rows of one 2,000-token answer at 200 tokens/s, with coalescing
   (``--coalesce-ms 50``) and without (``0``): two workers at once, each its own SQLite file.
   The client counts the SSE events, the rows are counted in each worker's ``run_events``, and
   both answers' text must be the provider's, character for character.
2. The concurrent answers one worker sustains at 50 tokens/s each (answers of 75 tokens, 1.5 s),
   on SQLite and on a throwaway PostgreSQL (tools/postgres_server.py), with and without
   coalescing. A trial of N: N clients, each its own user, start one after the other over one
   answer's time, then answer back to back, so N answers are always under way; the answers
   started during the second answer's time are measured. Sustained: every answer ends
   ``done``, the 95th percentile of the time to its first event is under 200 ms, and the
   median pace (tokens over the time from request to end) is at least 45 tokens/s. N doubles
   from 32 while sustained (halves while not), then is bisected to within a quarter.

NOTE: the client, the fake provider, PostgreSQL and the worker share this machine's cores:
compare the figures of one run, not runs on different machines.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, ExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass
from itertools import count
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from aiohttp import ClientError, ClientSession, ClientTimeout, CookieJar, web  # noqa: E402
from cluster import free_port, start_postgres  # noqa: E402

COALESCE_MS = 50
LONG_TOKENS, LONG_PACE = 2000, 200.0  # figure 1: tokens, tokens a second
ANSWER_TOKENS, PACE = 75, 50.0  # figure 2: an answer of 1.5 s
PACE_FLOOR, FIRST_EVENT_LIMIT_S = 45.0, 0.2
START_N, MAX_N = 32, 512
MODEL_ID, KEY_ENV = "bench-model", "RIACHO_BENCH_KEY"
START_TIMEOUT_S, ANSWER_TIMEOUT_S = 30.0, 60.0
JsonObject = dict[str, object]
_chat_numbers = count(1)


# --- processes and clients --------------------------------------------------------------------


@contextmanager
def running(command: list[str], log: Path, port: int) -> Iterator[None]:
    """A child process listening on ``port`` for the ``with`` block (its output in ``log``)."""
    env = {**os.environ, KEY_ENV: "sk-bench-0123456789"}
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=out)
    try:
        _wait_for_port(port, process)
        yield
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_for_port(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"throughput: {process.args!r} exited with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"throughput: nothing listens on port {port}")


@contextmanager
def worker(workdir: Path, db: Path | str, args: list[str]) -> Iterator[str]:
    """One ``python -m server`` on a free loopback port; its URL."""
    port = free_port()
    command = [sys.executable, "-m", "server", "--host", "127.0.0.1", "--port", str(port)]
    with running([*command, "--db", str(db), *args], workdir / f"worker-{port}.log", port):
        yield f"http://127.0.0.1:{port}"


@asynccontextmanager
async def signed_in(base: str) -> AsyncIterator[ClientSession]:
    """A client with an anonymous session of its own (a user of its own)."""
    # NOTE: unsafe: keep the session cookie of an IP-address host (127.0.0.1).
    jar, timeout = CookieJar(unsafe=True), ClientTimeout(total=ANSWER_TIMEOUT_S)
    async with ClientSession(cookie_jar=jar, timeout=timeout) as client:
        async with client.get(base + "/api/session") as response:
            response.raise_for_status()
        yield client


def stream_body(prompt: str) -> JsonObject:
    return {"chatId": f"chat_bench{next(_chat_numbers):07d}", "prompt": prompt, "modelId": MODEL_ID}


# --- a paced Chat Completions provider (a process of its own) ---------------------------------

ASKED = re.compile(r"tokens=(\d+) pace=(\d+)")


def ask(tokens: int, pace: float) -> str:
    """The prompt that asks the paced provider for ``tokens`` tokens at ``pace`` a second."""
    return f"tokens={tokens} pace={pace:g}"


def answer_text(tokens: int) -> str:
    """The provider's answer: one character a token, some of them not ASCII."""
    return ("Rivers run to the sea; água corre, 川は流れる. " * (tokens // 40 + 1))[:tokens]


def _chunk(delta: JsonObject, finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    body = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "choices": [choice]}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


async def _completions(request: web.Request) -> web.StreamResponse:
    """The asked tokens, one a chunk, on a fixed schedule (late chunks do not push the rest)."""
    asked = ASKED.search(json.dumps((await request.json())["messages"][-1]))
    tokens, pace = (int(asked[1]), float(asked[2])) if asked else (10, 50.0)
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    await response.write(_chunk({"role": "assistant", "content": ""}))
    loop = asyncio.get_running_loop()
    start = loop.time()
    for index, character in enumerate(answer_text(tokens)):
        await asyncio.sleep(max(start + index / pace - loop.time(), 0.0))
        await response.write(_chunk({"content": character}))
    await response.write(_chunk({}, "stop") + b"data: [DONE]\n\n")
    await response.write_eof()
    return response


def serve_provider(port: int) -> None:
    """``throughput.py --provider PORT``: the paced provider until terminated."""
    app = web.Application()
    app.router.add_post("/v1/chat/completions", _completions)
    web.run_app(app, host="127.0.0.1", port=port, print=None)


@contextmanager
def paced_provider(workdir: Path) -> Iterator[list[str]]:
    """The paced provider in a process of its own; the ``python -m server`` arguments for it."""
    port = free_port()
    command = [sys.executable, __file__, "--provider", str(port)]
    with running(command, workdir / "provider.log", port):
        yield [
            *("--provider", "openai-chat", "--model", MODEL_ID),
            *("--base-url", f"http://127.0.0.1:{port}/v1", "--api-key-env", KEY_ENV),
        ]


# --- figure 1: events and rows of a long answer -----------------------------------------------


async def long_answer(base: str) -> tuple[int, str]:
    """The events of one long answer of the paced provider, and its text."""
    async with signed_in(base) as client:
        body = stream_body(ask(LONG_TOKENS, LONG_PACE))
        async with client.post(base + "/api/respond/stream", json=body) as response:
            response.raise_for_status()
            lines = [line async for line in response.content if line.startswith(b"data: ")]
    events = [json.loads(line[6:]) for line in lines]
    return len(events), "".join(str(e["text"]) for e in events if e["type"] == "text")


def logged_rows(db: Path) -> int:
    with sqlite3.connect(db) as connection:
        (rows,) = connection.execute("SELECT COUNT(*) FROM run_events").fetchone()
    return int(rows)


async def figure_long_answer(workdir: Path, model: list[str]) -> str:
    """Figure 1's line: the same answer through a worker with coalescing and one without."""
    settings = {COALESCE_MS: workdir / "long-coalesced.db", 0: workdir / "long-each.db"}
    with ExitStack() as stack:
        bases = [
            stack.enter_context(worker(workdir, db, [*model, "--coalesce-ms", str(ms)]))
            for ms, db in settings.items()
        ]
        answers = await asyncio.gather(*(long_answer(base) for base in bases))
    same = all(text == answer_text(LONG_TOKENS) for _events, text in answers)
    columns = [
        f"{ms} ms{' (off)' if ms == 0 else ''}: {events:,} events, "
        f"{logged_rows(settings[ms]):,} logged rows"
        for ms, (events, _text) in zip(settings, answers, strict=True)
    ]
    return (
        f"coalescing, one {LONG_TOKENS:,}-token answer (one character a token at "
        f"{LONG_PACE:.0f} tokens/s, a real model's path, SQLite): {'; '.join(columns)}; "
        f"{'the same' if same else 'NOT the same'} {LONG_TOKENS:,} characters"
    )


# --- figure 2: concurrent answers at 50 tokens/s ----------------------------------------------


@dataclass(frozen=True, slots=True)
class Answer:
    """One answer as its client saw it (seconds since the trial began)."""

    started_s: float
    first_event_s: float | None
    pace: float  # tokens a second, from the request to the answer's end
    done: bool


@dataclass(frozen=True, slots=True)
class Trial:
    """N answers always under way; the answers measured."""

    n: int
    answers: list[Answer]

    @property
    def first_event_p95_s(self) -> float:
        times = sorted(a.first_event_s or ANSWER_TIMEOUT_S for a in self.answers)
        return times[min(int(0.95 * len(times)), len(times) - 1)] if times else float("inf")

    @property
    def median_pace(self) -> float:
        return statistics.median(a.pace for a in self.answers) if self.answers else 0.0

    @property
    def sustained(self) -> bool:
        return (
            bool(self.answers)
            and all(a.done for a in self.answers)
            and self.first_event_p95_s < FIRST_EVENT_LIMIT_S
            and self.median_pace >= PACE_FLOOR
        )

    def summary(self) -> str:
        if not self.answers:
            return "no answer ended in time to start another"
        undone = sum(not a.done for a in self.answers)
        return (
            f"p95 first event {self.first_event_p95_s * 1000:,.0f} ms, "
            f"median pace {self.median_pace:.1f} tokens/s"
            + (f", {undone} not done" if undone else "")
        )


async def one_answer(client: ClientSession, base: str, began: float) -> Answer:
    """Send the prompt, read the answer to its end; only the first bytes' time and the tail's
    ``done`` are looked at (the client stays cheap)."""
    loop = asyncio.get_running_loop()
    started, first, tail = loop.time(), None, b""
    try:
        body = stream_body(ask(ANSWER_TOKENS, PACE))
        async with client.post(base + "/api/respond/stream", json=body) as response:
            async for chunk in response.content.iter_any():
                first = first if first is not None else loop.time()
                tail = (tail + chunk)[-512:]
    except (ClientError, TimeoutError):
        pass  # NOTE: not done: counted against the trial
    pace = ANSWER_TOKENS / (loop.time() - started)
    done = b'"stopReason":"stop"' in tail
    return Answer(started - began, None if first is None else first - started, pace, done)


async def answer_on(
    client: ClientSession, base: str, began: float, offset_s: float, until_s: float
) -> list[Answer]:
    """One client: from ``offset_s``, answers back to back until ``until_s``."""
    loop, answers = asyncio.get_running_loop(), []
    await asyncio.sleep(max(began + offset_s - loop.time(), 0.0))
    while loop.time() - began < until_s:
        answers.append(await one_answer(client, base, began))
    return answers


async def trial(base: str, n: int) -> Trial:
    """N answers always under way for two answers' time; those started in the second measured."""
    answer_s = ANSWER_TOKENS / PACE
    async with AsyncExitStack() as stack:
        clients = await asyncio.gather(
            *(stack.enter_async_context(signed_in(base)) for _ in range(n))
        )
        began = asyncio.get_running_loop().time()
        runs = [
            answer_on(c, base, began, i * answer_s / n, 2 * answer_s) for i, c in enumerate(clients)
        ]
        answers = [a for batch in await asyncio.gather(*runs) for a in batch]
    await asyncio.sleep(0.5)  # NOTE: the worker winds the last answers up before the next trial
    return Trial(n, [a for a in answers if a.started_s >= answer_s])


async def search(base: str) -> tuple[Trial | None, Trial | None, list[Trial]]:
    """The largest N sustained and the smallest not: doubling or halving, then bisecting."""
    trials: list[Trial] = []
    best: Trial | None = None
    worst: Trial | None = None
    n = START_N
    while (best is None or worst is None) and 1 <= n <= MAX_N:
        trials.append(await trial(base, n))
        if trials[-1].sustained:
            best, n = trials[-1], n * 2
        else:
            worst, n = trials[-1], n // 2
    while best is not None and worst is not None and worst.n - best.n > max(1, best.n // 4):
        trials.append(await trial(base, (best.n + worst.n) // 2))
        best, worst = (trials[-1], worst) if trials[-1].sustained else (best, trials[-1])
    return best, worst, trials


def sustained_line(engine: str, coalesce_ms: int, best: Trial | None, worst: Trial | None) -> str:
    setting = f"coalescing {coalesce_ms} ms" if coalesce_ms else "coalescing off"
    head = f"sustained answers at {PACE:.0f} tokens/s each, one worker, {engine}, {setting}: "
    if best is None:
        return head + f"fewer than 1 ({worst.summary() if worst else 'no trial'})"
    line = head + f"{best.n} ({best.summary()})"
    if worst is None:
        return line + f"; {MAX_N} is this bench's cap"
    return line + f"; {worst.n} not ({worst.summary()})"


async def figure_sustained(workdir: Path, engine: str, db: Path | str, model: list[str]) -> None:
    """Figure 2's lines for one database: with coalescing, then without."""
    for coalesce_ms in (COALESCE_MS, 0):
        with worker(workdir, db, [*model, "--coalesce-ms", str(coalesce_ms)]) as base:
            best, worst, trials = await search(base)
        trail = " ".join(f"{t.n}{'+' if t.sustained else '-'}" for t in trials)
        print(f"{sustained_line(engine, coalesce_ms, best, worst)}  [trials {trail}]", flush=True)


def main() -> int:
    if sys.argv[1:2] == ["--provider"]:
        serve_provider(int(sys.argv[2]))
        return 0
    # NOTE: the directory outlives the processes using it (the ExitStack exits first)
    with tempfile.TemporaryDirectory(prefix="riacho-throughput-") as work, ExitStack() as stack:
        workdir = Path(work)
        model = stack.enter_context(paced_provider(workdir))
        print(asyncio.run(figure_long_answer(workdir, model)), flush=True)
        asyncio.run(figure_sustained(workdir, "SQLite", workdir / "sustained.db", model))
        url = start_postgres(stack, workdir)
        asyncio.run(figure_sustained(workdir, "PostgreSQL", url, model))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
