"""Checklist 39-43 and 61: races between writers, readers and deleters of one handle."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from tests.api.harness import Harness
from tests.api.test_file_ops import basic, handle_of
from tests.reliability.checks import TOTALS, assert_clean, expect_error, fault

AUTH = basic("app", "open-secret")
MiB = 1024 * 1024


async def _slow(fill: bytes, pieces: int, pause: float) -> AsyncIterator[bytes]:
    for _ in range(pieces):
        yield fill * (256 * 1024)
        await asyncio.sleep(pause)


async def test_many_overwrites_end_with_one_whole_writer(harness: Harness) -> None:
    """39 (s3tests atomic_dual_write), 8 writers of 2 MiB each."""
    result = await harness.store(b"start")
    handle = handle_of(result)
    writers = [
        harness.api.post(f"/api/file/{handle}", data=_slow(bytes([65 + i]), 8, 0.001), headers=AUTH)
        for i in range(8)
    ]
    answers = await asyncio.gather(*writers)
    assert all(r.status == 200 for r in answers)
    content = await (await harness.api.get(f"/api/file/{handle}")).read()
    TOTALS.inputs_tried += 8
    assert len(content) == 2 * MiB and len(set(content)) == 1
    record = await harness.service.registry.get(handle)
    assert record is not None and record.size == 2 * MiB
    await assert_clean(harness.service)


async def test_download_during_overwrite_gets_the_old_version_whole(harness: Harness) -> None:
    """40 (s3tests atomic_read)."""
    old = b"o" * (2 * MiB)
    handle = handle_of(await harness.store(old))
    writer = asyncio.create_task(
        harness.api.post(f"/api/file/{handle}", data=_slow(b"n", 8, 0.05), headers=AUTH)
    )
    seen: list[bytes] = []
    while not writer.done():
        seen.append(await (await harness.api.get(f"/api/file/{handle}")).read())
        await asyncio.sleep(0.02)
    assert (await writer).status == 200
    TOTALS.inputs_tried += len(seen)
    assert seen and seen[0] == old
    assert all(s in (old, b"n" * (2 * MiB)) for s in seen)  # never a mix, never short
    await assert_clean(harness.service)


async def test_delete_during_overwrite_is_defined_and_leaves_nothing(harness: Harness) -> None:
    """41 (s3tests atomic_write_bucket_gone): the delete waits for the overwrite, then removes
    the new content; the handle is gone and no temporary file or object remains."""
    result = await harness.store(b"old")
    handle = handle_of(result)
    writer = asyncio.create_task(
        harness.api.post(f"/api/file/{handle}", data=_slow(b"n", 6, 0.05), headers=AUTH)
    )
    await asyncio.sleep(0.1)
    deleted = await harness.api.delete(f"/api/file/{handle}", headers=AUTH)
    assert deleted.status == 200
    assert (await writer).status == 200
    await expect_error(await harness.api.get(f"/api/file/{handle}"), 404, "HANDLE_NOT_FOUND")
    assert not harness.object_path(harness.open_app, result["key"]).exists()
    await assert_clean(harness.service)


async def test_concurrent_deletes_succeed_exactly_once(harness: Harness) -> None:
    """61: eight deletes of one handle at once: exactly one 200, seven 404 in the error
    shape; the object, its row and any temporary file are gone."""
    result = await harness.store(b"d" * 4096)
    handle = handle_of(result)
    answers = await asyncio.gather(
        *(harness.api.delete(f"/api/file/{handle}", headers=AUTH) for _ in range(8))
    )
    assert sorted(r.status for r in answers) == [200] + [404] * 7
    for answer in answers:
        if answer.status == 404:
            await expect_error(answer, 404, "HANDLE_NOT_FOUND")
    assert await harness.service.registry.get(handle) is None
    assert not harness.object_path(harness.open_app, result["key"]).exists()
    await assert_clean(harness.service)


async def test_two_create_only_stores_of_one_path_one_wins(harness: Harness) -> None:
    """42 (AWS conditional writes): `If-None-Match: *` with the same path."""
    params = {"key": harness.open_app.api_key, "path": "race/one.bin"}
    headers = {"If-None-Match": "*"}
    answers = await asyncio.gather(
        *(
            harness.api.post(
                "/api/store/S3",
                params=params,
                data=_slow(bytes([97 + i]), 4, 0.01),
                headers=headers,
            )
            for i in range(4)
        )
    )
    statuses = sorted(r.status for r in answers)
    TOTALS.inputs_tried += 4
    assert statuses[0] == 200 and statuses.count(200) == 1, statuses
    assert all(s in (409, 412) for s in statuses[1:]), statuses
    content = harness.object_path(harness.open_app, "race/one.bin").read_bytes()
    assert len(content) == MiB and len(set(content)) == 1
    await assert_clean(harness.service)


async def test_a_client_that_dies_holding_the_lock_does_not_block_the_next(
    harness: Harness,
) -> None:
    """43 (tusd TestLockRelease): the writer's connection is cut mid-body while it holds the
    handle's lock; the next overwrite and a delete proceed at once."""
    result = await harness.store(b"old")
    handle = handle_of(result)
    _reader, writer = await asyncio.open_connection("127.0.0.1", harness.api.port)
    head = (
        f"POST /api/file/{handle} HTTP/1.1\r\nHost: x\r\nContent-Length: {8 * MiB}\r\n"
        "Authorization: " + AUTH["Authorization"] + "\r\n\r\n"
    ).encode()
    writer.write(head + b"d" * MiB)
    await writer.drain()
    await asyncio.sleep(0.3)  # the server is inside the write, holding the lock
    writer.transport.abort()  # the client dies
    fault()
    follow = await asyncio.wait_for(
        harness.api.post(f"/api/file/{handle}", data=b"next", headers=AUTH), 10
    )
    assert follow.status == 200
    assert await (await harness.api.get(f"/api/file/{handle}")).read() == b"next"
    assert (await harness.api.delete(f"/api/file/{handle}", headers=AUTH)).status == 200
    await assert_clean(harness.service)
