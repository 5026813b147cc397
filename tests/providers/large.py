"""Shared body of the large-object tests (test_large_*.py): stream >= 256 MiB through a
provider and back, generated on the fly, and measure this process's peak memory."""

from __future__ import annotations

import hashlib
import os
import secrets
from collections.abc import AsyncIterator
from pathlib import Path

from stowage.storage.base import Provider, WriteOptions

MIB = 1024 * 1024


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def reset_peak_rss() -> int:
    """Resets VmHWM to the current RSS (Linux: clear_refs 5); returns the RSS in KiB."""
    Path("/proc/self/clear_refs").write_text("5")
    return _status_kib("VmRSS")


def peak_rss_kib() -> int:
    return _status_kib("VmHWM")


async def round_trip(provider: Provider, size_mib: int = 256) -> tuple[int, float]:
    """Writes and reads back ``size_mib`` MiB; returns (bytes, peak RSS growth in MiB)."""
    block = os.urandom(MIB)
    sent = hashlib.sha256()

    async def source() -> AsyncIterator[bytes]:
        for i in range(size_mib):
            # Vary each MiB so that a misplaced piece changes the digest.
            piece = i.to_bytes(8, "big") + block[8:]
            sent.update(piece)
            yield piece

    key = f"large/{secrets.token_hex(6)}.bin"
    container = provider.default_container
    baseline = reset_peak_rss()
    info = await provider.write(container, key, source(), WriteOptions())
    received = hashlib.sha256()
    total = 0
    async for chunk in provider.open(container, key):
        received.update(chunk)
        total += len(chunk)
    growth = (peak_rss_kib() - baseline) / 1024
    await provider.delete(container, key)
    assert info.size == size_mib * MIB
    assert total == size_mib * MIB
    assert received.hexdigest() == sent.hexdigest()
    return total, growth
