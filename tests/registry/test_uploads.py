"""Multipart upload sessions in every registry (the shared ``registry`` fixture)."""

from __future__ import annotations

import asyncio

from stowage.registry.base import Registry, UploadPart, UploadSession
from tests.registry.test_contract import registry  # noqa: F401  (the parametrised fixture)


def session(upload_id: str = "u" * 20, created: float = 100.0) -> UploadSession:
    return UploadSession(
        upload_id, "app1", "S3", "f.bin", "application/octet-stream", 10, None, None,
        "private", "partkey", created,
    )  # fmt: skip


async def test_session_round_trip_and_parts(registry: Registry) -> None:  # noqa: F811
    await registry.create_upload(session())
    assert await registry.get_upload("u" * 20) == session()
    await registry.put_upload_part(UploadPart("u" * 20, 2, 0, 4, "m2", "e2"))
    await registry.put_upload_part(UploadPart("u" * 20, 1, 5, 5, "m1b", "e1b"))
    await registry.put_upload_part(UploadPart("u" * 20, 1, 0, 5, "old", "old"))
    await registry.put_upload_part(UploadPart("u" * 20, 1, 0, 5, "m1a", "e1a"))  # replaces
    parts = await registry.upload_parts("u" * 20)
    assert [(p.part, p.offset, p.md5) for p in parts] == [
        (1, 0, "m1a"),
        (1, 5, "m1b"),
        (2, 0, "m2"),
    ]


async def test_finish_succeeds_once_however_many_race(registry: Registry) -> None:  # noqa: F811
    await registry.create_upload(session())
    await registry.put_upload_part(UploadPart("u" * 20, 1, 0, 10, "m", "e"))
    results = await asyncio.gather(
        *(registry.finish_upload("u" * 20, f"{i}" * 20) for i in range(8))
    )
    assert results.count(True) == 1
    done = await registry.get_upload("u" * 20)
    assert done is not None and done.state == "complete" and done.handle is not None
    assert await registry.upload_parts("u" * 20) == []


async def test_expired_and_delete(registry: Registry) -> None:  # noqa: F811
    await registry.create_upload(session("a" * 20, created=100.0))
    await registry.create_upload(session("b" * 20, created=300.0))
    await registry.put_upload_part(UploadPart("a" * 20, 1, 0, 10, "m", "e"))
    assert [s.upload_id for s in await registry.expired_uploads(200.0)] == ["a" * 20]
    await registry.delete_upload("a" * 20)
    assert await registry.get_upload("a" * 20) is None
    assert await registry.upload_parts("a" * 20) == []
    assert [s.upload_id for s in await registry.expired_uploads(1000.0)] == ["b" * 20]
