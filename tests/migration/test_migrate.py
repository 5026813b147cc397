"""``stowage migrate`` from the embedded default (SQLite + local disk) to PostgreSQL + S3
(moto), run as the operator runs it, killed halfway, resumed, given a second pass with
``--prune``; then a Stowage on the new configuration serves the same handles and bytes."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp

from tests.migration.test_import import kill_halfway, metadata, served
from tests.servers.fx_postgres import PostgresServer
from tests.servers.fx_s3 import S3Endpoint, make_bucket
from tests.servers.stowage_serve import StowageServe

COUNT = 300


def toml_config(data_dir: Path, dsn: str, storage: dict[str, Any]) -> str:
    table = ", ".join(f"{k} = {json.dumps(v)}" for k, v in storage.items())
    return (
        f"data_dir = {json.dumps(str(data_dir))}\n"
        f"registry_url = {json.dumps(dsn)}\n"
        f"default_storage = {{ {table} }}\n"
    )


async def store(server: StowageServe, key: str, bodies: dict[str, bytes], **query: str) -> str:
    async with aiohttp.ClientSession() as http:
        url = f"{server.api}/api/store/S3"
        name = f"f{len(bodies)}.bin"
        body = f"{name} ".encode() * (1 + len(bodies) % 13)
        async with http.post(url, params={"key": key, "filename": name, **query}, data=body) as r:
            assert r.status == 200, await r.text()
            handle: str = (await r.json())["handle"]
    bodies[handle] = body
    return handle


async def store_many(server: StowageServe, key: str, bodies: dict[str, bytes], n: int) -> None:
    slots = asyncio.Semaphore(8)

    async def one() -> None:
        async with slots:
            await store(server, key, bodies)

    await asyncio.gather(*(one() for _ in range(n)))


def stored_source(
    root: Path, count: int, env: dict[str, str] | None = None
) -> tuple[StowageServe, str, dict[str, bytes]]:
    """A Stowage with ``count`` files stored in one app, stopped again: (server, key, bodies)."""
    source = StowageServe(root, env=env) if env else StowageServe(root)
    if env:
        source.cli("db", "upgrade")
    key, _ = source.create_app()
    source.start()
    bodies: dict[str, bytes] = {}
    try:
        asyncio.run(store_many(source, key, bodies, count))
    finally:
        source.stop_quietly()
    return source, key, bodies


async def change(
    server: StowageServe, secret: str, method: str, handle: str, body: bytes = b""
) -> None:
    auth = {"Authorization": aiohttp.encode_basic_auth("app", secret)}
    async with aiohttp.ClientSession() as http:
        url = f"{server.api}/api/file/{handle}"
        async with http.request(method, url, data=body or None, headers=auth) as r:
            assert r.status == 200, await r.text()


def migrate(source: StowageServe, target_toml: Path, *extra: str) -> list[str]:
    return [
        *(sys.executable, "-m", "stowage", "--data-dir", str(source.data_dir)),
        *("migrate", "--to", str(target_toml), *extra),
    ]


def run(source: StowageServe, target_toml: Path, *extra: str) -> dict[str, Any]:
    report = target_toml.parent / "report.json"
    out = subprocess.run(
        migrate(source, target_toml, "--report", str(report), *extra),
        capture_output=True,
        text=True,
        env=source.environment(),
        timeout=600,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    result: dict[str, Any] = json.loads(report.read_text())
    return result


def stored_rows(postgres: PostgresServer, dsn: str) -> int:
    database = dsn.rsplit("/", 1)[1]
    return int(postgres.psql("SELECT count(*) FROM files WHERE state = 'stored'", database))


def bucket_keys(s3: S3Endpoint) -> list[str]:
    client = s3.client()
    try:
        pages = client.get_paginator("list_objects_v2").paginate(Bucket=s3.bucket)
        return [o["Key"] for page in pages for o in page.get("Contents", [])]
    finally:
        client.close()


def test_sqlite_and_local_disk_to_postgres_and_s3(
    tmp_path: Path, postgres_server: PostgresServer, moto_endpoint: S3Endpoint
) -> None:
    source = StowageServe(tmp_path / "source")
    key, secret = source.create_app()
    source.start()
    bodies: dict[str, bytes] = {}
    try:
        asyncio.run(store_many(source, key, bodies, COUNT))
        pathed = asyncio.run(store(source, key, bodies, path="docs/report.txt"))
        first = next(iter(bodies))
        asyncio.run(change(source, secret, "POST", first, b"overwritten once"))
        bodies[first] = b"overwritten once"
        s3 = S3Endpoint(moto_endpoint.url, moto_endpoint.access_key, moto_endpoint.secret_key)
        s3 = S3Endpoint(s3.url, s3.access_key, s3.secret_key, "migrated")
        make_bucket(s3)
        dsn = postgres_server.new_database()
        target_toml = tmp_path / "target.toml"
        target_toml.write_text(toml_config(tmp_path / "target", dsn, s3.config()))

        # A first pass while the source serves, killed halfway.
        killed = subprocess.Popen(
            migrate(source, target_toml, "--concurrency", "2"),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=source.environment(),
        )
        kill_halfway(killed, lambda: _rows_or_zero(postgres_server, dsn), COUNT // 3)
        done_before = stored_rows(postgres_server, dsn)

        report = run(source, target_toml)
        assert report["failed"] == 0 and report["apps"] == 1
        assert report["skipped"] >= done_before
        assert report["copied"] + report["skipped"] == len(bodies)
        assert len(bucket_keys(s3)) == len(bodies)  # nothing the killed run left behind

        # The final pass, after writes went on at the source: only the changes move.
        added = asyncio.run(store(source, key, bodies))
        gone = list(bodies)[5]
        asyncio.run(change(source, secret, "DELETE", gone))
        del bodies[gone]
        report = run(source, target_toml, "--prune")
        assert (report["copied"], report["pruned"], report["failed"]) == (1, 1, 0)
        assert report["skipped"] == len(bodies) - 1
        assert stored_rows(postgres_server, dsn) == len(bodies) == len(bucket_keys(s3))
        assert asyncio.run(served(source, list(bodies))) == bodies  # the source is intact
    finally:
        source.stop_quietly()

    target = StowageServe(tmp_path / "target", env={"STOWAGE_CONFIG": str(target_toml)})
    target.start()
    source.start()
    try:
        assert asyncio.run(served(target, list(bodies))) == bodies
        for handle in (first, pathed, added):
            fields = {f: "true" for f in ("filename", "mimetype", "size", "uploaded", "path")}
            before = asyncio.run(metadata(source, handle, **fields))
            after = asyncio.run(metadata(target, handle, **fields))
            assert after == before, handle
        assert any(k.endswith("docs/report.txt") for k in bucket_keys(s3))
    finally:
        target.stop_quietly()
        source.stop_quietly()
    back_the_other_way(tmp_path, target_toml, bodies)


def back_the_other_way(tmp_path: Path, target_toml: Path, bodies: dict[str, bytes]) -> None:
    """PostgreSQL + S3 back to SQLite + local disk: the way back after a switch."""
    back_toml = tmp_path / "back.toml"
    back_toml.write_text(f"data_dir = {json.dumps(str(tmp_path / 'back'))}\n")
    command = [sys.executable, "-m", "stowage", "--config", str(target_toml), "migrate"]
    out = subprocess.run(
        [*command, "--to", str(back_toml)], capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stdout + out.stderr
    back = StowageServe(tmp_path / "back")
    back.start()
    try:
        assert asyncio.run(served(back, list(bodies))) == bodies
    finally:
        back.stop_quietly()


def _rows_or_zero(postgres: PostgresServer, dsn: str) -> int:
    try:
        return stored_rows(postgres, dsn)
    except (subprocess.CalledProcessError, RuntimeError):  # the schema is not there yet
        return 0


def test_storage_option_moves_an_apps_files_to_another_provider(tmp_path: Path) -> None:
    """Any provider to any: the app's files go to the storage ``--storage`` gives it."""
    source, key, bodies = stored_source(tmp_path / "source", 12)
    elsewhere = tmp_path / "other-disk"
    storage = json.dumps({"S3": {"type": "local", "root": str(elsewhere)}})
    target_toml = tmp_path / "target.toml"
    target_toml.write_text(f"data_dir = {json.dumps(str(tmp_path / 'target'))}\n")
    report = run(source, target_toml, "--storage", storage, "--app", key)
    assert (report["copied"], report["failed"]) == (len(bodies), 0)
    moved = [p for p in (elsewhere / "objects").rglob("*") if p.is_file()]
    assert sorted(p.read_bytes() for p in moved) == sorted(bodies.values())
    target = StowageServe(tmp_path / "target")
    target.start()
    try:
        assert asyncio.run(served(target, list(bodies))) == bodies
    finally:
        target.stop_quietly()
