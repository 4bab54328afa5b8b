"""A minimal observable store (after zustand's ``vanilla.ts``): state, dispatch, subscribe."""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import Generic, TypeVar

S = TypeVar("S")
A = TypeVar("A")
Listener = Callable[[S, S], None]


def print_error(error: BaseException) -> None:
    """The default error report: the traceback on stderr (the browser console)."""
    traceback.print_exception(error)


class Store(Generic[S, A]):
    """Holds the state; ``dispatch`` runs the reducer and tells listeners ``(state, previous)``."""

    def __init__(
        self,
        initial: S,
        reducer: Callable[[S, A], S],
        on_listener_error: Callable[[Exception], None] = print_error,
    ) -> None:
        self._state = initial
        self._reducer = reducer
        self._listeners: list[Listener[S]] = []
        self._on_listener_error = on_listener_error

    def get_state(self) -> S:
        """The current state."""
        return self._state

    def dispatch(self, action: A) -> S:
        """Apply ``action``; listeners are called only if the state changed."""
        previous = self._state
        self._state = state = self._reducer(previous, action)
        if state is not previous:
            for listener in tuple(self._listeners):
                try:
                    listener(state, previous)
                except Exception as error:  # NOTE: a broken view must not stop the stream
                    self._on_listener_error(error)
        return state

    def subscribe(self, listener: Listener[S]) -> Callable[[], None]:
        """Call ``listener(state, previous)`` on every change; returns the unsubscribe function."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe
