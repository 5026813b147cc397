"""Reading a body as aiohttp received it: every byte once, in order, and an end."""

from __future__ import annotations

import asyncio
from unittest import mock

from aiohttp.base_protocol import BaseProtocol
from aiohttp.streams import EMPTY_PAYLOAD, StreamReader

from stowage.http import bodies


async def collect(reader: StreamReader) -> list[bytes]:
    return [piece async for piece in bodies.pieces(reader)]


async def test_the_shared_empty_body_ends_however_often_it_is_read() -> None:
    for _ in range(3):
        assert await asyncio.wait_for(collect(EMPTY_PAYLOAD), 1) == []


async def test_pieces_pass_on_as_fed_with_chunk_ends_between() -> None:
    loop = asyncio.get_running_loop()
    protocol = mock.Mock(spec=BaseProtocol, _reading_paused=False)  # pause/resume only
    reader = StreamReader(protocol, 2**16, loop=loop)
    fed = [b"a" * 100_000, b"b", b"c" * 300_000]
    for piece in fed:
        reader.begin_http_chunk_receiving()
        reader.feed_data(piece)
        reader.end_http_chunk_receiving()
    reader.feed_eof()
    got = await asyncio.wait_for(collect(reader), 1)
    assert got == fed
    assert all(a is b for a, b in zip(got, fed, strict=True))  # no copies
