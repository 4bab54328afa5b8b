"""Sign-in throttling: each wrong password makes the next attempt wait longer.

Two keys are throttled at once: the account named (a guesser of one password, from anywhere)
and the client's address (a guesser of many accounts; loopback users share one address, so its
free attempts are many more). Past a key's free failures the next attempt must wait
``attempt_delay_s``, doubling with every further failure up to ``attempt_delay_max_s``: after
N free failures, attempt N+1 waits. An attempt made before its wait is over is refused with
429 ``too_many_attempts`` and ``Retry-After`` without the password being checked at all. A
right password clears the account's failures (not the address's).

# NOTE: an attempt counts as failed from the moment it is accepted (``failed`` before the
# check, ``succeeded`` takes it back), so concurrent guesses cannot all slip in before the
# first of them is found wrong. Pure: the clock is passed in. Kept per process.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass, field

from server.config.limits import Limits


@dataclass(slots=True)
class _Failures:
    count: int = 0
    last_at: float = 0.0


@dataclass(slots=True)
class Throttle:
    """Failures per key (``account:NAME``, ``client:ADDRESS``) and the waits they impose."""

    limits: Limits
    _failures: OrderedDict[str, _Failures] = field(default_factory=OrderedDict)

    def _free(self, key: str) -> int:
        if key.startswith("client:"):
            return self.limits.free_attempts_per_client
        return self.limits.free_attempts_per_account

    def _delay(self, key: str, count: int) -> float:
        over = count - self._free(key) + 1
        if over <= 0:
            return 0.0
        grown: float = self.limits.attempt_delay_s * 2.0 ** (over - 1)
        return min(grown, self.limits.attempt_delay_max_s)

    def wait_s(self, keys: tuple[str, ...], now: float) -> int:
        """Whole seconds before an attempt on ``keys`` is allowed (0: now)."""
        waits = [self._wait_one(key, now) for key in keys]
        return math.ceil(max(waits, default=0.0))

    def _wait_one(self, key: str, now: float) -> float:
        failures = self._failures.get(key)
        if failures is None:
            return 0.0
        if now - failures.last_at > self.limits.attempt_memory_s:
            del self._failures[key]
            return 0.0
        return max(0.0, failures.last_at + self._delay(key, failures.count) - now)

    def failed(self, keys: tuple[str, ...], now: float) -> None:
        """A wrong password was given for ``keys``."""
        for key in keys:
            failures = self._failures.setdefault(key, _Failures())
            failures.count += 1
            failures.last_at = now
            self._failures.move_to_end(key)
        while len(self._failures) > self.limits.attempt_keys_kept:
            self._failures.popitem(last=False)  # NOTE: bounded memory: the least recent goes

    def succeeded(self, keys: tuple[str, str]) -> None:
        """The right password: the account's failures are forgotten, and this attempt (counted
        as failed while it was checked) is taken back from the client's."""
        account, client = keys
        self._failures.pop(account, None)
        failures = self._failures.get(client)
        if failures is not None:
            failures.count = max(0, failures.count - 1)


def attempt_keys(name: str, address: str | None) -> tuple[str, str]:
    """The throttle keys of an attempt on account ``name`` from ``address``."""
    return f"account:{name.lower()}", f"client:{address or 'unknown'}"
