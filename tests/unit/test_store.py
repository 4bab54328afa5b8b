"""The minimal observable store."""

from __future__ import annotations

import pytest

from app.state.store import Store


def add(state: int, action: int) -> int:
    return state + action


def test_listeners_get_state_and_previous_only_on_change() -> None:
    store: Store[int, int] = Store(0, add)
    seen: list[tuple[int, int]] = []
    store.subscribe(lambda state, previous: seen.append((state, previous)))

    assert store.dispatch(2) == 2
    store.dispatch(0)  # no change: no call
    store.dispatch(3)

    assert seen == [(2, 0), (5, 2)]
    assert store.get_state() == 5


def test_unsubscribe_stops_calls_and_is_idempotent() -> None:
    store: Store[int, int] = Store(0, add)
    seen: list[int] = []
    unsubscribe = store.subscribe(lambda state, previous: seen.append(state))
    store.dispatch(1)
    unsubscribe()
    unsubscribe()
    store.dispatch(1)
    assert seen == [1]


def test_a_failing_listener_does_not_stop_the_others() -> None:
    errors: list[Exception] = []
    store: Store[int, int] = Store(0, add, errors.append)
    seen: list[int] = []

    def broken(state: int, previous: int) -> None:
        raise ValueError("boom")

    store.subscribe(broken)
    store.subscribe(lambda state, previous: seen.append(state))
    store.dispatch(1)

    assert seen == [1]
    assert [str(e) for e in errors] == ["boom"]


def test_the_default_error_handler_prints_the_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    store: Store[int, int] = Store(0, add)

    def broken(state: int, previous: int) -> None:
        raise ValueError("printed")

    store.subscribe(broken)
    store.dispatch(1)
    assert "ValueError: printed" in capsys.readouterr().err


def test_subscribing_during_a_notification_takes_effect_next_time() -> None:
    store: Store[int, int] = Store(0, add)
    late: list[int] = []

    def subscribe_another(state: int, previous: int) -> None:
        store.subscribe(lambda s, p: late.append(s))

    unsubscribe = store.subscribe(subscribe_another)
    store.dispatch(1)
    unsubscribe()
    store.dispatch(1)
    assert late == [2]
