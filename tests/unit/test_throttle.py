"""The sign-in throttle: free attempts, then a wait that doubles, capped, and forgotten."""

from __future__ import annotations

import dataclasses

import pytest

from server.config.limits import Limits
from server.http.throttle import Throttle, attempt_keys

LIMITS = dataclasses.replace(
    Limits(),
    free_attempts_per_account=2,
    free_attempts_per_client=5,
    attempt_delay_s=1.0,
    attempt_delay_max_s=8.0,
    attempt_memory_s=100.0,
)
KEYS = attempt_keys("Ana", "10.0.0.1")


def _after(failures: int) -> int:
    throttle = Throttle(LIMITS)
    for _ in range(failures):
        throttle.failed(KEYS, 0.0)
    return throttle.wait_s(KEYS, 0.0)


@pytest.mark.parametrize(
    ("failures", "wait"),
    [
        pytest.param(0, 0, id="nothing-failed"),
        pytest.param(1, 0, id="free-attempts-cost-nothing"),
        pytest.param(2, 1, id="first-wait-once-the-free-ones-are-spent"),
        pytest.param(3, 2, id="doubles"),
        pytest.param(4, 4, id="doubles-again"),
        pytest.param(9, 8, id="capped"),
    ],
)
def test_wait_grows_with_failures(failures: int, wait: int) -> None:
    assert _after(failures) == wait


def test_wait_runs_down_with_time() -> None:
    throttle = Throttle(LIMITS)
    for _ in range(4):
        throttle.failed(KEYS, 10.0)
    assert [throttle.wait_s(KEYS, t) for t in (10.0, 12.5, 14.0)] == [4, 2, 0]


def test_old_failures_are_forgotten() -> None:
    throttle = Throttle(LIMITS)
    for _ in range(5):
        throttle.failed(KEYS, 0.0)
    assert throttle.wait_s(KEYS, 101.0) == 0
    throttle.failed(KEYS, 101.0)
    assert throttle.wait_s(KEYS, 101.0) == 0, "counting starts again"


def test_success_clears_the_account_and_takes_back_one_client_failure() -> None:
    throttle = Throttle(LIMITS)
    for _ in range(5):
        throttle.failed(KEYS, 0.0)
    throttle.succeeded(KEYS)
    assert throttle.wait_s(KEYS[:1], 0.0) == 0
    assert throttle.wait_s(KEYS[1:], 0.0) == 0, "4 failures left: within the client's free ones"


def test_names_are_one_account_whatever_their_case() -> None:
    assert attempt_keys("Ana", None)[0] == attempt_keys("ana", None)[0]


def test_attempt_keys_kept() -> None:
    """Memory stays bounded however many names are tried: the least recent keys go first."""
    throttle = Throttle(dataclasses.replace(LIMITS, attempt_keys_kept=4))
    for name in ("a", "b", "c"):
        for _ in range(3):
            throttle.failed(attempt_keys(name, name), 0.0)
    assert throttle.wait_s(attempt_keys("a", None)[:1], 0.0) == 0, "forgotten"
    assert throttle.wait_s(attempt_keys("c", None)[:1], 0.0) == 2, "kept"
