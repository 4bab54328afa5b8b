"""Notices that leave on their own: a fallback toast (a model or provider change) belongs to
its chat (the view shows it only there) and goes after ``notice_ms``, unless a newer notice
took its place meanwhile (that one gets its own time)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from app.state.state import FallbackNotice, State

Sleep = Callable[[float], Awaitable[None]]


class NoticeTimer:
    """Dismisses each fallback notice ``notice_ms`` after it appeared (a store listener)."""

    def __init__(
        self,
        get_state: Callable[[], State],
        dismiss: Callable[[], None],
        notice_ms: int,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self._get_state = get_state
        self._dismiss = dismiss
        self._notice_s = notice_ms / 1000
        self._sleep = sleep
        self._tasks: set[asyncio.Task[None]] = set()

    def on_change(self, state: State, previous: State) -> None:
        """A new notice appeared: time it."""
        notice = state.fallback_notice
        if notice is not None and notice is not previous.fallback_notice:
            task = asyncio.ensure_future(self._expire(notice))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _expire(self, notice: FallbackNotice) -> None:
        await self._sleep(self._notice_s)
        if self._get_state().fallback_notice is notice:
            self._dismiss()

    def close(self) -> None:
        """Leaving the page: no timer is left."""
        for task in self._tasks:
            task.cancel()
