"""Checklist 44-47: real storage faults. A full filesystem (a 4 MiB tmpfs mounted for the
test), an S3 server (moto) behind a fault proxy that resets or stalls mid-transfer or is
down, and bytes that rot on disk after they were written. (EIO: test_crash.py, through
libfiu in a real server process.)"""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from stowage.config import Settings
from stowage.registry.base import App
from tests.api.harness import Harness
from tests.api.test_file_ops import basic, handle_of
from tests.reliability.checks import TOTALS, assert_clean, assert_intact, expect_error, fault
from tests.reliability.faultproxy import FaultProxy
from tests.servers.fx_s3 import S3Endpoint

AUTH = basic("app", "open-secret")
MiB = 1024 * 1024


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "small"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


@pytest.fixture
def settings(tmp_path: Path, request: pytest.FixtureRequest) -> Settings:
    storage: dict[str, Any] = {"type": "local"}
    if "small_disk" in request.fixturenames:
        storage["root"] = str(request.getfixturevalue("small_disk"))
    return Settings(
        data_dir=tmp_path / "data",
        access_log=False,
        fetch_allow_private=True,
        default_storage=storage,
    )


def _tmp_files(root: Path) -> list[Path]:
    return list((root / "tmp").iterdir())


async def test_disk_full_on_store_and_overwrite(harness: Harness, small_disk: Path) -> None:
    """44: ENOSPC mid-write is 507; the temporary file is removed; the old version stays."""
    result = await harness.store(b"v" * (2 * MiB), filename="old.bin")
    key = {"key": harness.open_app.api_key}
    resp = await harness.api.post("/api/store/S3", params=key, data=b"x" * (3 * MiB))
    fault()
    await expect_error(resp, 507, "STORAGE_FULL")
    assert _tmp_files(small_disk) == []
    resp = await harness.api.post(
        f"/api/file/{handle_of(result)}", data=b"n" * (3 * MiB), headers=AUTH
    )
    fault()
    await expect_error(resp, 507, "STORAGE_FULL")
    assert _tmp_files(small_disk) == []
    old = small_disk / "objects" / "default" / harness.open_app.api_key / result["key"]
    assert_intact(old.read_bytes(), b"v" * (2 * MiB))
    assert len([f async for f in harness.service.registry.all_files()]) == 1
    await assert_clean(harness.service)
    # Space comes back: the same overwrite now succeeds.
    resp = await harness.api.post(f"/api/file/{handle_of(result)}", data=b"n" * MiB, headers=AUTH)
    assert resp.status == 200


@pytest.fixture
async def s3_proxy(moto_endpoint: S3Endpoint) -> AsyncIterator[FaultProxy]:
    port = int(moto_endpoint.url.rsplit(":", 1)[1])
    async with FaultProxy(port) as proxy:
        yield proxy


async def _s3_app(harness: Harness, endpoint: S3Endpoint, proxy: FaultProxy, name: str) -> App:
    config = endpoint.config(
        endpoint_url=proxy.url, read_timeout=6, connect_timeout=6, max_attempts=1
    )
    app = App(api_key=name.ljust(20, "0")[:20], secret="open-secret", storage={"S3": config})
    await harness.service.registry.create_app(app)
    return app


def _objects(endpoint: S3Endpoint, prefix: str) -> list[str]:
    client = endpoint.client()
    try:
        listed = client.list_objects_v2(Bucket=endpoint.bucket, Prefix=prefix)
        uploads = client.list_multipart_uploads(Bucket=endpoint.bucket, Prefix=prefix)
    finally:
        client.close()
    keys = [o["Key"] for o in listed.get("Contents", [])]
    return keys + [f"upload:{u['Key']}" for u in uploads.get("Uploads", [])]


@pytest.mark.parametrize(
    ("mode", "after", "direction", "statuses"),
    [
        ("reset", 3 * MiB, "up", (502, 503, 504)),  # resets mid-upload
        ("stall", 3 * MiB, "up", (502, 503, 504)),  # stops reading mid-upload
        ("down", 0, "up", (502, 503, 504)),  # not there at all
        ("reset", 200, "down", (502, 503, 504)),  # resets while answering
    ],
)
async def test_backend_fault_mid_upload_leaves_nothing_and_retry_is_safe(
    harness: Harness,
    moto_endpoint: S3Endpoint,
    s3_proxy: FaultProxy,
    mode: str,
    after: int,
    direction: str,
    statuses: tuple[int, ...],
) -> None:
    """46 (tusd-e2e fault proxy): 502/503/504, no object or upload left, the retry works."""
    app = await _s3_app(harness, moto_endpoint, s3_proxy, f"s3{mode}{direction}")
    prefix = f"fault-{mode}-{direction}/"
    params = {"key": app.api_key, "path": prefix + "big.bin"}
    data = b"s" * (12 * MiB)  # two parts of 8 MiB: a multipart upload
    s3_proxy.mode, s3_proxy.after, s3_proxy.direction = mode, after, direction
    resp = await harness.api.post("/api/store/S3", params=params, data=data)
    fault(max(1, s3_proxy.faults))
    await expect_error(resp, statuses)
    assert [f async for f in harness.service.registry.all_files()] == []
    s3_proxy.mode = "pass"
    leftovers = _objects(moto_endpoint, prefix)
    visible = [k for k in leftovers if not k.startswith("upload:")]
    TOTALS.partial_files_seen += len(visible)
    assert visible == []
    if direction == "down":
        # Known and documented (docs/reliability.md, storage/s3.py): when the answer to
        # CreateMultipartUpload is lost, the service never learns the upload's id, so an
        # empty, invisible incomplete upload may stay until the bucket's
        # AbortIncompleteMultipartUpload lifecycle rule removes it.
        assert len(leftovers) <= 1
    else:
        assert leftovers == []
    retry = await harness.api.post("/api/store/S3", params=params, data=data)
    assert retry.status == 200, await retry.text()
    got = await harness.api.get(f"/api/file/{(await retry.json())['handle']}")
    assert_intact(await got.read(), data)


async def test_backend_fault_mid_overwrite_keeps_the_old_object(
    harness: Harness, moto_endpoint: S3Endpoint, s3_proxy: FaultProxy
) -> None:
    app = await _s3_app(harness, moto_endpoint, s3_proxy, "s3overwrite")
    stored = await harness.api.post(
        "/api/store/S3", params={"key": app.api_key, "path": "ow/keep.bin"}, data=b"old" * 1000
    )
    handle = (await stored.json())["handle"]
    s3_proxy.mode, s3_proxy.after = "reset", 2 * MiB
    resp = await harness.api.post(
        f"/api/file/{handle}",
        params={"key": app.api_key},
        data=b"n" * (12 * MiB),
        headers=AUTH,
    )
    fault()
    await expect_error(resp, (502, 503, 504))
    s3_proxy.mode = "pass"
    got = await harness.api.get(f"/api/file/{handle}", params={"key": app.api_key})
    assert_intact(await got.read(), b"old" * 1000)
    assert _objects(moto_endpoint, "ow/") == ["ow/keep.bin"]


async def test_bitrot_is_reported_never_served_when_verifying(harness: Harness) -> None:
    """47 (MinIO bitrot): bytes changed on disk after the write. `verify=true` (or the
    verify_downloads setting) refuses them with 500 INTEGRITY_ERROR; fsck-style checks and
    `stowage verify` (tests/reliability/test_integrity_cli.py) report them."""
    result = await harness.store(b"precious bytes" * 1000)
    handle = handle_of(result)
    path = harness.object_path(harness.open_app, result["key"])
    rotten = bytearray(path.read_bytes())
    rotten[5000] ^= 0x01
    path.write_bytes(bytes(rotten))
    fault()
    resp = await harness.api.get(f"/api/file/{handle}", params={"verify": "true"})
    body = await resp.json()
    assert resp.status == 500 and body["error"]["code"] == "INTEGRITY_ERROR", body
    resp = await harness.cdn.get(f"/{handle}", params={"verify": "true"})
    assert resp.status == 500
    harness.settings.verify_downloads = True
    resp = await harness.api.get(f"/api/file/{handle}")
    assert resp.status == 500
    path.write_bytes(b"precious bytes" * 1000)  # repaired from a backup: served again
    assert (await harness.api.get(f"/api/file/{handle}")).status == 200
