"""Readers of runs' events (``GET /api/runs/{runId}/events``), counted per user and per run.

A reader holds a connection for as long as its run goes on, so they are capped as sends are:
past ``readers_per_user`` (all of a user's runs) or ``readers_per_run`` (one run, every user's
tab), 429 ``too_many_readers`` with ``Retry-After``, before the stream opens. Counted per
process (a cluster's proxy spreads readers over its workers).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

from server.config.limits import Limits
from server.contract.errors import ApiError

RETRY_AFTER_S = 5


class Readers:
    """How many readers each user and each run has now."""

    def __init__(self, limits: Limits) -> None:
        self._limits = limits
        self._per_user: Counter[str] = Counter()
        self._per_run: Counter[str] = Counter()

    def _refuse(self, words: str) -> ApiError:
        return ApiError(429, "too_many_readers", words, {"Retry-After": str(RETRY_AFTER_S)})

    @contextmanager
    def reading(self, user_id: str, run_key: str) -> Iterator[None]:
        """One reader of ``run_key`` by ``user_id`` for the block; 429 when none is left."""
        if self._per_user[user_id] >= self._limits.readers_per_user:
            raise self._refuse("too many answers are being read at once; close some")
        if self._per_run[run_key] >= self._limits.readers_per_run:
            raise self._refuse("this answer is being read in too many places; close some")
        self._per_user[user_id] += 1
        self._per_run[run_key] += 1
        try:
            yield
        finally:
            _release(self._per_user, user_id)
            _release(self._per_run, run_key)

    def count(self, user_id: str) -> int:
        """The user's readers now."""
        return self._per_user[user_id]


def _release(counts: Counter[str], key: str) -> None:
    counts[key] -= 1
    if counts[key] <= 0:
        del counts[key]  # NOTE: no key is kept once its readers are gone
