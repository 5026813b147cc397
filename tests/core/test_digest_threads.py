"""Digest hashes large chunks in a thread, pipelined with the stream: same result, in order."""

from __future__ import annotations

import hashlib
import os
from collections.abc import AsyncIterator

from stowage.core import streams


async def _chunks(parts: list[bytes]) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


async def test_large_and_small_chunks_hash_in_order() -> None:
    sizes = [256 * 1024, 10, 64 * 1024, 64 * 1024 - 1, 1024 * 1024, 0, 300 * 1024]
    parts = [os.urandom(n) for n in sizes * 3]
    digest = streams.Digest()
    out = [chunk async for chunk in digest.tap(_chunks(parts))]
    whole = b"".join(parts)
    assert out == parts
    assert digest.size == len(whole)
    assert digest.sha256 == hashlib.sha256(whole).hexdigest()


async def test_a_stream_that_fails_leaves_no_pending_error() -> None:
    async def broken() -> AsyncIterator[bytes]:
        yield os.urandom(512 * 1024)
        raise OSError("body broke off")

    digest = streams.Digest()
    got = []
    try:
        async for chunk in digest.tap(broken()):
            got.append(chunk)
    except OSError:
        pass
    assert len(got) == 1 and digest.size == 512 * 1024
