"""Incremental decoder for ``text/event-stream`` bytes (Server-Sent Events).

It follows the WHATWG "event stream interpretation" algorithm step by step:
https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation

``SSEDecoder.feed(bytes)`` returns the messages dispatched by that read and ``close()`` ends
the stream. No callbacks and no I/O: the browser shell owns the reader. Malformed input never
raises; it is ignored as the spec says and recorded in ``SSEDecoder.issues``. Only misuse
(a non-bytes chunk, ``feed()`` after ``close()``) raises.

Memory is bounded: a line or an event's data over ``max_event_bytes`` records an
``event-too-large`` issue and stops the decoder (``stopped``); messages completed earlier in
that same read are still returned, and every later read returns ``[]``.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from typing import Final, Literal

DEFAULT_MAX_EVENT_BYTES: Final = 1024 * 1024
MAX_ISSUES: Final = 100
_MAX_RETRY_DIGITS: Final = 15
_BOM: Final = "\ufeff"
_REPLACEMENT: Final = "\ufffd"
_ENCODED_REPLACEMENT: Final = _REPLACEMENT.encode()

IssueKind = Literal[
    "invalid-utf8",  # bytes that are not UTF-8 were decoded as U+FFFD
    "invalid-id",  # an `id` value containing U+0000 NULL was ignored
    "invalid-retry",  # a `retry` value that is not all ASCII digits (or absurdly long) was ignored
    "unknown-field",  # a field other than event/data/id/retry was ignored
    "event-too-large",  # a line or an event's data exceeded max_event_bytes: decoding stopped
    "unfinished-frame",  # the stream ended inside a frame, which was discarded
]


@dataclass(frozen=True, slots=True)
class SSEMessage:
    """One dispatched event: type, data and the last event ID in effect."""

    event: str
    data: str
    id: str


@dataclass(frozen=True, slots=True)
class DecoderIssue:
    """Malformed input that the decoder ignored (or stopped on)."""

    kind: IssueKind
    detail: str


class SSEDecoder:
    """Turn event-stream reads into messages: ``feed(bytes)`` per read, ``close()`` at the end."""

    def __init__(self, *, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> None:
        if max_event_bytes < 1:
            raise ValueError(f"max_event_bytes must be positive, got {max_event_bytes}")
        self.max_event_bytes = max_event_bytes
        self.retry: int | None = None  # the reconnection time in ms, from the last valid `retry`
        self.last_event_id = ""  # the spec's "last event ID string", updated at each dispatch
        self.comment_count = 0  # comment lines seen (keepalives): liveness, never content
        self.issues: list[DecoderIssue] = []
        self.issues_dropped = 0  # issues beyond MAX_ISSUES, counted but not kept
        self.stopped = False  # True once an event was too large: all further input is ignored
        self.closed = False
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._raw_tail = b""  # the last two bytes fed, to find U+FFFD encoded across reads
        self._at_stream_start = True
        self._skip_lf = False  # the previous read ended in CR: an LF starting this one is its pair
        self._line_pieces: list[str] = []  # the unfinished line, one piece per read
        self._line_size = 0  # its size in UTF-8 bytes
        self._data: list[str] = []  # the data buffer, one item per `data` line
        self._data_size = 0  # its size in UTF-8 bytes once joined with LF
        self._event_type = ""  # the event type buffer
        self._id_buffer = ""  # the last event ID buffer
        self._frame_open = False  # a field line arrived since the last dispatch

    def feed(self, chunk: bytes | bytearray | memoryview) -> list[SSEMessage]:
        """Decode one read; return the messages it dispatched (``[]`` once stopped)."""
        if self.closed:
            raise RuntimeError("SSEDecoder.feed() called after close()")
        if not isinstance(chunk, bytes | bytearray | memoryview):
            raise TypeError(f"SSEDecoder.feed() expects bytes, got {type(chunk).__name__}")
        if self.stopped:
            return []
        raw = bytes(chunk)
        text = self._utf8.decode(raw)
        self._note_invalid_utf8(raw, text)
        return self._feed_text(text)

    def close(self) -> list[SSEMessage]:
        """End of stream: discard an unfinished frame. Always ``[]``; idempotent."""
        # NOTE: only an empty line dispatches and every line end was handled by feed() (a
        # trailing CR ends its line at once), so the end of the stream can never dispatch.
        if self.closed:
            return []
        self.closed = True
        if self.stopped:
            return []
        text = self._utf8.decode(b"", final=True)
        self._note_invalid_utf8(b"", text)
        if text or self._line_size or self._frame_open:
            self._report("unfinished-frame", "the stream ended before the frame's empty line")
        self._line_pieces.clear()
        self._data.clear()
        return []

    def _note_invalid_utf8(self, raw: bytes, text: str) -> None:
        # NOTE: errors="replace" hides which U+FFFD were real input: every literal EF BF BD
        # decodes in the read that completes it, so the excess over those is invalid bytes.
        tail = self._raw_tail
        self._raw_tail = (tail + raw[-2:])[-2:]
        if _REPLACEMENT in text:
            invalid = text.count(_REPLACEMENT) - (tail + raw).count(_ENCODED_REPLACEMENT)
            if invalid:
                self._report("invalid-utf8", f"{invalid} invalid sequence(s) became U+FFFD")

    def _feed_text(self, text: str) -> list[SSEMessage]:
        """Split decoded text into lines and process every complete one."""
        if not text:
            return []
        if self._at_stream_start:
            # "One leading U+FEFF BYTE ORDER MARK character must be ignored if any are present."
            self._at_stream_start = False
            text = text.removeprefix(_BOM)
        if self._skip_lf:
            self._skip_lf = False
            text = text.removeprefix("\n")
        if "\r" in text:
            # "Lines must be separated by either a CRLF pair, a single LF, or a single CR."
            # NOTE: a CR ending this read ends its line now (no waiting for the next read);
            # _skip_lf drops an LF that starts the next read, so CR LF stays one line end.
            self._skip_lf = text.endswith("\r")
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        *complete, unfinished = text.split("\n")
        messages: list[SSEMessage] = []
        surely_small = self.max_event_bytes // 4  # NOTE: a code point is at most 4 UTF-8 bytes
        for piece in complete:
            if self._line_pieces or len(piece) > surely_small:
                line = self._finish_line(piece)
                if line is None:
                    return messages
            else:
                line = piece  # NOTE: the common case: a whole line in one read, well in bounds
            self._process_line(line, messages)
            if self.stopped:
                return messages
        self._hold(unfinished)
        return messages

    def _finish_line(self, piece: str) -> str | None:
        """Join the held pieces with the last one; ``None`` if the line is too large."""
        size = self._line_size + _utf8_size(piece)
        self._line_pieces.append(piece)
        line = "".join(self._line_pieces)
        self._line_pieces.clear()
        self._line_size = 0
        if size > self.max_event_bytes:
            self._stop(f"a line of {size} bytes")
            return None
        return line

    def _hold(self, piece: str) -> None:
        """Keep the unfinished end of a read; stop if the line outgrows the limit."""
        # NOTE: pieces plus a running size, never a re-join per read: one 8 MiB line fed in
        # 16-byte reads stays linear. Sizes count UTF-8 bytes (as sent), not code points.
        if piece:
            self._line_pieces.append(piece)
            self._line_size += _utf8_size(piece)
            if self._line_size > self.max_event_bytes:
                self._stop(f"an unfinished line of over {self._line_size} bytes")

    def _process_line(self, line: str, messages: list[SSEMessage]) -> None:
        """Apply one line: dispatch, comment, or field (the spec's four cases)."""
        # "If the line is empty (a blank line): Dispatch the event."
        if not line:
            self._dispatch(messages)
        # "If the line starts with a U+003A COLON character (:): Ignore the line."
        elif line[0] == ":":
            self.comment_count += 1
        else:
            # "If the line contains a U+003A COLON character (:)": the field is what precedes
            # the first colon, the value what follows it, minus one leading U+0020 SPACE.
            # "Otherwise, the string is not empty but does not contain a U+003A COLON
            # character (:)": the whole line is the field name and the value is empty.
            field, colon, value = line.partition(":")
            if colon:
                value = value.removeprefix(" ")
            self._frame_open = True
            self._process_field(field, value)

    def _process_field(self, field: str, value: str) -> None:
        """The spec's "process the field" steps; field names are case-sensitive."""
        match field:
            case "event":
                self._event_type = value
            case "data":
                self._append_data(value)
            case "id":
                # "If the field value does not contain U+0000 NULL, then set the last event
                # ID buffer to the field value. Otherwise, ignore the field."
                if "\0" in value:
                    self._report("invalid-id", f"id {_excerpt(value)} contains U+0000 NULL")
                else:
                    self._id_buffer = value
            case "retry":
                self._set_retry(value)
            case _:
                self._report("unknown-field", f"field {_excerpt(field)} ignored")

    def _append_data(self, value: str) -> None:
        """Append the value to the data buffer, unless the event would be too large."""
        self._data_size += _utf8_size(value) + (1 if self._data else 0)
        if self._data_size > self.max_event_bytes:
            self._stop(f"event data of over {self._data_size} bytes")
        else:
            self._data.append(value)

    def _set_retry(self, value: str) -> None:
        """Set the reconnection time if the value "consists of only ASCII digits"."""
        if not (value.isascii() and value.isdigit()):
            self._report("invalid-retry", f"retry {_excerpt(value)} is not all ASCII digits")
        elif len(value.lstrip("0")) > _MAX_RETRY_DIGITS:
            # NOTE: over 10**15 ms (31,000 years) is no real delay; refusing it also keeps
            # int() below CPython's 4300-digit limit, which would raise.
            self._report("invalid-retry", f"retry of {len(value)} digits is out of range")
        else:
            self.retry = int(value)

    def _dispatch(self, messages: list[SSEMessage]) -> None:
        """The spec's "dispatch the event" steps."""
        # 1. "Set the last event ID string of the event source to the value of the last
        # event ID buffer. The buffer does not get reset."
        self.last_event_id = self._id_buffer
        data, event_type = self._data, self._event_type
        self._data, self._data_size, self._event_type, self._frame_open = [], 0, "", False
        # 2. "If the data buffer is an empty string, set the data buffer and the event type
        # buffer to the empty string and return." (No `data` line at all: `data:` alone
        # makes the buffer "\n", which dispatches data "".)
        if not data:
            return
        # 3-4. Joining with LF is appending value + LF per line and removing the last LF;
        # an empty event type buffer means the type "message".
        event = SSEMessage(event=event_type or "message", data="\n".join(data), id=self._id_buffer)
        messages.append(event)

    def _stop(self, what: str) -> None:
        """Record event-too-large, drop the buffers and ignore all further input."""
        self._report("event-too-large", f"{what} exceeds max_event_bytes={self.max_event_bytes}")
        self.stopped = True
        self._line_pieces.clear()
        self._line_size = 0
        self._data = []
        self._data_size = 0
        self._event_type = ""

    def _report(self, kind: IssueKind, detail: str) -> None:
        # NOTE: capped, so a server sending endless unknown fields cannot grow memory; the
        # two kinds that can occur at most once per stream are always kept.
        if len(self.issues) < MAX_ISSUES or kind in ("event-too-large", "unfinished-frame"):
            self.issues.append(DecoderIssue(kind, detail))
        else:
            self.issues_dropped += 1


def _utf8_size(text: str) -> int:
    """Size of ``text`` in UTF-8 bytes (cheap for ASCII, the common case)."""
    return len(text) if text.isascii() else len(text.encode())


def _excerpt(text: str) -> str:
    """A short repr for issue details (a field name can be a megabyte long)."""
    return repr(text if len(text) <= 40 else text[:40] + "…")
