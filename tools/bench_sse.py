"""Benchmark the SSE decoder (app.wire.sse) under CPython, one line per figure.

Run from the repository root: ``python tools/bench_sse.py``.

1. Bytes per second for one 1 MiB and one 8 MiB ``data:`` line fed in 16-byte reads, and the
   ratio of the two times: about 8 if decoding is linear, about 64 if it were quadratic.
2. Events per second for 20,000 ``text`` frames fed in 4096-byte reads: decoding only, then
   decoding plus parsing and validating each event into its pydantic model.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from app.wire.protocol import ParsedEvent, parse_event  # noqa: E402
from app.wire.sse import DEFAULT_MAX_EVENT_BYTES, SSEDecoder  # noqa: E402

MIB = 1024 * 1024
LONG_LINE_READ = 16
EVENT_COUNT = 20_000
EVENT_READ = 4096


def split_reads(stream: bytes, size: int) -> list[bytes]:
    """Cut ``stream`` into reads of ``size`` bytes, as a network reader would deliver them."""
    return [stream[i : i + size] for i in range(0, len(stream), size)]


def best_time(run: Callable[[], object], repeat: int) -> float:
    """Best wall time of ``repeat`` runs, in seconds."""
    times: list[float] = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def decode_reads(reads: Sequence[bytes], max_event_bytes: int) -> int:
    """Feed every read to a fresh decoder, close it; return the number of messages."""
    decoder = SSEDecoder(max_event_bytes=max_event_bytes)
    count = 0
    for chunk in reads:
        count += len(decoder.feed(chunk))
    count += len(decoder.close())
    return count


def long_line_seconds(size: int) -> float:
    """Time to decode one ``data:`` line of ``size`` bytes fed in 16-byte reads."""
    reads = split_reads(b"data: " + b"x" * size + b"\n\n", LONG_LINE_READ)
    limit = size + MIB

    def run() -> None:
        assert decode_reads(reads, limit) == 1

    return best_time(run, repeat=3)


def text_event_stream(count: int) -> bytes:
    """``count`` frames shaped like the server's ``text`` events, ``seq`` 1..count."""
    frames = []
    for seq in range(1, count + 1):
        event = {"type": "text", "text": "word ", "runId": "run_x", "seq": seq, "done": False}
        frames.append(f"id: {seq}\ndata: {json.dumps(event, separators=(',', ':'))}\n\n")
    return "".join(frames).encode()


def consume_events(stream: bytes) -> int:
    """Everything the client does with the bytes of one run; returns the events consumed."""
    return decode_reads(split_reads(stream, EVENT_READ), DEFAULT_MAX_EVENT_BYTES)


def consume_validated(stream: bytes) -> int:
    """Decode, then parse and validate every event (the client's per-event path)."""
    decoder = SSEDecoder()
    count = 0
    for chunk in split_reads(stream, EVENT_READ):
        for message in decoder.feed(chunk):
            count += isinstance(parse_event(message.data), ParsedEvent)
    return count


def events_per_second(stream: bytes, consume: Callable[[bytes], int], expected: int) -> float:
    """Events per second of ``consume`` over ``stream``, best of 5 runs."""

    def run() -> None:
        assert consume(stream) == expected

    return expected / best_time(run, repeat=5)


def main() -> None:
    one = long_line_seconds(1 * MIB)
    eight = long_line_seconds(8 * MIB)
    print(f"sse 1 MiB data line, 16-byte reads: {MIB / one:,.0f} bytes/s ({one:.3f} s)")
    print(f"sse 8 MiB data line, 16-byte reads: {8 * MIB / eight:,.0f} bytes/s ({eight:.3f} s)")
    print(f"sse 8 MiB / 1 MiB time ratio: {eight / one:.1f} (linear ~8, quadratic ~64)")
    stream = text_event_stream(EVENT_COUNT)
    rate = events_per_second(stream, consume_events, EVENT_COUNT)
    print(f"sse {EVENT_COUNT:,} text events, 4096-byte reads: {rate:,.0f} events/s (decode only)")
    rate = events_per_second(stream, consume_validated, EVENT_COUNT)
    print(f"sse {EVENT_COUNT:,} text events: {rate:,.0f} events/s (decode + parse + validate)")


if __name__ == "__main__":
    main()
