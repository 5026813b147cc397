"""Backups that are restored and served: ``stowage backup``/``restore`` for the embedded
default, taken while the server stores files; and the documented procedure for
PostgreSQL + S3 (``pg_dump``/``pg_restore`` and the store's own copy of the objects)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import aiohttp

from tests.migration.test_import import metadata, served
from tests.migration.test_migrate import change, store, store_many, stored_source
from tests.servers.fx_postgres import PostgresServer, _bin
from tests.servers.fx_s3 import S3Endpoint, make_bucket
from tests.servers.stowage_serve import StowageServe

FIELDS = {f: "true" for f in ("filename", "mimetype", "size", "uploaded", "path")}


def stowage(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "stowage", "--data-dir", str(data_dir), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=600)


async def backup_while_storing(
    source: StowageServe, key: str, bodies: dict[str, bytes], dest: Path
) -> subprocess.CompletedProcess[str]:
    """The backup runs while stores go on: it must not stop them, nor take a torn row."""
    storing = asyncio.ensure_future(store_many(source, key, bodies, 40))
    result = await asyncio.to_thread(stowage, source.data_dir, "backup", str(dest))
    await storing
    return result


def test_backup_taken_while_serving_restores_into_a_fresh_directory(tmp_path: Path) -> None:
    source = StowageServe(tmp_path / "source")
    key, secret = source.create_app()
    source.start()
    bodies: dict[str, bytes] = {}
    dest = tmp_path / "backup"
    try:
        asyncio.run(store_many(source, key, bodies, 60))
        asyncio.run(store(source, key, bodies, path="keep/here.txt"))
        first = next(iter(bodies))
        asyncio.run(change(source, secret, "POST", first, b"second version"))
        bodies[first] = b"second version"
        gone = list(bodies)[1]
        asyncio.run(change(source, secret, "DELETE", gone))
        del bodies[gone]
        before = dict(bodies)
        done = asyncio.run(backup_while_storing(source, key, bodies, dest))
        assert done.returncode == 0, done.stdout + done.stderr
        expected = {h: asyncio.run(metadata(source, h, **FIELDS)) for h in list(before)[:5]}
    finally:
        source.stop_quietly()

    manifest = json.loads((dest / "backup.json").read_text())
    assert manifest["failed"] == 0 and manifest["files"] >= len(before)
    rows = _rows(dest / "stowage.db")
    assert set(before) <= set(rows) <= set(bodies)  # everything before; nothing invented
    assert gone not in rows

    fresh = tmp_path / "fresh"
    done = stowage(fresh, "restore", str(dest))
    assert done.returncode == 0, done.stdout + done.stderr
    restored = StowageServe(fresh)
    restored.start()
    try:
        got = asyncio.run(served(restored, list(rows)))
        assert got == {h: bodies[h] for h in rows}
        assert all(hashlib.sha256(got[h]).hexdigest() == rows[h] for h in rows)
        for handle, meta in expected.items():
            assert asyncio.run(metadata(restored, handle, **FIELDS)) == meta
        assert asyncio.run(_status(restored, gone)) == 404
    finally:
        restored.stop_quietly()


def test_restore_refuses_a_damaged_backup_and_a_used_directory(tmp_path: Path) -> None:
    source, _, _ = stored_source(tmp_path / "source", 5)
    dest = tmp_path / "backup"
    assert stowage(source.data_dir, "backup", str(dest)).returncode == 0
    assert stowage(source.data_dir, "backup", str(dest)).returncode != 0  # never over one
    assert stowage(source.data_dir, "restore", str(dest)).returncode != 0  # has a registry

    victim = next(p for p in (dest / "storage").rglob("*") if p.is_file() and "objects" in p.parts)
    victim.write_bytes(b"damaged")
    fresh = tmp_path / "fresh"
    done = stowage(fresh, "restore", str(dest))
    assert done.returncode == 1
    assert "does not match" in done.stdout
    assert not (fresh / "stowage.db").exists()  # nothing a server would serve


def test_postgres_and_s3_backup_by_pg_dump_and_a_bucket_copy(
    tmp_path: Path, postgres_server: PostgresServer, moto_endpoint: S3Endpoint
) -> None:
    live = S3Endpoint(moto_endpoint.url, moto_endpoint.access_key, moto_endpoint.secret_key, "live")
    copy = S3Endpoint(live.url, live.access_key, live.secret_key, "backup-copy")
    make_bucket(live)
    make_bucket(copy)
    dsn = postgres_server.new_database()
    env = {"STOWAGE_REGISTRY_URL": dsn, "STOWAGE_DEFAULT_STORAGE": json.dumps(live.config())}
    _, _, bodies = stored_source(tmp_path / "source", 30, env)

    dump = tmp_path / "registry.dump"  # the procedure of docs/operations.md, step by step
    subprocess.run([_bin("pg_dump"), "-Fc", "-f", str(dump), dsn], check=True)
    _copy_bucket(live, copy)
    restored_dsn = postgres_server.new_database()
    subprocess.run([_bin("pg_restore"), "--no-owner", "-d", restored_dsn, str(dump)], check=True)

    env = {
        "STOWAGE_REGISTRY_URL": restored_dsn,
        "STOWAGE_DEFAULT_STORAGE": json.dumps(copy.config()),
    }
    restored = StowageServe(tmp_path / "restored", env=env)
    restored.start()
    try:
        assert asyncio.run(served(restored, list(bodies))) == bodies
    finally:
        restored.stop_quietly()


def _copy_bucket(source: S3Endpoint, dest: S3Endpoint) -> None:
    client = source.client()
    try:
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=source.bucket):
            for item in page.get("Contents", []):
                client.copy_object(
                    Bucket=dest.bucket,
                    Key=item["Key"],
                    CopySource={"Bucket": source.bucket, "Key": item["Key"]},
                )
    finally:
        client.close()


def _rows(path: Path) -> dict[str, str]:
    conn = sqlite3.connect(path)
    try:
        found = conn.execute("SELECT handle, sha256 FROM files WHERE state = 'stored'")
        return dict(found.fetchall())
    finally:
        conn.close()


async def _status(server: StowageServe, handle: str) -> int:
    async with aiohttp.ClientSession() as http, http.get(f"{server.cdn}/{handle}") as r:
        return r.status
