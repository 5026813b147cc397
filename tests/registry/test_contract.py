"""The registry contract, run against every registry implementation."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from stowage import errors
from stowage.registry.base import App, FileRecord, OverwriteIntent, Registry
from stowage.registry.postgres import PostgresRegistry
from stowage.registry.sqlite import SQLiteRegistry
from tests.servers.fx_postgres import PostgresServer


@pytest.fixture(params=["sqlite", "postgres"])
async def registry(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Registry]:
    reg: Registry
    if request.param == "postgres":
        server: PostgresServer = request.getfixturevalue("postgres_server")
        postgres = PostgresRegistry(server.new_database())
        await postgres.upgrade()
        reg = postgres
    else:
        reg = SQLiteRegistry(tmp_path / "reg.db")
    await reg.open()
    yield reg
    await reg.close()


def record(handle: str = "H" * 20, key: str = "k1", **changes: object) -> FileRecord:
    base = FileRecord(
        handle=handle,
        api_key="app1",
        provider="S3",
        location="local",
        container="default",
        key=key,
        filename="f.txt",
        mimetype="text/plain",
        uploaded=1000.0,
    )
    return base.with_(**changes)


async def test_apps_round_trip(registry: Registry) -> None:
    app = App("app1", "secret", "name", True, {"gcs": {"type": "gcs"}}, ["http://x/"])
    await registry.create_app(app)
    assert await registry.get_app("app1") == app
    with pytest.raises(errors.Conflict):
        await registry.create_app(app)
    updated = App("app1", "s2", "renamed", False, {}, [], app.created)
    await registry.update_app(updated)
    assert await registry.get_app("app1") == updated
    assert [a.api_key for a in await registry.list_apps()] == ["app1"]
    assert await registry.delete_app("app1") is True
    assert await registry.delete_app("app1") is False
    assert await registry.get_app("app1") is None


async def test_pending_rows_are_invisible_until_committed(registry: Registry) -> None:
    await registry.reserve(record())
    assert await registry.get("H" * 20) is None
    assert [r.handle for r in await registry.pending(older_than=10.0)] == ["H" * 20]
    await registry.commit(record(size=5, sha256="abc"))
    got = await registry.get("H" * 20)
    assert got is not None and got.size == 5 and got.sha256 == "abc"
    assert await registry.pending(older_than=10.0) == []


async def test_abandon_drops_only_pending(registry: Registry) -> None:
    await registry.reserve(record())
    await registry.abandon("H" * 20)
    assert await registry.pending(older_than=10.0) == []
    await registry.reserve(record())
    await registry.commit(record())
    await registry.abandon("H" * 20)
    assert await registry.get("H" * 20) is not None


async def test_key_is_claimed_once_per_app(registry: Registry) -> None:
    await registry.reserve(record("A" * 20, "same"))
    with pytest.raises(errors.KeyInUse):
        await registry.reserve(record("B" * 20, "same"))
    await registry.reserve(record("C" * 20, "same", api_key="app2"))
    await registry.reserve(record("D" * 20, "same", container="other"))


async def test_update_and_delete(registry: Registry) -> None:
    await registry.reserve(record())
    await registry.commit(record())
    assert await registry.update(record(size=9, version=2)) is True
    got = await registry.get("H" * 20)
    assert got is not None and got.size == 9 and got.version == 2
    assert await registry.delete("H" * 20) is True
    assert await registry.update(record(size=1)) is False
    assert await registry.delete("H" * 20) is False


async def test_concurrent_deletes_succeed_once(registry: Registry) -> None:
    await registry.reserve(record())
    await registry.commit(record())
    results = await asyncio.gather(*(registry.delete("H" * 20) for _ in range(10)))
    assert results.count(True) == 1


async def test_list_files_pages_by_handle(registry: Registry) -> None:
    for i in range(5):
        h = f"{i}" * 20
        await registry.reserve(record(h, f"k{i}"))
        await registry.commit(record(h, f"k{i}"))
    first = await registry.list_files("app1", limit=2)
    assert [r.handle for r in first] == ["0" * 20, "1" * 20]
    rest = await registry.list_files("app1", after=first[-1].handle, limit=10)
    assert [r.handle for r in rest] == [f"{i}" * 20 for i in range(2, 5)]
    assert len([r async for r in registry.all_files()]) == 5


def intent(version: int = 2, sha256: str = "new", **changes: object) -> OverwriteIntent:
    base = OverwriteIntent("H" * 20, version, 7, sha256, "image/png", created=1000.0)
    return replace(base, **changes)


async def stored(registry: Registry, **changes: object) -> FileRecord:
    row = record(sha256="old", **changes)
    await registry.reserve(row)
    await registry.commit(row)
    return row


async def test_an_intent_is_recorded_only_at_its_base_version(registry: Registry) -> None:
    assert await registry.intend_overwrite(intent()) is False  # no row
    await registry.reserve(record())
    assert await registry.intend_overwrite(intent()) is False  # a pending row
    await registry.commit(record())
    assert await registry.intend_overwrite(intent(version=3)) is False  # row is at 1, not 2
    assert await registry.overwrite_intents(older_than=2000.0) == []
    assert await registry.intend_overwrite(intent()) is True
    assert await registry.intend_overwrite(intent(sha256="newer")) is True  # replaces it
    assert await registry.overwrite_intents(older_than=2000.0) == [intent(sha256="newer")]
    assert await registry.overwrite_intents(older_than=1000.0) == []  # recorded at 1000


async def test_update_drops_the_intent_it_fulfils(registry: Registry) -> None:
    row = await stored(registry)
    other = await stored(registry, handle="O" * 20, key="k2")
    await registry.intend_overwrite(intent())
    await registry.intend_overwrite(intent(handle=other.handle))
    assert await registry.pending_overwrite(row.handle) == intent()  # readers tell versions
    assert await registry.update(row.with_(size=7, sha256="new", version=2)) is True
    assert await registry.overwrite_intents(2000.0) == [intent(handle=other.handle)]
    assert await registry.pending_overwrite(row.handle) is None
    assert await registry.pending_overwrite(other.handle) == intent(handle=other.handle)


async def test_settle_adopts_an_intent_into_its_row_once(registry: Registry) -> None:
    row = await stored(registry)
    await registry.intend_overwrite(intent())
    assert await registry.settle_overwrite(intent(), adopt=True) is True
    adopted = row.with_(size=7, sha256="new", mimetype="image/png", version=2)
    assert await registry.get(row.handle) == adopted
    assert await registry.overwrite_intents(2000.0) == []
    assert await registry.settle_overwrite(intent(), adopt=True) is False  # gone: no-op
    assert await registry.get(row.handle) == adopted


async def test_settle_without_adopting_keeps_the_row(registry: Registry) -> None:
    row = await stored(registry)
    await registry.intend_overwrite(intent())
    assert await registry.settle_overwrite(intent(), adopt=False) is False
    assert await registry.get(row.handle) == row
    assert await registry.overwrite_intents(2000.0) == []


async def test_settle_touches_only_the_intent_still_recorded(registry: Registry) -> None:
    """A replaced intent (another write recorded its own since) is neither adopted nor
    dropped: the one recorded stays for its writer."""
    row = await stored(registry)
    await registry.intend_overwrite(intent(sha256="first"))
    await registry.intend_overwrite(intent(sha256="second"))
    assert await registry.settle_overwrite(intent(sha256="first"), adopt=True) is False
    assert await registry.get(row.handle) == row
    assert await registry.overwrite_intents(2000.0) == [intent(sha256="second")]


async def test_settle_never_adopts_into_a_removed_row(registry: Registry) -> None:
    await stored(registry)
    await registry.intend_overwrite(intent())
    assert await registry.delete("H" * 20) is True
    assert await registry.settle_overwrite(intent(), adopt=True) is False
    assert await registry.get("H" * 20) is None
    assert await registry.overwrite_intents(2000.0) == []


async def test_handle_lock_serialises(registry: Registry) -> None:
    order: list[str] = []

    async def worker(name: str) -> None:
        async with registry.handle_lock("H" * 20):
            order.append(f"{name}-in")
            await asyncio.sleep(0.01)
            order.append(f"{name}-out")

    await asyncio.gather(worker("a"), worker("b"))
    assert order in (["a-in", "a-out", "b-in", "b-out"], ["b-in", "b-out", "a-in", "a-out"])


async def test_exclusive_admits_one_caller_at_a_time(registry: Registry) -> None:
    async with (
        registry.exclusive("job") as first,
        registry.exclusive("job") as second,
        registry.exclusive("other") as third,
    ):
        assert (first, second, third) == (True, False, True)
    async with registry.exclusive("job") as again:
        assert again is True
