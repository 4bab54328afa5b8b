"""Tests for app.wire.sse: the WHATWG event-stream decoder, read by read."""

from __future__ import annotations

import itertools
import re
import tracemalloc
from collections.abc import Callable, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.wire.sse import DEFAULT_MAX_EVENT_BYTES, MAX_ISSUES, SSEDecoder, SSEMessage

BOM = b"\xef\xbb\xbf"

Outcome = tuple[list[SSEMessage], int | None, str, int, list[str]]
Split = Callable[[bytes], list[bytes]]


def msg(data: str, event: str = "message", id: str = "") -> SSEMessage:
    return SSEMessage(event=event, data=data, id=id)


def decode(
    chunks: Sequence[bytes], max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES
) -> tuple[list[SSEMessage], SSEDecoder]:
    """Feed every read, then close; return all messages and the decoder."""
    decoder = SSEDecoder(max_event_bytes=max_event_bytes)
    messages: list[SSEMessage] = []
    for chunk in chunks:
        messages += decoder.feed(chunk)
    messages += decoder.close()
    return messages, decoder


def split_every(stream: bytes, size: int) -> list[bytes]:
    return [stream[i : i + size] for i in range(0, len(stream), size)]


def split_at(stream: bytes, cuts: Sequence[int]) -> list[bytes]:
    bounds = [0, *sorted(set(cuts)), len(stream)]
    return [stream[a:b] for a, b in itertools.pairwise(bounds)]


def outcome(chunks: Sequence[bytes], max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> Outcome:
    messages, d = decode(chunks, max_event_bytes)
    return messages, d.retry, d.last_event_id, d.comment_count, [i.kind for i in d.issues]


def kinds(decoder: SSEDecoder) -> list[str]:
    return [issue.kind for issue in decoder.issues]


CHUNKINGS = [
    pytest.param(lambda s: [s], id="single-read"),
    pytest.param(lambda s: split_every(s, 1), id="one-byte-reads"),
    pytest.param(lambda s: split_every(s, 3), id="three-byte-reads"),
]

# --- The spec's own examples ---------------------------------------------------------------

SPEC_EXAMPLES = [
    pytest.param(
        "data: YHOO\ndata: +2\ndata: 10\n\n",
        [msg("YHOO\n+2\n10")],
        id="stock-multi-line-data",
    ),
    pytest.param(
        ": test stream\n\ndata: first event\nid: 1\n\n"
        "data:second event\nid\n\ndata:  third event\n\n",
        [msg("first event", id="1"), msg("second event"), msg(" third event")],
        id="four-blocks-comment-id-reset-leading-space",
    ),
    pytest.param(
        "data\n\ndata\ndata\n\ndata:",
        [msg(""), msg("\n")],
        id="bare-data-fields-and-unterminated-last-block",
    ),
    pytest.param("data:test\n\ndata: test\n\n", [msg("test"), msg("test")], id="space-optional"),
    pytest.param(
        "event: add\ndata: 73857293\n\nevent: remove\ndata: 2153\n\nevent: add\ndata: 113411\n\n",
        [msg("73857293", "add"), msg("2153", "remove"), msg("113411", "add")],
        id="event-types",
    ),
]


@pytest.mark.parametrize("split", CHUNKINGS)
@pytest.mark.parametrize(("stream", "expected"), SPEC_EXAMPLES)
def test_spec_examples(stream: str, expected: list[SSEMessage], split: Split) -> None:
    messages, _ = decode(split(stream.encode()))
    assert messages == expected


# --- Line ends -----------------------------------------------------------------------------

LINE_ENDS = [
    pytest.param([b"data: a\n\n"], [msg("a")], id="lf"),
    pytest.param([b"data: a\r\n\r\n"], [msg("a")], id="crlf"),
    pytest.param([b"data: a\r\r"], [msg("a")], id="cr"),
    pytest.param([b"data: a\r\ndata: b\rdata: c\n\r\n"], [msg("a\nb\nc")], id="mixed"),
    pytest.param([b"data: a\r", b"\ndata: b\n\n"], [msg("a\nb")], id="crlf-split-across-reads"),
    pytest.param(
        [b"data: a\r", b"", b"\ndata: b\n\n"], [msg("a\nb")], id="crlf-split-by-an-empty-read"
    ),
    pytest.param([b"data: a\r", b"\xc3", b"\xa9\n\n"], [msg("a")], id="cr-then-split-code-point"),
    pytest.param([b"data: a\r", b"data: b\r\r"], [msg("a\nb")], id="cr-at-end-then-other-text"),
    pytest.param([b"data: a\r", b"\r", b"\n"], [msg("a")], id="cr-cr-lf-across-reads"),
    pytest.param([b"data: a\r\rdata: b\r\r"], [msg("a"), msg("b")], id="cr-cr-is-two-line-ends"),
    pytest.param([b"data: a\n\rdata: b\n\n"], [msg("a"), msg("b")], id="lf-cr-is-two-line-ends"),
    pytest.param([b"data: a\n", b"\n"], [msg("a")], id="blank-line-in-next-read"),
    pytest.param(
        ["data: a\u2028b\u0085c\x0b\x0cd\x1c\x1de\n\n".encode()],
        [msg("a\u2028b\u0085c\x0b\x0cd\x1c\x1de")],
        id="unicode-separators-are-not-line-ends",
    ),
    pytest.param(
        ["data: a\u2028b\u2029c\r\ndata: d\u0085e\r\r".encode()],
        [msg("a\u2028b\u2029c\nd\u0085e")],
        id="unicode-separators-among-crs",
    ),
]


@pytest.mark.parametrize(("chunks", "expected"), LINE_ENDS)
def test_line_ends(chunks: list[bytes], expected: list[SSEMessage]) -> None:
    messages, _ = decode(chunks)
    assert messages == expected


def test_trailing_cr_dispatches_without_waiting_for_the_next_read() -> None:
    d = SSEDecoder()
    assert d.feed(b"data: a\r\r") == [msg("a")]
    assert d.feed(b"\ndata: b\n\n") == [msg("b")]


# --- Fields --------------------------------------------------------------------------------

FIELDS = [
    pytest.param("data:a\n\n", [msg("a")], id="no-space-after-colon"),
    pytest.param("data:  a\n\n", [msg(" a")], id="only-one-space-dropped"),
    pytest.param("data:\ta\n\n", [msg("\ta")], id="tab-not-dropped"),
    pytest.param("data: a \n\n", [msg("a ")], id="trailing-space-kept"),
    pytest.param("data: a:b: c\n\n", [msg("a:b: c")], id="later-colons-in-value"),
    pytest.param("data\n\n", [msg("")], id="bare-data-name-is-empty-value"),
    pytest.param("data:\ndata:\n\n", [msg("\n")], id="two-empty-data-lines"),
    pytest.param("data: a\0b\n\n", [msg("a\0b")], id="nul-in-data-kept"),
    pytest.param("data: \ufeffx\n\n", [msg("\ufeffx")], id="bom-inside-data-kept"),
    pytest.param("event: ping\ndata: x\n\n", [msg("x", "ping")], id="custom-event-type"),
    pytest.param("event: a\nevent: b\ndata: x\n\n", [msg("x", "b")], id="last-event-type-wins"),
    pytest.param("event:\ndata: x\n\n", [msg("x")], id="empty-event-type-is-message"),
    pytest.param(
        "event: a\ndata: x\n\ndata: y\n\n", [msg("x", "a"), msg("y")], id="event-type-reset"
    ),
    pytest.param(
        "event: a\n\ndata: y\n\n", [msg("y")], id="event-only-frame-dispatches-nothing-and-resets"
    ),
    pytest.param("Data: x\n\nDATA: y\n\n", [], id="field-names-case-sensitive"),
    pytest.param("data : x\n\n", [], id="space-before-colon-is-part-of-name"),
    pytest.param(" data: x\n\n", [], id="leading-space-is-part-of-name"),
    pytest.param("foo: x\ndata: y\n\n", [msg("y")], id="unknown-field-ignored"),
    pytest.param("data: a\n: data: b\ndata: c\n\n", [msg("a\nc")], id="comment-inside-frame"),
    pytest.param(":\n\n", [], id="empty-comment"),
    pytest.param("retry: 5\n\n", [], id="retry-only-frame-dispatches-nothing"),
    pytest.param("data: x\nid: 3\n\n", [msg("x", id="3")], id="id-after-data-applies"),
    pytest.param(
        "id: 1\ndata: a\n\ndata: b\n\n", [msg("a", id="1"), msg("b", id="1")], id="id-persists"
    ),
    pytest.param("id: 5\n\ndata: x\n\n", [msg("x", id="5")], id="id-of-data-less-frame-persists"),
    pytest.param(
        "id: 1\ndata: a\n\nid:\ndata: b\n\n", [msg("a", id="1"), msg("b")], id="empty-id-resets"
    ),
    pytest.param(
        "id: 1\ndata: a\n\nid\ndata: b\n\n", [msg("a", id="1"), msg("b")], id="bare-id-resets"
    ),
    pytest.param(
        "id: 1\ndata: a\n\nid: 2\0\ndata: b\n\n",
        [msg("a", id="1"), msg("b", id="1")],
        id="id-with-nul-ignored",
    ),
    pytest.param("id: \u00e9\U0001f642\ndata: x\n\n", [msg("x", id="é🙂")], id="unicode-id"),
]


@pytest.mark.parametrize(("stream", "expected"), FIELDS)
def test_fields(stream: str, expected: list[SSEMessage]) -> None:
    messages, _ = decode([stream.encode()])
    assert messages == expected


RETRY = [
    pytest.param("retry: 3000\n", 3000, id="digits"),
    pytest.param("retry:250\n", 250, id="no-space"),
    pytest.param("retry: 0\n", 0, id="zero"),
    pytest.param("retry: 0005\n", 5, id="leading-zeros"),
    pytest.param("retry: 1\nretry: 2\n", 2, id="last-valid-wins"),
    pytest.param("retry: 10\nretry: -1\n", 10, id="negative-ignored"),
    pytest.param("retry: 10\nretry: 5s\n", 10, id="unit-ignored"),
    pytest.param("retry: 10\nretry: 1.5\n", 10, id="decimal-ignored"),
    pytest.param("retry: 10\nretry:\n", 10, id="empty-ignored"),
    pytest.param("retry: 10\nretry\n", 10, id="bare-name-ignored"),
    pytest.param("retry: 10\nretry:  5\n", 10, id="second-space-ignored"),
    pytest.param("retry: 10\nretry: 5 \n", 10, id="trailing-space-ignored"),
    pytest.param("retry: 10\nretry: \u0661\u0662\n", 10, id="arabic-indic-digits-ignored"),
    pytest.param("retry: 10\nretry: \u00b2\n", 10, id="superscript-digit-ignored"),
    pytest.param("retry: " + "9" * 15 + "\n", 10**15 - 1, id="fifteen-digits-accepted"),
    pytest.param("retry: " + "0" * 100 + "7\n", 7, id="many-leading-zeros-accepted"),
    pytest.param("retry: 10\nretry: 1" + "0" * 15 + "\n", 10, id="sixteen-digits-ignored"),
    pytest.param("retry: 10\nretry: " + "1" * 5000 + "\n", 10, id="5000-digits-ignored"),
    pytest.param("", None, id="none-by-default"),
]


@pytest.mark.parametrize(("stream", "expected"), RETRY)
def test_retry(stream: str, expected: int | None) -> None:
    _, d = decode([stream.encode()])
    assert d.retry == expected


def test_retry_applies_without_a_dispatch() -> None:
    d = SSEDecoder()
    d.feed(b"retry: 1500\n")
    assert d.retry == 1500


LAST_EVENT_ID = [
    pytest.param("", "", id="empty-by-default"),
    pytest.param("id: 7\ndata: x\n\n", "7", id="set-by-dispatch"),
    pytest.param("id: 7\n\n", "7", id="set-by-data-less-dispatch"),
    pytest.param("id: 7\n\nid: 8\n", "7", id="unfinished-frame-not-applied"),
    pytest.param("id: 7\n\nid:\n\n", "", id="reset-by-empty-id"),
    pytest.param("id: 7\n\nid: 8\0\n\n", "7", id="nul-id-ignored"),
]


@pytest.mark.parametrize(("stream", "expected"), LAST_EVENT_ID)
def test_last_event_id(stream: str, expected: str) -> None:
    _, d = decode([stream.encode()])
    assert d.last_event_id == expected


# --- UTF-8 and the BOM ---------------------------------------------------------------------

UTF8 = [
    pytest.param([BOM + b"data: a\n\n"], [msg("a")], id="leading-bom-dropped"),
    pytest.param([b"\xef", b"\xbb", b"\xbfdata: a\n\n"], [msg("a")], id="bom-split-across-reads"),
    pytest.param([b"", BOM + b"data: a\n\n"], [msg("a")], id="bom-after-empty-read"),
    pytest.param([BOM + BOM + b"data: a\n\n"], [], id="only-one-bom-dropped"),
    pytest.param([BOM, BOM + b"data: a\n\n"], [], id="second-bom-in-next-read-kept"),
    pytest.param([b"data: a\n\n", BOM + b"data: b\n\n"], [msg("a")], id="bom-in-later-read-kept"),
    pytest.param(
        [b"data: \xf0\x9f", b"\x99\x82 ol\xc3", b"\xa1\n\n"],
        [msg("🙂 olá")],
        id="code-points-split-across-reads",
    ),
    pytest.param(
        split_every("data: 中文 ñ 🙂\n\n".encode(), 1), [msg("中文 ñ 🙂")], id="one-byte-reads"
    ),
    pytest.param([b"data: a\xffb\n\n"], [msg("a\ufffdb")], id="invalid-byte-replaced"),
    pytest.param([b"data: a\xe2\x82", b"b\n\n"], [msg("a\ufffdb")], id="truncated-sequence"),
    pytest.param([b"data: \xed\xa0\x80\n\n"], [msg("\ufffd" * 3)], id="encoded-surrogate"),
    pytest.param(["data: \ufffd\n\n".encode()], [msg("\ufffd")], id="literal-replacement-kept"),
]


@pytest.mark.parametrize(("chunks", "expected"), UTF8)
def test_utf8_and_bom(chunks: list[bytes], expected: list[SSEMessage]) -> None:
    messages, _ = decode(chunks)
    assert messages == expected


# --- Issues --------------------------------------------------------------------------------

ISSUES = [
    pytest.param([b"data: a\n\n"], [], id="clean-stream"),
    pytest.param([b"data: a\xff\xfeb\n\n"], ["invalid-utf8"], id="invalid-bytes"),
    pytest.param([b"data: a\xe2", b"\x82b\n\n"], ["invalid-utf8"], id="invalid-across-reads"),
    pytest.param(["data: \ufffd\n\n".encode()], [], id="literal-replacement-is-no-issue"),
    pytest.param([b"data: \xef\xbf", b"\xbd\n\n"], [], id="literal-replacement-split"),
    pytest.param([b"data: \xef", b"\xbf", b"\xbd\n\n"], [], id="literal-replacement-in-3-reads"),
    pytest.param([b"data: \xef\xbf\xbd\xff\n\n"], ["invalid-utf8"], id="literal-then-invalid-byte"),
    pytest.param(
        [b"data: a\n\n\xe2\x82"], ["invalid-utf8", "unfinished-frame"], id="truncated-at-eof"
    ),
    pytest.param([b"id: 1\0\n\n"], ["invalid-id"], id="nul-in-id"),
    pytest.param([b"retry: soon\n\n"], ["invalid-retry"], id="retry-not-digits"),
    pytest.param([b"retry: 1" + b"0" * 20 + b"\n\n"], ["invalid-retry"], id="retry-too-long"),
    pytest.param([b"foo: 1\nbar\n\n"], ["unknown-field", "unknown-field"], id="unknown-fields"),
    pytest.param([b": keepalive\n"], [], id="comment-is-no-issue"),
    pytest.param([b"data: a\n"], ["unfinished-frame"], id="eof-before-empty-line"),
    pytest.param([b"data: a"], ["unfinished-frame"], id="eof-inside-a-line"),
    pytest.param([b"event: a\n"], ["unfinished-frame"], id="eof-after-event-field"),
    pytest.param([b"data: a\n\n: keepalive\n"], [], id="eof-after-comment-is-complete"),
]


@pytest.mark.parametrize(("chunks", "expected"), ISSUES)
def test_issues(chunks: list[bytes], expected: list[str]) -> None:
    _, d = decode(chunks)
    assert kinds(d) == expected


def test_issue_details_name_the_culprit_briefly() -> None:
    d = SSEDecoder()
    d.feed(b"color: red\n" + b"x" * 1000 + b": 1\n")
    short, long = (issue.detail for issue in d.issues)
    assert "'color'" in short
    assert "x" * 40 + "…" in long
    assert len(long) < 100


def test_invalid_utf8_detail_counts_the_replacements() -> None:
    d = SSEDecoder()
    d.feed(b"data: \xff\xfe\xef\xbf\xbd\n\n")
    assert [issue.detail for issue in d.issues] == ["2 invalid sequence(s) became U+FFFD"]


def test_issues_are_capped() -> None:
    d = SSEDecoder()
    d.feed(b"foo: 1\n" * (MAX_ISSUES + 50))
    assert len(d.issues) == MAX_ISSUES
    assert d.issues_dropped == 50


@pytest.mark.parametrize(
    ("end", "kind"),
    [(b"data: " + b"x" * 100, "event-too-large"), (b"data: x", "unfinished-frame")],
    ids=["event-too-large", "unfinished-frame"],
)
def test_once_per_stream_issues_are_kept_beyond_the_cap(end: bytes, kind: str) -> None:
    _, d = decode([b"foo: 1\n" * (MAX_ISSUES + 1), end], max_event_bytes=64)
    assert len(d.issues) == MAX_ISSUES + 1
    assert d.issues[-1].kind == kind
    assert d.issues_dropped == 1


def test_unfinished_frame_is_discarded_at_close() -> None:
    d = SSEDecoder()
    assert d.feed(b"id: 3\nevent: add\ndata: a\n") == []
    assert d.close() == []
    assert d.last_event_id == ""


# --- Comments ------------------------------------------------------------------------------


def test_comments_are_counted_per_line_as_they_complete() -> None:
    d = SSEDecoder()
    counts: list[int] = []
    for chunk in [b": keep", b"alive\n", b":\r:x\r", b"\n", b"data: a\n: in frame\n\n"]:
        d.feed(chunk)
        counts.append(d.comment_count)
    assert counts == [0, 1, 3, 3, 4]


def test_keepalive_is_not_content() -> None:
    messages, d = decode([b": keepalive\n\n: keepalive\n\ndata: a\n: keepalive\ndata: b\n\n"])
    assert messages == [msg("a\nb")]
    assert d.comment_count == 3


# --- Limits --------------------------------------------------------------------------------


@pytest.mark.parametrize(("extra", "stopped"), [(0, False), (1, True)], ids=["at", "over"])
@pytest.mark.parametrize("split", CHUNKINGS)
def test_line_limit_boundary(extra: int, stopped: bool, split: Split) -> None:
    line = b"data: " + b"x" * (16 - 6 + extra)
    _, d = decode(split(line + b"\n\n"), max_event_bytes=16)
    assert d.stopped is stopped


@pytest.mark.parametrize(
    ("value", "stopped"),
    [("é" * 2, False), ("é" * 3, True), ("🙂", False), ("🙂a", True)],
    ids=["9-bytes", "11-bytes-8-chars", "9-bytes-emoji", "10-bytes-7-chars"],
)
def test_limit_counts_utf8_bytes_not_characters(value: str, stopped: bool) -> None:
    _, d = decode([f"data:{value}\n\n".encode()], max_event_bytes=9)
    assert d.stopped is stopped


@pytest.mark.parametrize(
    ("stream", "stopped"),
    [
        pytest.param(b"data:1234\ndata:12345\n\n", False, id="data-at-limit"),
        pytest.param(b"data:12345\ndata:12345\n\n", True, id="data-over-limit"),
        pytest.param(b"data:\n" * 11 + b"\n", False, id="eleven-empty-lines-at-limit"),
        pytest.param(b"data:\n" * 12 + b"\n", True, id="twelve-empty-lines-over-limit"),
    ],
)
def test_event_data_limit_spans_lines(stream: bytes, stopped: bool) -> None:
    messages, d = decode(split_every(stream, 4), max_event_bytes=10)
    assert d.stopped is stopped
    assert (messages == []) is stopped
    assert all("event data" in issue.detail for issue in d.issues)


@pytest.mark.parametrize("split", CHUNKINGS)
@pytest.mark.parametrize(
    "oversized",
    [
        pytest.param(b"data: " + b"x" * 100 + b"\n\n", id="data-line"),
        pytest.param(b": " + b"x" * 100 + b"\n", id="comment-line"),
        pytest.param(b"x" * 100 + b"\n", id="field-name"),
        pytest.param(b"data: " + b"x" * 100, id="unterminated-line"),
        pytest.param(b"data: y\n" * 40 + b"\n", id="many-data-lines"),
    ],
)
def test_too_large_stops_and_ignores_further_input(oversized: bytes, split: Split) -> None:
    stream = b"data: a\n\ndata: b\n" + oversized + b"data: c\n\n"
    d = SSEDecoder(max_event_bytes=64)
    messages = [m for chunk in split(stream) for m in d.feed(chunk)]
    assert messages == [msg("a")]
    assert d.stopped
    assert d.feed(b"data: d\n\n") == []
    assert d.close() == []
    assert kinds(d) == ["event-too-large"]


def test_unfinished_line_stops_as_soon_as_it_outgrows_the_limit() -> None:
    d = SSEDecoder(max_event_bytes=64)
    stopped_after: list[bool] = []
    for chunk in split_every(b"data: " + b"x" * 200, 16):
        d.feed(chunk)
        stopped_after.append(d.stopped)
    assert stopped_after.index(True) == 4  # 4 reads = 64 bytes (the limit), 5 reads = 80
    assert "unfinished line" in d.issues[0].detail


@pytest.mark.parametrize(
    "stream",
    [
        pytest.param(
            b"data: " + b"x" * 900_000 + b"\ndata: " + b"y" * 200_000 + b"\n", id="event-data"
        ),
        pytest.param(b"data: " + b"x" * 1_100_000, id="unfinished-line"),
    ],
)
def test_stopping_releases_the_buffers(stream: bytes) -> None:
    reads = split_every(stream, 16384)
    tracemalloc.start()
    try:
        d = SSEDecoder()
        for chunk in reads:
            d.feed(chunk)
        retained, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert d.stopped
    assert retained < 64 * 1024


def test_default_limit_is_one_mebibyte() -> None:
    fits = b"data: " + b"x" * (DEFAULT_MAX_EVENT_BYTES - 6) + b"\n\n"
    messages, d = decode(split_every(fits, 65536))
    assert len(messages[0].data) == DEFAULT_MAX_EVENT_BYTES - 6
    assert not d.stopped
    _, d = decode([b"data: " + b"x" * DEFAULT_MAX_EVENT_BYTES])
    assert d.stopped


# --- Misuse --------------------------------------------------------------------------------


def test_feed_after_close_raises() -> None:
    d = SSEDecoder()
    d.close()
    with pytest.raises(RuntimeError, match="after close"):
        d.feed(b"data: a\n\n")


@pytest.mark.parametrize(
    "chunk", ["data: a\n\n", None, 42, [100]], ids=["str", "none", "int", "list"]
)
def test_feed_rejects_non_bytes_even_when_stopped(chunk: object) -> None:
    d = SSEDecoder(max_event_bytes=4)
    d.feed(b"data: too long")
    assert d.stopped
    with pytest.raises(TypeError, match="expects bytes"):
        d.feed(chunk)  # type: ignore[arg-type]


@pytest.mark.parametrize("limit", [0, -1])
def test_max_event_bytes_must_be_positive(limit: int) -> None:
    with pytest.raises(ValueError, match="positive"):
        SSEDecoder(max_event_bytes=limit)


def test_close_is_idempotent() -> None:
    d = SSEDecoder()
    d.feed(b"data: a")
    assert d.close() == []
    assert d.close() == []
    assert kinds(d) == ["unfinished-frame"]
    assert d.closed


@pytest.mark.parametrize("kind", [bytes, bytearray, memoryview], ids=lambda k: k.__name__)
def test_bytes_like_reads_accepted(kind: type[bytes] | type[bytearray] | type[memoryview]) -> None:
    d = SSEDecoder()
    assert d.feed(kind(b"data: a\r")) + d.feed(kind(b"\n\n")) == [msg("a")]


# --- Properties: any chunking gives the same result -----------------------------------------

_CHARS = st.one_of(
    st.sampled_from(list("aZ09 :é€🙂中文ñü\u2028\u0085\x00\ufeff\ufffd")),
    st.characters(exclude_categories=["Cs"], exclude_characters="\r\n"),
)
TEXT = st.text(alphabet=_CHARS, max_size=12)
NAMES = st.sampled_from(["data", "data", "event", "id", "retry", "Data", "foo", "\ufeffdata"])
FIELD_LINES = st.builds(
    lambda n, sep, v: n + sep + v, NAMES, st.sampled_from([":", ": ", ""]), TEXT
)
RETRY_LINES = st.integers(0, 10**6).map(lambda n: f"retry: {n}")
LINES = st.one_of(FIELD_LINES, RETRY_LINES, TEXT.map(lambda t: ":" + t), st.just(""), st.just(""))
ENDS = st.sampled_from(["\n", "\r", "\r\n"])


@st.composite
def streams(draw: st.DrawFn) -> bytes:
    """A random valid event stream: fields, comments, blank lines, mixed line ends."""
    lines = draw(st.lists(st.tuples(LINES, ENDS), max_size=25))
    head = draw(st.sampled_from(["", "\ufeff"]))
    tail = draw(st.sampled_from(["", "data: unfinished", "data: x\n"]))
    return (head + "".join(line + end for line, end in lines) + tail).encode()


BYTE_SOUP = st.lists(
    st.sampled_from(
        [
            *[b"\xef", b"\xbb", b"\xbf", b"\xbd", b"\xf0\x9f", b"\x80", b"\xff", b"\xc3", b"\xa9"],
            *[b"\r", b"\n", b"\n", b"data:", b"data:", b"id:", b"event:", b" ", b"x", b":", b"\0"],
        ]
    ),
    max_size=60,
).map(b"".join)


def cut_points(stream: bytes) -> st.SearchStrategy[list[int]]:
    return st.lists(st.integers(0, len(stream)), max_size=12)


@settings(max_examples=300)
@given(data=st.data(), stream=streams())
def test_any_split_of_a_valid_stream_gives_the_same_result(
    data: st.DataObject, stream: bytes
) -> None:
    cuts = data.draw(cut_points(stream))
    assert outcome(split_at(stream, cuts)) == outcome([stream])
    assert outcome(split_every(stream, 1)) == outcome([stream])


@settings(max_examples=300)
@given(data=st.data(), stream=BYTE_SOUP)
def test_any_split_of_arbitrary_bytes_gives_the_same_result(
    data: st.DataObject, stream: bytes
) -> None:
    def without_utf8(result: Outcome) -> Outcome:
        messages, retry, last_id, comments, issue_kinds = result
        return messages, retry, last_id, comments, [k for k in issue_kinds if k != "invalid-utf8"]

    cuts = data.draw(cut_points(stream))
    assert without_utf8(outcome(split_at(stream, cuts))) == without_utf8(outcome([stream]))


@settings(max_examples=300)
@given(data=st.data(), stream=BYTE_SOUP)
def test_invalid_utf8_is_counted_exactly_whatever_the_split(
    data: st.DataObject, stream: bytes
) -> None:
    replaced = stream.decode("utf-8", errors="replace").count("\ufffd")
    expected = replaced - stream.count("\ufffd".encode())
    _, d = decode(split_at(stream, data.draw(cut_points(stream))))
    reported = [int(i.detail.split()[0]) for i in d.issues if i.kind == "invalid-utf8"]
    assert sum(reported) == expected


@given(data=st.data(), stream=streams(), limit=st.integers(1, 40))
def test_any_split_stops_at_the_same_event_when_too_large(
    data: st.DataObject, stream: bytes, limit: int
) -> None:
    cuts = data.draw(cut_points(stream))
    assert outcome(split_at(stream, cuts), limit) == outcome([stream], limit)


@settings(max_examples=300)
@given(stream=st.one_of(streams(), BYTE_SOUP))
def test_single_read_matches_a_literal_reading_of_the_spec(stream: bytes) -> None:
    messages, d = decode([stream])
    assert (messages, d.retry, d.last_event_id) == reference_decode(stream)


def reference_decode(stream: bytes) -> tuple[list[SSEMessage], int | None, str]:
    """The spec's algorithm transcribed naively: whole-stream decode, string buffers."""
    text = stream.decode("utf-8", errors="replace").removeprefix("\ufeff")
    *lines, _unfinished = re.split("\r\n|\r|\n", text)
    messages: list[SSEMessage] = []
    data_buffer, event_type, id_buffer, last_event_id = "", "", "", ""
    retry: int | None = None
    for line in lines:
        if line == "":
            last_event_id = id_buffer
            if data_buffer != "":
                data = data_buffer.removesuffix("\n")
                messages.append(SSEMessage(event_type or "message", data, last_event_id))
            data_buffer, event_type = "", ""
        elif not line.startswith(":"):
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if name == "event":
                event_type = value
            elif name == "data":
                data_buffer += value + "\n"
            elif name == "id" and "\0" not in value:
                id_buffer = value
            elif name == "retry" and re.fullmatch("[0-9]+", value):
                retry = int(value) if len(value.lstrip("0")) <= 15 else retry
    return messages, retry, last_event_id
