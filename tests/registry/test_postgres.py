"""PostgreSQL registry beyond the shared contract: migrations, schema checks, and the
cross-node rules, with several registry instances (one per "node") on one database."""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from stowage import errors
from stowage.assembly import assemble
from stowage.config import Settings
from stowage.core import overwrites
from stowage.registry import migrate
from stowage.registry.base import App, FileRecord, WebhookDelivery
from stowage.registry.postgres import PostgresRegistry
from tests.servers.fx_postgres import PostgresServer
from tests.servers.ports import free_port

H = "H" * 20


@pytest.fixture
def dsn(postgres_server: PostgresServer) -> str:
    return postgres_server.new_database()


@pytest.fixture
async def nodes(dsn: str) -> AsyncIterator[list[PostgresRegistry]]:
    """Three registries on one database, like three nodes."""
    await PostgresRegistry(dsn).upgrade()
    regs = [PostgresRegistry(dsn, pool_size=4, lock_pool_size=4) for _ in range(3)]
    for reg in regs:
        await reg.open()
    yield regs
    for reg in regs:
        await reg.close()


def record(handle: str = H, **changes: object) -> FileRecord:
    base = FileRecord(H, "app1", "S3", "local", "default", "k", "f.txt", "text/plain")
    fields = {"handle": handle, "key": f"k-{handle}", "uploaded": time.time() * 1000}
    return base.with_(**{**fields, **changes})


async def test_open_refuses_a_database_without_schema(dsn: str) -> None:
    with pytest.raises(errors.SchemaMismatch, match="stowage db upgrade"):
        await PostgresRegistry(dsn).open()


async def test_upgrade_applies_every_migration_once(dsn: str) -> None:
    reg = PostgresRegistry(dsn)
    applied = await reg.upgrade()
    assert applied == [m.name for m in migrate.migrations()]
    assert await reg.upgrade() == []
    assert await reg.schema_version() == migrate.latest()
    await reg.open()
    await reg.ping()
    await reg.close()


async def test_concurrent_upgrades_from_many_nodes(dsn: str) -> None:
    results = await asyncio.gather(*(PostgresRegistry(dsn).upgrade() for _ in range(4)))
    assert sorted(len(r) for r in results) == [0, 0, 0, len(migrate.migrations())]


async def test_a_newer_schema_is_refused(dsn: str, postgres_server: PostgresServer) -> None:
    reg = PostgresRegistry(dsn)
    await reg.upgrade()
    postgres_server.psql(
        "INSERT INTO stowage_schema (version, name) VALUES (999, '0999_future.sql')",
        dsn.rsplit("/", 1)[-1],
    )
    with pytest.raises(errors.SchemaMismatch, match="newer than this node knows"):
        await reg.open()
    with pytest.raises(errors.SchemaMismatch):
        await reg.upgrade()


async def test_unreachable_database_is_registry_unavailable(
    postgres_server: PostgresServer,
) -> None:
    dsn = f"postgresql://stowage@127.0.0.1:{free_port()}/postgres"
    with pytest.raises(errors.RegistryUnavailable):
        await PostgresRegistry(dsn).open()


async def test_handle_lock_serialises_across_nodes(nodes: list[PostgresRegistry]) -> None:
    inside: list[int] = []
    overlaps: list[int] = []

    async def worker(reg: PostgresRegistry) -> None:
        async with reg.handle_lock(H):
            inside.append(1)
            overlaps.append(len(inside))
            await asyncio.sleep(0.02)
            inside.pop()

    await asyncio.gather(*(worker(nodes[i % 3]) for i in range(12)))
    assert overlaps == [1] * 12


async def test_other_handles_are_not_blocked(nodes: list[PostgresRegistry]) -> None:
    async with nodes[0].handle_lock(H):
        async with asyncio.timeout(2):
            async with nodes[1].handle_lock("X" * 20):
                pass


async def test_a_cancelled_holder_releases_the_lock(nodes: list[PostgresRegistry]) -> None:
    held = asyncio.Event()

    async def holder() -> None:
        async with nodes[0].handle_lock(H):
            held.set()
            await asyncio.sleep(3600)

    task = asyncio.create_task(holder())
    await held.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    async with asyncio.timeout(5):
        async with nodes[1].handle_lock(H):
            pass


async def test_same_delete_on_every_node_succeeds_once(nodes: list[PostgresRegistry]) -> None:
    for i in range(20):
        handle = f"{i:020d}"
        await nodes[0].reserve(record(handle))
        await nodes[0].commit(record(handle))
        results = await asyncio.gather(*(reg.delete(handle) for reg in nodes for _ in range(3)))
        assert results.count(True) == 1


async def test_an_older_version_never_replaces_a_newer_one(
    nodes: list[PostgresRegistry],
) -> None:
    await nodes[0].reserve(record())
    await nodes[0].commit(record())
    assert await nodes[1].update(record(size=3, version=3)) is True
    assert await nodes[2].update(record(size=2, version=2)) is False
    got = await nodes[0].get(H)
    assert got is not None and (got.size, got.version) == (3, 3)


async def test_key_claimed_once_across_nodes(nodes: list[PostgresRegistry]) -> None:
    async def claim(i: int) -> bool:
        try:
            await nodes[i % 3].reserve(record(f"{i:020d}", key="same"))
            return True
        except errors.KeyInUse:
            return False

    assert (await asyncio.gather(*(claim(i) for i in range(9)))).count(True) == 1


async def test_webhook_rows_are_claimed_by_one_worker(nodes: list[PostgresRegistry]) -> None:
    now = time.time()
    rows = [
        WebhookDelivery(0, i, "app1", "http://127.0.0.1:9/", "fp.upload", H, "{}", created=now)
        for i in range(60)
    ]
    await nodes[0].enqueue_webhooks(rows)

    async def worker(n: int) -> list[int]:
        taken: list[int] = []
        while batch := await nodes[n % 3].claim_webhooks(f"w{n}", time.time(), 60, 4):
            taken.extend(d.id for d in batch)
        return taken

    claimed = [i for ids in await asyncio.gather(*(worker(n) for n in range(6))) for i in ids]
    assert len(claimed) == 60 and len(set(claimed)) == 60


async def test_start_up_recovery_spares_young_pending_rows(dsn: str, tmp_path: Path) -> None:
    await PostgresRegistry(dsn).upgrade()
    settings = Settings(data_dir=tmp_path, registry_url=dsn, pending_grace_seconds=600)
    service = assemble(settings)
    await service.start()
    try:
        await service.registry.create_app(App("app1", "secret"))
        live = record("L" * 20)
        abandoned = record("A" * 20, uploaded=(time.time() - 3600) * 1000)
        await service.registry.reserve(live)
        await service.registry.reserve(abandoned)
        assert await service.recovery.recover() >= 1
        left = [r.handle for r in await service.registry.pending(older_than=time.time() + 1)]
        assert left == [live.handle]
    finally:
        await service.close()


async def test_recovery_waits_for_an_overwrite_live_on_another_node(
    dsn: str, tmp_path: Path
) -> None:
    """Node B is overwriting (it holds the handle's lock and recorded its intent) when node
    A starts. A's recovery must not judge that intent before B's commit: it waits for the
    lock. B then commits and dies before its row update: A adopts the intent."""
    await PostgresRegistry(dsn).upgrade()
    settings = Settings(data_dir=tmp_path, registry_url=dsn)
    service = assemble(settings)
    writer = PostgresRegistry(dsn, pool_size=2, lock_pool_size=2)
    await service.start()
    await writer.open()
    try:
        await service.registry.create_app(App("app1", "secret"))
        row = record(sha256="old")
        await service.registry.reserve(row)
        await service.registry.commit(row)
        new = row.with_(size=3, sha256=hashlib.sha256(b"new").hexdigest(), version=2)
        async with writer.handle_lock(H):
            assert await writer.intend_overwrite(overwrites.intent_for(new))
            recovering = asyncio.create_task(service.recovery.recover())
            await asyncio.sleep(0.5)
            assert not recovering.done()  # waiting for B's lock, the intent unjudged
            path = tmp_path / "storage" / "app1" / "objects" / "default" / row.key
            path.parent.mkdir(parents=True)
            path.write_bytes(b"new")  # B's commit; B dies before its row update
        await recovering
        assert await service.registry.get(H) == new
        assert await service.registry.overwrite_intents(time.time() + 60) == []
    finally:
        await writer.close()
        await service.close()


async def test_rate_limit_budget_is_shared_by_every_node(nodes: list[PostgresRegistry]) -> None:
    from stowage.core.ratelimits import RateLimiter, RegistryBuckets, shared_buckets

    stores = [shared_buckets(reg) for reg in nodes]
    assert all(isinstance(s, RegistryBuckets) for s in stores)
    settings = Settings(rate_limit_app=0.01, rate_limit_ip=0, rate_limit_burst=500)  # burst 5
    limiters = [RateLimiter(settings, store) for store in stores]
    decisions = await asyncio.gather(*(limiters[i % 3].check("app1", None) for i in range(12)))
    allowed = [d.allowed for d in decisions if d is not None]
    assert allowed.count(True) == 5 and len(allowed) == 12
    refused = next(d for d in decisions if d is not None and not d.allowed)
    assert refused.retry_after > 0


async def test_exclusive_jobs_run_on_one_node_at_a_time(nodes: list[PostgresRegistry]) -> None:
    async with nodes[0].exclusive("upload-sweep") as first:
        assert first is True
        for other in nodes[1:]:
            async with other.exclusive("upload-sweep") as mine:
                assert mine is False
    async with nodes[2].exclusive("upload-sweep") as later:
        assert later is True


async def test_a_running_node_stays_ready_after_a_schema_upgrade(
    dsn: str, postgres_server: PostgresServer
) -> None:
    reg = PostgresRegistry(dsn)
    await reg.upgrade()
    await reg.open()
    try:
        postgres_server.psql(
            "INSERT INTO stowage_schema (version, name) VALUES (999, '0999_future.sql')",
            dsn.rsplit("/", 1)[-1],
        )
        await reg.ping()  # rolling upgrade: the old node keeps serving
        postgres_server.psql("DELETE FROM stowage_schema", dsn.rsplit("/", 1)[-1])
        with pytest.raises(errors.SchemaMismatch, match="stowage db upgrade"):
            await reg.ping()  # a schema behind the node (a restored old dump) is not ready
    finally:
        await reg.close()


def test_serve_refuses_to_start_on_a_schema_it_does_not_know(dsn: str, tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    env = {**os.environ, "STOWAGE_REGISTRY_URL": dsn}
    cmd = [sys.executable, "-m", "stowage", "--data-dir", str(tmp_path)]
    serve = subprocess.run(
        [*cmd, "serve", "--port", "0", "--cdn-port", "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert serve.returncode == 1
    assert "SCHEMA_MISMATCH" in serve.stderr and "stowage db upgrade" in serve.stderr
    upgrade = subprocess.run(
        [*cmd, "db", "upgrade"], env=env, capture_output=True, text=True, timeout=60
    )
    assert upgrade.returncode == 0 and "applied 0001_initial.sql" in upgrade.stdout
    version = subprocess.run(
        [*cmd, "db", "version"], env=env, capture_output=True, text=True, timeout=60
    )
    assert (
        version.stdout.strip() == f"schema {migrate.latest()}, this node needs {migrate.latest()}"
    )


async def test_a_store_abandoned_meanwhile_cannot_commit(nodes: list[PostgresRegistry]) -> None:
    await nodes[0].reserve(record())
    await nodes[1].abandon(H)  # another node took it for abandoned
    with pytest.raises(errors.Conflict):
        await nodes[0].commit(record())
    assert await nodes[0].get(H) is None
