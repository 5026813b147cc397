"""The wake-up of a background loop (webhook deliveries, edge purges, video jobs): ``wait``
returns when ``set`` was called or when the poll interval has passed, whichever is first.

Built on ``asyncio.timeout``, never ``asyncio.wait_for``: on Python 3.11, ``wait_for``
swallows a cancel that arrives while the awaited event completes (CPython gh-86296, fixed
in 3.12). A loop whose cancel was swallowed runs on, and the shutdown that awaits it
waits forever: a CI run hung in the webhook worker's close, after a wake and the close
met in one turn of the event loop. ``tests/test_structure.py`` keeps ``wait_for`` out.
"""

from __future__ import annotations

import asyncio
import contextlib


class Wake:
    def __init__(self) -> None:
        self._event = asyncio.Event()

    def set(self) -> None:
        self._event.set()

    async def wait(self, seconds: float) -> None:
        """Until ``set`` or ``seconds``; a cancel always ends it with ``CancelledError``."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self._event.wait()
        self._event.clear()
