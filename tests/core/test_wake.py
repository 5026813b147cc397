"""A background loop's wake-up (``core/wake.py``) never swallows a cancel.

A CI run hung for good in the webhook worker's close: on Python 3.11, ``asyncio.wait_for``
drops a cancel that arrives in the turn of the event loop where the awaited event
completes (CPython gh-86296). Each case here wakes the wait and cancels it some turns
later, covering the turn where the two meet."""

from __future__ import annotations

import asyncio

import pytest

from stowage.core.wake import Wake

TURNS = range(8)


@pytest.mark.parametrize("turns", TURNS)
async def test_a_cancel_meeting_a_wake_ends_the_wait(turns: int) -> None:
    wake = Wake()
    waiting = asyncio.create_task(wake.wait(30))
    await asyncio.sleep(0)
    wake.set()
    for _ in range(turns):
        await asyncio.sleep(0)
    if waiting.cancel():  # not yet done: the cancel must end it
        with pytest.raises(asyncio.CancelledError):
            await waiting
    else:
        assert waiting.result() is None  # it ended first, woken


async def test_the_wait_ends_on_its_interval_and_on_a_wake() -> None:
    wake = Wake()
    async with asyncio.timeout(2):
        await wake.wait(0.01)  # nobody wakes it: the interval
    later = asyncio.get_running_loop().call_later(0.01, wake.set)
    async with asyncio.timeout(2):
        await wake.wait(30)
    later.cancel()
