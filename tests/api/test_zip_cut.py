"""A streamed zip whose later file cannot be read once the archive has begun (generated
inputs, seed 9596): the connection is cut, so the client sees a truncated body. The
error answer was written into the 200's chunked body (a whole ``HTTP/1.1 404`` with
its headers), the body then ended with its last chunk as if whole, and the connection
was kept for the next request."""

from __future__ import annotations

import asyncio
import random

from tests.api.harness import Harness


async def test_a_zip_whose_second_file_is_gone_is_cut_not_answered_twice(
    harness: Harness,
) -> None:
    rnd = random.Random(9596)
    key = harness.open_app.api_key
    first = await harness.store(rnd.randbytes(300_000), filename="a.bin")
    second = await harness.store(rnd.randbytes(1_000), filename="b.bin")
    # the row is there (authorised, within the limits), its object gone: a delete racing
    # the archive, deterministically
    harness.object_path(harness.open_app, second["key"]).unlink()
    url = harness.cdn.make_url("/")
    reader, writer = await asyncio.open_connection(url.host, url.port)
    path = f"/zip/[{first['handle']},{second['handle']}]?key={key}"
    writer.write(f"GET {path} HTTP/1.1\r\nHost: cdn\r\n\r\n".encode())
    await writer.drain()
    sent = await asyncio.wait_for(reader.read(), timeout=30)  # to the connection's end
    writer.close()
    assert sent.startswith(b"HTTP/1.1 200 "), sent[:200]
    assert sent.count(b"HTTP/1.1 ") == 1, sent[-400:]  # no second answer in the body
    assert not sent.endswith(b"\r\n0\r\n\r\n")  # not ended as if the archive were whole
