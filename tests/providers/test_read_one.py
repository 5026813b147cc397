"""Whole reads in one request (issues 17 and 18): a provider's ``open_whole`` describes the
version it sends from the response itself, exactly as ``stat`` describes it, so a download's
headers (length, ETag) are the same whether or not a HEAD came first."""

from __future__ import annotations

import os
from pathlib import Path
from typing import cast

import pytest

from stowage import errors
from stowage.core import reading
from stowage.storage.base import ObjectInfo, OpensWhole, Provider, open_span, open_whole, pin_of
from stowage.storage.rackspace import from_config
from tests.providers.test_contract import OPTS, chunks_of, counting_stats, new_key
from tests.servers.fx_swift import rackspace_config
from tests.servers.rackspace_identity import RackspaceIdentity

#: Where a GET names the version it sends: one request per whole read. GCS (its emulators do
#: not name the generation of a media download) and local files keep stat + pinned open.
ONE_REQUEST = {"S3", "rackspace", "azure", "dropbox"}


async def _whole(provider: Provider, key: str) -> tuple[ObjectInfo, bytes]:
    stream = open_whole(provider, provider.default_container, key)
    info = await anext(stream)
    assert isinstance(info, ObjectInfo)
    out = bytearray()
    async for chunk in stream:
        assert isinstance(chunk, bytes)
        out += chunk
    return info, bytes(out)


def _same(got: ObjectInfo, stat: ObjectInfo) -> None:
    assert (got.size, got.etag, pin_of(got)) == (stat.size, stat.etag, pin_of(stat))
    assert abs(got.modified - stat.modified) <= 1


async def test_open_whole_says_what_stat_says(provider: Provider) -> None:
    key = new_key()
    old, new = os.urandom(5000), os.urandom(7777)
    for data in (old, new, b""):
        await provider.write(provider.default_container, key, chunks_of(data), OPTS)
        stat = await provider.stat(provider.default_container, key)
        info, body = await _whole(provider, key)
        assert body == data
        _same(info, stat)
        # A read pinned to what the one request said reads that version.
        opened = await reading.open_version(provider, provider.default_container, key, info)
        assert b"".join([c async for c in opened.chunks]) == data
    await provider.delete(provider.default_container, key)
    with pytest.raises(errors.StorageNotFound):
        await _whole(provider, key)


async def test_open_current_of_a_store_sends_no_stat(
    provider: Provider, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = new_key()
    data = os.urandom(3000)
    await provider.write(provider.default_container, key, chunks_of(data), OPTS)
    stats = counting_stats(provider, monkeypatch)
    opened = await reading.open_current(provider, provider.default_container, key)
    assert b"".join([c async for c in opened.chunks]) == data
    one = provider.location in ONE_REQUEST
    assert isinstance(provider, OpensWhole) == one
    assert len(stats) == (0 if one else 1)
    ranged = await reading.open_current(
        provider, provider.default_container, key, lambda size: (10, size - 1)
    )
    assert b"".join([c async for c in ranged.chunks]) == data[10:]
    assert len(stats) == (1 if one else 2)
    monkeypatch.undo()
    await provider.delete(provider.default_container, key)


async def test_a_segmented_swift_object_reads_in_one_request_too(
    rackspace_identity: RackspaceIdentity, tmp_path: Path
) -> None:
    """A large object's GET streams its segments and names the manifest's ETag, as a HEAD
    does: the one-request read of an SLO says what ``stat`` says."""
    config = rackspace_config(rackspace_identity, segment_size=1 << 20, inline_limit=1 << 20)
    provider = from_config(config, tmp_path)
    try:
        key = new_key()
        data = os.urandom(3 * (1 << 20) + 12345)
        await provider.write(provider.default_container, key, chunks_of(data), OPTS)
        info, body = await _whole(provider, key)
        assert body == data
        _same(info, await provider.stat(provider.default_container, key))
        start, end = (1 << 20) - 5, (1 << 20) + 5  # across a segment boundary
        stream = open_span(provider, provider.default_container, key, start, end)
        _same(cast(ObjectInfo, await anext(stream)), info)
        assert b"".join([c async for c in stream if isinstance(c, bytes)]) == data[start : end + 1]
        await provider.delete(provider.default_container, key)
    finally:
        await provider.close()
