"""``from app.sse import SSEDecoder``: the decoder's contract path (SPEC §2).

The decoder lives in :mod:`app.wire.sse`; this module keeps the import path external
conformance tests use.
"""

from app.wire.sse import DecoderIssue, SSEDecoder, SSEMessage

__all__ = ["DecoderIssue", "SSEDecoder", "SSEMessage"]
