"""Multipart upload pieces kept in a shared default store (every provider that lists keys),
so any node can take a piece and any node can complete the upload (issue: scale-out)."""

from __future__ import annotations

import os
from typing import Any

from yarl import URL

from stowage.core.partfiles import PartFiles
from stowage.core.partobjects import PREFIX, PartObjects
from stowage.storage.base import Lists, Provider, WriteOptions
from tests.api.harness import Harness
from tests.api.shared_store import settings, shared  # noqa: F401 - the fixtures
from tests.api.test_file_ops import basic
from tests.api.test_uploads import complete, md5_b64, post, put_part, split, start, stored_bytes
from tests.providers.test_contract import chunks_of

KiB = 1024
DISK_ONLY = ("local", "dropbox")  # a node's own disk, or a store that cannot list


async def pieces(provider: Provider, upload_id: str = "") -> list[str]:
    assert isinstance(provider, Lists)
    return [k async for k in provider.keys(provider.default_container, PREFIX + upload_id)]


async def test_pieces_live_in_the_shared_store_until_completion(
    harness: Harness,
    shared: tuple[dict[str, Any], Provider],  # noqa: F811 - the imported fixture
    provider_name: str,
) -> None:
    _, provider = shared
    store = harness.uploads.files
    if provider_name in DISK_ONLY:
        assert isinstance(store, PartFiles)
        return
    assert isinstance(store, PartObjects)
    data = os.urandom(600 * KiB + 5)
    started = await start(harness, data)
    parts = [
        {"part_number": n, "etag": await put_part(harness, started, n, chunk)}
        for n, chunk in enumerate(split(data, 256 * KiB), 1)
    ]
    kept = await pieces(provider, started["upload_id"])
    assert len(kept) == 3
    assert not (harness.settings.data_dir / "uploads").exists()  # nothing on the node
    done = await complete(harness, started, parts)
    assert await stored_bytes(harness, done["handle"]) == data
    assert await pieces(provider, started["upload_id"]) == []


async def test_piece_with_wrong_md5_leaves_no_object(
    harness: Harness,
    shared: tuple[dict[str, Any], Provider],  # noqa: F811 - the imported fixture
    provider_name: str,
) -> None:
    _, provider = shared
    if provider_name in DISK_ONLY:
        assert not isinstance(harness.uploads.files, PartObjects)
        return
    data = os.urandom(3000)
    started = await start(harness, data)
    body = {
        "apikey": harness.open_app.api_key,
        "upload_id": started["upload_id"],
        "part": 1,
        "size": len(data),
        "md5": md5_b64(b"other bytes"),
    }
    target = await post(harness, "/multipart/upload", **body)
    resp = await harness.api.put(URL(target["url"]).path_qs, data=data)
    assert resp.status == 400 and (await resp.json())["error"]["code"] == "BAD_DIGEST"
    assert await pieces(provider, started["upload_id"]) == []


async def test_a_piece_changed_in_storage_fails_completion(
    harness: Harness,
    shared: tuple[dict[str, Any], Provider],  # noqa: F811 - the imported fixture
    provider_name: str,
) -> None:
    _, provider = shared
    if provider_name in DISK_ONLY:
        assert not isinstance(harness.uploads.files, PartObjects)
        return
    data = os.urandom(4000)
    started = await start(harness, data)
    etag = await put_part(harness, started, 1, data)
    [key] = await pieces(provider, started["upload_id"])
    tampered = bytes([data[0] ^ 1]) + data[1:]
    await provider.write(provider.default_container, key, chunks_of(tampered), WriteOptions())
    failed = await complete(harness, started, [{"part_number": 1, "etag": etag}], status=400)
    assert failed["error"]["code"] == "INVALID_PARTS"
    app = harness.open_app
    listing = await harness.api.get(
        "/api/files", params={"key": app.api_key}, headers=basic("app", app.secret)
    )
    assert (await listing.json())["files"] == []  # nothing stored from the wrong bytes


async def test_sweep_removes_leftovers_and_expired_uploads(
    harness: Harness,
    shared: tuple[dict[str, Any], Provider],  # noqa: F811 - the imported fixture
    provider_name: str,
) -> None:
    _, provider = shared
    if provider_name in DISK_ONLY:
        assert not isinstance(harness.uploads.files, PartObjects)
        return
    data = os.urandom(2048)
    started = await start(harness, data)
    await put_part(harness, started, 1, os.urandom(1024))  # retried below: left over
    await put_part(harness, started, 1, data[:1024])
    assert len(await pieces(provider, started["upload_id"])) == 2
    orphan = f"{PREFIX}{'o' * 32}/1-0-{'0' * 32}"  # a crashed node's piece, no session
    await provider.write(provider.default_container, orphan, chunks_of(b"x"), WriteOptions())

    assert await harness.uploads.sweep() == 0
    assert len(await pieces(provider, started["upload_id"])) == 2  # a live upload is kept
    assert await pieces(provider, "o" * 32) == []

    harness.settings.upload_expiry_seconds = -1
    assert await harness.uploads.sweep() == 1
    assert await pieces(provider, started["upload_id"]) == []
    assert await harness.service.registry.get_upload(started["upload_id"]) is None
