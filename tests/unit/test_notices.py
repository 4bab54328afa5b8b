"""Notices that leave on their own (app/run/notices.py)."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from app.run.notices import NoticeTimer
from app.state.state import FallbackNotice, State


def notice(seq: int) -> FallbackNotice:
    return FallbackNotice("model_changed", "Another model answers now", "c1", "run_1", seq)


class Clock:
    """A sleep that waits until the test lets time pass."""

    def __init__(self) -> None:
        self.passed = asyncio.Event()

    async def sleep(self, _seconds: float) -> None:
        await self.passed.wait()


async def test_a_notice_leaves_after_its_time_unless_a_newer_one_replaced_it() -> None:
    state = [State()]
    dismissed: list[int] = []
    clock = Clock()

    def dismiss() -> None:
        shown = state[0].fallback_notice
        dismissed.append(0 if shown is None else shown.seq)
        state[0] = replace(state[0], fallback_notice=None)

    timer = NoticeTimer(lambda: state[0], dismiss, 8_000, clock.sleep)
    first = replace(State(), fallback_notice=notice(1))
    timer.on_change(first, State())
    second = replace(State(), fallback_notice=notice(2))
    timer.on_change(second, first)
    state[0] = second

    clock.passed.set()
    for _ in range(5):
        await asyncio.sleep(0)

    assert dismissed == [2], "the first timer left the newer notice; the second dismissed it"
    assert state[0].fallback_notice is None
    timer.close()
