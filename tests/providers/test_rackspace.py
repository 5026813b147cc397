"""Rackspace specifics on the Swift all-in-one: login, token renewal, large objects (SLO)."""

from __future__ import annotations

import json
import os
import secrets
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from stowage import errors
from stowage.storage.base import WriteOptions, exists
from stowage.storage.rackspace import RackspaceProvider, from_config, parse_access
from stowage.storage.rackspace.replies import expect_put
from tests.servers.fx_swift import RACKSPACE_CONTAINER, rackspace_config
from tests.servers.rackspace_identity import RackspaceIdentity
from tests.servers.swift_aio import SwiftAIO

OPTS = WriteOptions(content_type="application/x-test")
SEGMENTS = RACKSPACE_CONTAINER + "_segments"
KIB = 1024


async def chunks_of(data: bytes, size: int = 50 * KIB) -> AsyncIterator[bytes]:
    for i in range(0, len(data), size):
        yield data[i : i + size]


async def failing_after(data: bytes) -> AsyncIterator[bytes]:
    async for chunk in chunks_of(data):
        yield chunk
    raise errors.PayloadTooLarge("source failed mid-stream")


async def read_all(
    provider: RackspaceProvider, key: str, start: int = 0, end: int | None = None
) -> bytes:
    out = bytearray()
    async for chunk in provider.open(RACKSPACE_CONTAINER, key, start, end):
        out += chunk
    return bytes(out)


def new_key(name: str = "obj.bin") -> str:
    return f"rackspace/{secrets.token_hex(6)}/{name}"


def swift_request(
    server: SwiftAIO, method: str, path: str, query: str = ""
) -> tuple[int, dict[str, str], bytes]:
    """A direct Swift call with a tempauth token, bypassing the provider."""
    url = server.storage_url + urllib.parse.quote(path) + query
    request = urllib.request.Request(
        url, method=method, headers={"X-Auth-Token": server.get_token()}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def segments_of(server: SwiftAIO, key: str) -> list[dict[str, Any]]:
    prefix = urllib.parse.quote(key + "/", safe="")
    status, _, body = swift_request(server, "GET", f"/{SEGMENTS}", f"?format=json&prefix={prefix}")
    if status == 404:
        return []
    assert status == 200, status
    listing: list[dict[str, Any]] = json.loads(body)
    return listing


@pytest.fixture
def identity(rackspace_identity: RackspaceIdentity) -> Iterator[RackspaceIdentity]:
    ttl = rackspace_identity.token_ttl
    yield rackspace_identity
    rackspace_identity.token_ttl = ttl


@pytest.fixture
async def small_segments(
    identity: RackspaceIdentity, tmp_path: Path
) -> AsyncIterator[RackspaceProvider]:
    """Segments of 256 KiB, and anything over 64 KiB goes the SLO way."""
    provider = from_config(
        rackspace_config(identity, segment_size=256 * KIB, inline_limit=64 * KIB), tmp_path
    )
    yield provider
    await provider.close()


async def make_provider(
    identity: RackspaceIdentity, tmp_path: Path, **overrides: Any
) -> RackspaceProvider:
    return from_config(rackspace_config(identity, **overrides), tmp_path)


# -- login ---------------------------------------------------------------------


async def test_login_through_identity_endpoint(identity: RackspaceIdentity, tmp_path: Path) -> None:
    provider = await make_provider(identity, tmp_path)
    before = identity.logins
    key = new_key()
    await provider.write(RACKSPACE_CONTAINER, key, chunks_of(b"hello"), OPTS)
    assert await read_all(provider, key) == b"hello"
    assert identity.logins == before + 1  # one login serves every later request
    await provider.close()


async def test_internal_endpoint_is_used_when_asked(
    identity: RackspaceIdentity, tmp_path: Path
) -> None:
    # HKG's public URL is a closed port; only its internal (ServiceNet) URL answers.
    internal = await make_provider(identity, tmp_path, region="HKG", internal=True)
    key = new_key()
    await internal.write(RACKSPACE_CONTAINER, key, chunks_of(b"snet"), OPTS)
    await internal.close()
    public = await make_provider(identity, tmp_path, region="hkg")
    with pytest.raises(errors.StorageUnavailable):
        await public.stat(RACKSPACE_CONTAINER, key)
    await public.close()


async def test_region_defaults_to_users_default(
    identity: RackspaceIdentity, tmp_path: Path
) -> None:
    provider = await make_provider(identity, tmp_path, region=None)
    assert not await exists(provider, RACKSPACE_CONTAINER, new_key())
    await provider.close()


async def test_wrong_api_key_is_access_denied(identity: RackspaceIdentity, tmp_path: Path) -> None:
    provider = await make_provider(identity, tmp_path, api_key="wrong")
    with pytest.raises(errors.StorageAccessDenied):
        await provider.stat(RACKSPACE_CONTAINER, new_key())
    await provider.close()


async def test_unknown_region_is_misconfigured(identity: RackspaceIdentity, tmp_path: Path) -> None:
    provider = await make_provider(identity, tmp_path, region="SYD")
    with pytest.raises(errors.StorageMisconfigured):
        await provider.stat(RACKSPACE_CONTAINER, new_key())
    await provider.close()


async def test_identity_down_is_unavailable(identity: RackspaceIdentity, tmp_path: Path) -> None:
    dead = identity.dead_url.rsplit("/v1/", 1)[0] + "/v2.0"
    provider = await make_provider(identity, tmp_path, identity_url=dead)
    with pytest.raises(errors.StorageUnavailable):
        await provider.stat(RACKSPACE_CONTAINER, new_key())
    await provider.close()


async def test_missing_container_is_not_found(identity: RackspaceIdentity, tmp_path: Path) -> None:
    provider = await make_provider(identity, tmp_path)
    with pytest.raises(errors.StorageNotFound):
        await provider.write("no-such-container", new_key(), chunks_of(b"x"), OPTS)
    await provider.close()


def test_from_config_requires_credentials(tmp_path: Path) -> None:
    with pytest.raises(errors.StorageMisconfigured):
        from_config({"type": "rackspace", "identity_url": "http://127.0.0.1:1/v2.0"}, tmp_path)


def test_parse_access_picks_region_and_interface() -> None:
    doc = {
        "access": {
            "token": {"id": "tok", "expires": "2099-01-01T00:00:00.000Z"},
            "user": {"RAX-AUTH:defaultRegion": "ORD"},
            "serviceCatalog": [
                {
                    "name": "cloudFiles",
                    "type": "object-store",
                    "endpoints": [
                        {
                            "region": "DFW",
                            "publicURL": "http://dfw/v1/a",
                            "internalURL": "http://snet-dfw/v1/a",
                        },
                        {
                            "region": "ORD",
                            "publicURL": "http://ord/v1/a/",
                            "internalURL": "http://snet-ord/v1/a",
                        },
                    ],
                }
            ],
        }
    }
    assert parse_access(doc, "dfw", internal=True).storage_url == "http://snet-dfw/v1/a"
    assert parse_access(doc, None, internal=False).storage_url == "http://ord/v1/a"
    assert parse_access(doc, "DFW", internal=False).renew_at > time.monotonic() + 3600


# -- token renewal -----------------------------------------------------------------


async def test_token_renewed_before_announced_expiry(
    identity: RackspaceIdentity, tmp_path: Path
) -> None:
    identity.token_ttl = 1.5
    provider = await make_provider(identity, tmp_path)
    key = new_key()
    await provider.write(RACKSPACE_CONTAINER, key, chunks_of(b"a"), OPTS)
    first = identity.logins
    await provider.stat(RACKSPACE_CONTAINER, key)
    assert identity.logins == first  # still fresh
    time.sleep(1.6)
    await provider.stat(RACKSPACE_CONTAINER, key)
    assert identity.logins == first + 1
    await provider.close()


async def test_token_renewed_once_on_401(
    identity: RackspaceIdentity, swift_server: SwiftAIO, tmp_path: Path
) -> None:
    provider = await make_provider(identity, tmp_path)
    key = new_key()
    await provider.write(RACKSPACE_CONTAINER, key, chunks_of(b"before"), OPTS)
    before = identity.logins
    swift_server.revoke_token(swift_server.get_token())  # tempauth hands out the token it holds
    assert await read_all(provider, key) == b"before"
    assert identity.logins == before + 1
    await provider.close()


async def test_streamed_segment_survives_401(
    identity: RackspaceIdentity, swift_server: SwiftAIO, small_segments: RackspaceProvider
) -> None:
    # The 401 comes before 100-continue, so the unsent stream is sent again after a new login.
    key = new_key()
    # Warm up through the segment path, so the segments container is known to exist and
    # the first request after the revocation is the streamed segment PUT itself.
    await small_segments.write(
        RACKSPACE_CONTAINER, new_key(), chunks_of(os.urandom(100 * KIB)), OPTS
    )
    swift_server.revoke_token(swift_server.get_token())
    before = identity.logins
    data = os.urandom(600 * KIB)
    info = await small_segments.write(RACKSPACE_CONTAINER, key, chunks_of(data), OPTS)
    assert info.size == len(data)
    assert await read_all(small_segments, key) == data
    assert identity.logins == before + 1


# -- large objects (SLO) -----------------------------------------------------------------


async def test_slo_upload_read_and_delete_removes_segments(
    swift_server: SwiftAIO, small_segments: RackspaceProvider
) -> None:
    key = new_key("ünï cødé $%&'.bin")
    data = os.urandom(1024 * KIB + 1000)  # 4 full segments and a short one
    info = await small_segments.write(RACKSPACE_CONTAINER, key, chunks_of(data, 70 * KIB), OPTS)
    assert info.size == len(data)

    segments = segments_of(swift_server, key)
    assert [s["bytes"] for s in segments] == [256 * KIB] * 4 + [1000]
    status, headers, _ = swift_request(swift_server, "HEAD", f"/{RACKSPACE_CONTAINER}/{key}")
    assert status == 200
    assert headers.get("X-Static-Large-Object") == "True"
    assert headers.get("Content-Type") == OPTS.content_type

    stat = await small_segments.stat(RACKSPACE_CONTAINER, key)
    assert (stat.size, stat.etag) == (len(data), info.etag)
    assert await read_all(small_segments, key) == data
    boundary = 256 * KIB
    assert (
        await read_all(small_segments, key, boundary - 10, boundary + 10)
        == data[boundary - 10 : boundary + 11]
    )
    assert await read_all(small_segments, key, len(data) - 5) == data[-5:]

    await small_segments.delete(RACKSPACE_CONTAINER, key)
    assert segments_of(swift_server, key) == []
    assert not await exists(small_segments, RACKSPACE_CONTAINER, key)
    with pytest.raises(errors.StorageNotFound):
        await small_segments.delete(RACKSPACE_CONTAINER, key)


async def test_overwrite_removes_old_segments(
    swift_server: SwiftAIO, small_segments: RackspaceProvider
) -> None:
    key = new_key()
    await small_segments.write(RACKSPACE_CONTAINER, key, chunks_of(os.urandom(600 * KIB)), OPTS)
    old = {s["name"] for s in segments_of(swift_server, key)}
    assert len(old) == 3

    data = os.urandom(300 * KIB)
    await small_segments.write(RACKSPACE_CONTAINER, key, chunks_of(data), OPTS)
    new = {s["name"] for s in segments_of(swift_server, key)}
    assert len(new) == 2 and not new & old
    assert await read_all(small_segments, key) == data

    await small_segments.write(RACKSPACE_CONTAINER, key, chunks_of(b"small now"), OPTS)
    assert segments_of(swift_server, key) == []
    assert await read_all(small_segments, key) == b"small now"
    await small_segments.delete(RACKSPACE_CONTAINER, key)


async def test_failed_slo_write_keeps_previous_and_cleans_up(
    swift_server: SwiftAIO, small_segments: RackspaceProvider
) -> None:
    key = new_key()
    previous = os.urandom(400 * KIB)
    await small_segments.write(RACKSPACE_CONTAINER, key, chunks_of(previous), OPTS)
    kept = segments_of(swift_server, key)
    assert len(kept) == 2

    # Fails inside the third segment, after two were stored.
    with pytest.raises(errors.PayloadTooLarge):
        await small_segments.write(
            RACKSPACE_CONTAINER, key, failing_after(os.urandom(700 * KIB)), OPTS
        )
    assert await read_all(small_segments, key) == previous
    assert segments_of(swift_server, key) == kept

    fresh = new_key()
    with pytest.raises(errors.PayloadTooLarge):
        await small_segments.write(
            RACKSPACE_CONTAINER, fresh, failing_after(os.urandom(700 * KIB)), OPTS
        )
    assert not await exists(small_segments, RACKSPACE_CONTAINER, fresh)
    assert segments_of(swift_server, fresh) == []
    await small_segments.delete(RACKSPACE_CONTAINER, key)


async def test_too_many_segments_is_refused(
    swift_server: SwiftAIO, identity: RackspaceIdentity, tmp_path: Path
) -> None:
    provider = await make_provider(
        identity, tmp_path, segment_size=64 * KIB, inline_limit=0, max_segments=2
    )
    key = new_key()
    with pytest.raises(errors.StorageFull):
        await provider.write(RACKSPACE_CONTAINER, key, chunks_of(os.urandom(200 * KIB)), OPTS)
    assert not await exists(provider, RACKSPACE_CONTAINER, key)
    assert segments_of(swift_server, key) == []
    await provider.close()


async def test_sweep_removes_only_orphan_segments(
    swift_server: SwiftAIO, identity: RackspaceIdentity, tmp_path: Path
) -> None:
    provider = await make_provider(
        identity, tmp_path, segment_size=64 * KIB, inline_limit=0, orphan_age=0
    )
    live = new_key()
    data = os.urandom(150 * KIB)
    await provider.write(RACKSPACE_CONTAINER, live, chunks_of(data), OPTS)
    in_use = segments_of(swift_server, live)
    # What a crash leaves behind: segments of an upload whose manifest never came,
    # one next to a live object, one for a key that has no object at all.
    lost = new_key()
    for key in (live, lost):
        for index in range(2):
            name = f"/{SEGMENTS}/{key}/1000-dead/{index:08d}"
            status, _, _ = swift_request(swift_server, "PUT", name)
            assert status == 201
    assert await provider.sweep_temporary() >= 4
    assert segments_of(swift_server, live) == in_use
    assert segments_of(swift_server, lost) == []
    assert await read_all(provider, live) == data
    await provider.delete(RACKSPACE_CONTAINER, live)
    await provider.close()


@pytest.mark.parametrize(
    ("status", "raised"),
    [
        (201, None),
        (202, errors.StorageConflict),  # a concurrent PUT with a newer timestamp won
        (404, errors.StorageNotFound),
        (503, errors.StorageUnavailable),
    ],
)
def test_put_answers_map_to_outcomes(status: int, raised: type[Exception] | None) -> None:
    """Swift answers a PUT that lost to a newer concurrent one with 202 (its object servers
    said 409): the write was not applied, so it must not be taken for a success."""

    class Answer:  # the three attributes the reply check reads
        method, reason = "PUT", "Accepted"

        def __init__(self, code: int) -> None:
            self.status = code

    answer: Any = Answer(status)
    if raised is None:
        expect_put(answer, "c")
    else:
        with pytest.raises(raised):
            expect_put(answer, "c")
