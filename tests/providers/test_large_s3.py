"""A 256 MiB object through the S3 provider, generated and checked on the fly, in flat memory."""

from __future__ import annotations

import hashlib
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from stowage.storage.base import WriteOptions
from stowage.storage.s3 import MIB, from_config
from tests.servers.fx_s3 import PROVIDER_FIXTURES, S3Endpoint

SIZE = 256 * MIB
BLOCK = MIB
MAX_GROWTH = 100 * MIB


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"{field} missing from /proc/self/status")


def reset_peak_rss() -> int:
    """Resets VmHWM to the current RSS (Linux >= 4.0) and returns that RSS in bytes."""
    Path("/proc/self/clear_refs").write_text("5")
    return _status_kib("VmRSS") * 1024


def peak_rss() -> int:
    return _status_kib("VmHWM") * 1024


async def generated(digest: hashlib._Hash) -> AsyncIterator[bytes]:
    # Every block differs (its index is stamped in), so misplaced parts would show.
    base = bytearray(os.urandom(BLOCK))
    for i in range(SIZE // BLOCK):
        base[:8] = i.to_bytes(8, "big")
        block = bytes(base)
        digest.update(block)
        yield block


@pytest.mark.parametrize("server", [name.removeprefix("s3_") for name in PROVIDER_FIXTURES])
async def test_256_mib_round_trip_in_flat_memory(
    server: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    endpoint: S3Endpoint = request.getfixturevalue(f"{server}_endpoint")
    provider = from_config(endpoint.config(), tmp_path)
    bucket, key = provider.default_container, f"large/{os.urandom(6).hex()}.bin"
    sent, received = hashlib.sha256(), hashlib.sha256()
    try:
        baseline = reset_peak_rss()
        info = await provider.write(bucket, key, generated(sent), WriteOptions())
        write_growth = peak_rss() - baseline
        assert info.size == SIZE

        baseline = reset_peak_rss()
        size = 0
        async for chunk in provider.open(bucket, key):
            received.update(chunk)
            size += len(chunk)
        read_growth = peak_rss() - baseline

        print(
            f"\n{server}: peak RSS growth write {write_growth / MIB:.1f} MiB, "
            f"read {read_growth / MIB:.1f} MiB for {SIZE // MIB} MiB"
        )
        assert size == SIZE
        assert received.hexdigest() == sent.hexdigest()
        assert write_growth < MAX_GROWTH
        assert read_growth < MAX_GROWTH
    finally:
        await provider.delete(bucket, key)
        await provider.close()
