"""Password hashes, made and checked off the event loop.

argon2 is memory-hard on purpose (tens of milliseconds of CPU per check): on the event loop,
a flood of sign-ins would stall every other request. Checks run in a small thread pool
(``password_workers`` threads; argon2's C code releases the GIL), at most ``password_queue``
waiting for a thread: more is 429 ``too_many_attempts``, so a flood queues bounded work.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from server.config.limits import Limits
from server.contract.errors import ApiError

_HASHER = PasswordHasher()
# NOTE: verified against when the name is unknown, so both failures take the same time.
_DUMMY_HASH = _HASHER.hash("not a password anyone has")


def hash_password(password: str) -> str:
    """An argon2id hash (memory-hard) of ``password``."""
    return _HASHER.hash(password)


def password_matches(stored: str | None, password: str) -> bool:
    """``password`` is the one ``stored`` hashes (never for an account with none)."""
    try:
        return _HASHER.verify(stored or _DUMMY_HASH, password) and stored is not None
    except (VerificationError, InvalidHashError):
        return False


class PasswordChecker:
    """A bounded pool of threads that verify passwords."""

    def __init__(self, limits: Limits) -> None:
        self._pool = ThreadPoolExecutor(limits.password_workers, "riacho-password")
        self._slots = asyncio.Semaphore(limits.password_workers + limits.password_queue)
        self._queue = limits.password_workers + limits.password_queue

    async def matches(self, stored: str | None, password: str) -> bool:
        """``password_matches`` on a pool thread; 429 when too many checks wait already."""
        if self._slots.locked():
            raise ApiError(
                429,
                "too_many_attempts",
                "too many sign-ins are being checked; try again in a moment",
                {"Retry-After": "1"},
            )
        async with self._slots:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self._pool, password_matches, stored, password)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
