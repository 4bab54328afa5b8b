"""An immutable text value that grows by streamed deltas without quadratic copying.

A frozen state cannot hold ``old + delta`` cheaply: every delta would copy the whole answer,
so 100,000 deltas would copy gigabytes. :class:`Text` shares one append-only list of pieces
between its versions; each version sees only its first ``count`` pieces, so none ever
changes. ``str()`` joins lazily and caches the joined prefix on the shared buffer, so reading
the text once per animation frame costs one join per frame, not one per delta.
"""

from __future__ import annotations

from bisect import bisect_right
from itertools import accumulate


class _Buffer:
    """Pieces shared by the versions of one text, their running lengths, and the longest
    prefix joined so far."""

    __slots__ = ("ends", "joined", "joined_count", "pieces")

    def __init__(self, pieces: list[str]) -> None:
        self.pieces = pieces
        self.ends = list(accumulate(len(piece) for piece in pieces))
        self.joined = ""
        self.joined_count = 0


class Text:
    """An immutable string built by appending deltas in amortised O(len(delta))."""

    __slots__ = ("_buffer", "_count")

    def __init__(self, text: str = "") -> None:
        self._buffer = _Buffer([text] if text else [])
        self._count = len(self._buffer.pieces)

    @classmethod
    def _version(cls, buffer: _Buffer, count: int) -> Text:
        text = cls.__new__(cls)
        text._buffer = buffer
        text._count = count
        return text

    def append(self, delta: str) -> Text:
        """A new text with ``delta`` at the end; this one is unchanged."""
        if not delta:
            return self
        buffer = self._buffer
        if len(buffer.pieces) != self._count:
            # NOTE: a newer version already appended here (a branch): copy our prefix first.
            buffer = _Buffer(buffer.pieces[: self._count])
        buffer.pieces.append(delta)
        buffer.ends.append((buffer.ends[-1] if buffer.ends else 0) + len(delta))
        return Text._version(buffer, self._count + 1)

    def extends(self, other: Text) -> bool:
        """Whether this text is ``other`` with deltas appended (O(1): the same pieces)."""
        return self._buffer is other._buffer and other._count <= self._count

    def since(self, offset: int) -> str:
        """``str(self)[offset:]`` joining only the pieces after ``offset`` (a growing tail is
        read without building the whole text)."""
        ends, count = self._buffer.ends, self._count
        if offset <= 0:
            return str(self)
        first = bisect_right(ends, offset, 0, count)
        if first >= count:
            return ""
        start = ends[first - 1] if first else 0
        pieces = self._buffer.pieces
        return "".join(pieces[first:count])[offset - start :]

    def __str__(self) -> str:
        buffer, count = self._buffer, self._count
        if buffer.joined_count > count:  # an older version: rare, join without caching
            return "".join(buffer.pieces[:count])
        if buffer.joined_count < count:
            buffer.joined += "".join(buffer.pieces[buffer.joined_count : count])
            buffer.joined_count = count
        return buffer.joined

    def __len__(self) -> int:
        return self._buffer.ends[self._count - 1] if self._count else 0

    def __bool__(self) -> bool:
        return self._count > 0

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Text):
            return self is other or str(self) == str(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(str(self))

    def __repr__(self) -> str:
        return f"Text({str(self)!r})"
