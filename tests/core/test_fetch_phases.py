"""Every phase of a url fetch is bounded by its setting, whatever the origin sends: the
connect (``connect_timeout``), the answer's status line and headers, interim 1xx answers
included (``read_timeout``), each read of the body (``read_timeout``). Origins on
127.0.0.1 that send raw bytes (tests/core/rawhttp.py)."""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

import pytest

from stowage import errors
from stowage.core import fetch, urlguard
from tests.core.rawhttp import raw_origin
from tests.core.test_fetch import make_fetcher

READ = 0.4  # the read timeout of these tests, seconds
#: Far past READ: without a bound of their own the phases wait for this (total_timeout).
TOTAL = 60.0
OK = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 11\r\n\r\nhello world"


def interim(rng: random.Random) -> bytes:
    """A 1xx answer (not 101, which switches protocols) with 0-3 headers."""
    code = rng.choice([100, 102, 103, *range(104, 200)])
    headers = "".join(f"X-Hint-{i}: {rng.randrange(10**6)}\r\n" for i in range(rng.randrange(4)))
    return f"HTTP/1.1 {code} Interim\r\n{headers}\r\n".encode()


async def timed_open(fetcher: fetch.Fetcher, url: str) -> tuple[BaseException | None, float]:
    """The fetch's outcome and how long it took; stopped at 10 s (then it was unbounded)."""
    started = time.monotonic()
    try:
        async with asyncio.timeout(10):
            fetched = await fetcher.open(url)
            async for _ in fetched.chunks:
                pass
    except (errors.StowageError, TimeoutError) as exc:
        return exc, time.monotonic() - started
    return None, time.monotonic() - started


@pytest.mark.parametrize("seed", range(4))
async def test_interim_answers_then_silence_hit_the_read_timeout(seed: int) -> None:
    """``100 Continue`` (or any 1xx, with or without headers) then nothing: 504 once the
    origin has been silent for ``read_timeout``, and the fetch's slot is free again."""
    rng = random.Random(seed)
    answers = [(0.0, interim(rng)) for _ in range(rng.randint(1, 3))]
    fetcher = make_fetcher(allow_private=True, read_timeout=READ, total_timeout=TOTAL)
    fetcher_1 = make_fetcher(allow_private=True, read_timeout=READ, max_concurrent=1)
    try:
        async with raw_origin(answers) as origin:
            outcome, took = await timed_open(fetcher, origin.url())
            assert isinstance(outcome, errors.UpstreamTimeout), (answers, outcome)
            assert READ * 0.9 <= took < READ + 2.0, took
            outcome, _ = await timed_open(fetcher_1, origin.url())
            assert isinstance(outcome, errors.UpstreamTimeout)
        async with raw_origin([(0.0, OK)]) as good:  # the one slot was given back
            fetched = await asyncio.wait_for(fetcher_1.open(good.url()), 5)
            assert b"".join([c async for c in fetched.chunks]) == b"hello world"
    finally:
        await fetcher.close()
        await fetcher_1.close()


@pytest.mark.parametrize("seed", range(3))
async def test_interim_answers_before_the_file_still_work(seed: int) -> None:
    """103 Early Hints (or another 1xx) before the 200, all within ``read_timeout``."""
    rng = random.Random(seed)
    read = 2.0  # the four pauses come to 0.4 s at most: room on a busy machine
    steps = [(rng.uniform(0, 0.1), interim(rng)) for _ in range(rng.randint(1, 3))]
    steps.append((rng.uniform(0, 0.1), OK))
    fetcher = make_fetcher(allow_private=True, read_timeout=read, total_timeout=TOTAL)
    try:
        async with raw_origin(steps) as origin:
            fetched = await asyncio.wait_for(fetcher.open(origin.url()), 5)
            assert fetched.content_type == "text/plain" and fetched.length == 11
            assert b"".join([c async for c in fetched.chunks]) == b"hello world"
    finally:
        await fetcher.close()


@pytest.mark.parametrize(
    "head",
    [b"", b"HTTP/1.1 100 Continue\r\n\r\n", b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"],
    ids=["at once", "after 100", "after 103"],
)
async def test_headers_trickled_a_byte_at_a_time_end_within_the_read_timeout(head: bytes) -> None:
    """Each byte comes sooner than ``read_timeout`` after the last, but the headers never
    end: the answer's head must be complete ``read_timeout`` after the request was sent."""
    steps = [(0.0, head + b"HTTP/1.1 200 OK\r\nX-Slow: ")]
    fetcher = make_fetcher(allow_private=True, read_timeout=READ, total_timeout=TOTAL)
    try:
        async with raw_origin(steps, forever=(READ / 5, b"a")) as origin:
            outcome, took = await timed_open(fetcher, origin.url())
        assert isinstance(outcome, errors.UpstreamTimeout), outcome
        assert took < READ + 2.0, took
    finally:
        await fetcher.close()


async def test_a_stalled_body_after_an_interim_answer_hits_the_read_timeout() -> None:
    steps = [
        (0.0, b"HTTP/1.1 100 Continue\r\n\r\n"),
        (READ / 4, b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + b"a" * 10),
    ]
    fetcher = make_fetcher(allow_private=True, read_timeout=READ, total_timeout=TOTAL)
    try:
        async with raw_origin(steps) as origin:
            fetched = await asyncio.wait_for(fetcher.open(origin.url()), 5)
            got = b""
            with pytest.raises(errors.UpstreamTimeout):
                async with asyncio.timeout(10):
                    async for chunk in fetched.chunks:
                        got += chunk
            assert got == b"a" * 10
    finally:
        await fetcher.close()


async def test_a_name_that_never_resolves_hits_the_connect_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The connect phase (resolving the name included) has ``connect_timeout``: aiohttp's
    ``sock_connect`` alone counts only the socket's connect."""

    async def never(*_: Any, **__: Any) -> Any:
        await asyncio.sleep(3600)

    monkeypatch.setattr(urlguard.GuardedResolver, "resolve", never)
    fetcher = make_fetcher(allow_private=True, connect_timeout=READ, total_timeout=TOTAL)
    try:
        outcome, took = await timed_open(fetcher, "http://slow-dns.example:8080/file")
        assert isinstance(outcome, errors.UpstreamTimeout), outcome
        assert READ * 0.9 <= took < READ + 2.0, took
    finally:
        await fetcher.close()


async def test_redirects_together_end_within_the_total_timeout() -> None:
    """Each hop answers within its own bounds (a 100 Continue, then a redirect to itself
    a little later), but the hops together may not pass ``total_timeout``."""
    total = 1.0
    steps = [
        (0.0, b"HTTP/1.1 100 Continue\r\n\r\n"),
        (READ / 2, b"HTTP/1.1 302 Found\r\nLocation: /file\r\nContent-Length: 0\r\n"),
        (0.0, b"Connection: close\r\n\r\n"),
    ]
    fetcher = make_fetcher(
        allow_private=True, read_timeout=READ, total_timeout=total, max_redirects=100
    )
    try:
        async with raw_origin(steps) as origin:
            outcome, took = await timed_open(fetcher, origin.url())
            assert isinstance(outcome, errors.UpstreamTimeout), outcome
            assert total * 0.9 <= took < total + 2.0, took
            assert origin.requests > 1
    finally:
        await fetcher.close()
