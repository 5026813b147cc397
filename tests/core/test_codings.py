"""A fetched body's Content-Encoding undone as it streams (``core/codings``), on its own
and through the fetcher with an origin that compresses whatever was asked."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from hypothesis import given, settings
from hypothesis import strategies as st

from stowage import errors
from stowage.core import codings
from tests.core.test_fetch import make_fetcher


def _encode(data: bytes, coding: str) -> bytes:
    if coding in ("gzip", "x-gzip"):
        return gzip.compress(data)
    if coding == "deflate":
        return zlib.compress(data)
    packer = zlib.compressobj(wbits=-zlib.MAX_WBITS)  # "deflate" sent raw, as some do
    return packer.compress(data) + packer.flush()


async def _chunks(data: bytes, cuts: list[int]) -> AsyncIterator[bytes]:
    at = 0
    for cut in sorted(c % (len(data) + 1) for c in cuts):
        yield data[at:cut]
        at = cut
    yield data[at:]


async def _decode(data: bytes, header: str, cuts: list[int], limit: int) -> bytes:
    coding = codings.coding_of(header)
    return b"".join([c async for c in codings.decoded(_chunks(data, cuts), coding, limit)])


SENT = st.sampled_from(["gzip", "x-gzip", "deflate", "raw-deflate"])


@settings(max_examples=150, deadline=None)
@given(
    body=st.binary(max_size=3000) | st.builds(lambda n: b"a" * n, st.integers(0, 200_000)),
    sent=SENT,
    cuts=st.lists(st.integers(0, 10**6), max_size=6),
    limit=st.integers(1, 250_000),
)
async def test_a_compressed_body_is_read_as_the_file_within_the_limit(
    body: bytes, sent: str, cuts: list[int], limit: int
) -> None:
    header = "deflate" if sent == "raw-deflate" else sent.upper()
    encoded = _encode(body, sent)
    if len(body) > limit:
        with pytest.raises(errors.PayloadTooLarge):
            await _decode(encoded, header, cuts, limit)
    else:
        assert await _decode(encoded, header, cuts, limit) == body


@settings(max_examples=60, deadline=None)
@given(body=st.binary(min_size=1, max_size=3000), sent=SENT, cut=st.integers(0, 10**6))
async def test_a_cut_or_broken_stream_is_the_origins_failure(
    body: bytes, sent: str, cut: int
) -> None:
    encoded = _encode(body, sent)
    header = "deflate" if sent == "raw-deflate" else sent
    with pytest.raises(errors.UpstreamError):
        await _decode(encoded[: cut % len(encoded)], header, [], 10**6)
    with pytest.raises(errors.UpstreamError):
        await _decode(b"\x00not compressed at all" * 3, header, [], 10**6)


@pytest.mark.parametrize("header", ["br", "zstd", "compress", "gzip, gzip", "gzip, br", "x-y"])
def test_codings_that_are_not_read_are_refused(header: str) -> None:
    with pytest.raises(errors.UpstreamError, match="Content-Encoding"):
        codings.coding_of(header)


@pytest.mark.parametrize("header", [None, "", "identity", " Identity ", "identity, gzip"])
def test_identity_is_read_as_it_is(header: str | None) -> None:
    assert codings.coding_of(header) == ("gzip" if header and "gzip" in header else "identity")


PNG = bytes.fromhex("89504e470d0a1a0a") + b"\x00" * 64


async def test_the_fetcher_undoes_an_origins_gzip_and_refuses_brotli() -> None:
    async def answer(request: web.Request) -> web.Response:
        coding = request.match_info["coding"]
        body = gzip.compress(PNG) if coding == "gzip" else b"\x0b\x02\x80garbage"
        headers = {"Content-Type": "image/png", "Content-Encoding": coding}
        return web.Response(body=body, headers=headers)

    app = web.Application()
    app.router.add_get("/{coding}", answer)
    runner = web.AppRunner(app, handle_signals=False)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    port = runner.addresses[0][1]
    fetcher = make_fetcher(allow_private=True, max_concurrent=1)
    try:
        for _ in range(2):  # the one slot is given back after either
            fetched = await fetcher.open(f"http://127.0.0.1:{port}/gzip")
            assert fetched.length is None  # the sent length is not the file's
            assert b"".join([c async for c in fetched.chunks]) == PNG
            with pytest.raises(errors.UpstreamError, match="br"):
                await fetcher.open(f"http://127.0.0.1:{port}/br")
    finally:
        await fetcher.close()
        await runner.cleanup()
