"""256 MiB through the Dropbox provider (upload session, streamed download) in flat memory."""

from __future__ import annotations

import hashlib
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import requests

from stowage.storage.base import WriteOptions
from stowage.storage.dropbox import from_config
from tests.servers.fx_dropbox import DropboxFake

MIB = 1024 * 1024
SIZE = 256 * MIB
BLOCK = 256 * 1024


def _kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"{field} missing from /proc/self/status")


def _reset_peak() -> None:
    # "5" resets VmHWM to the current RSS, so the peak measured is this test's own.
    Path("/proc/self/clear_refs").write_text("5")


async def test_256_mib_round_trip_in_flat_memory(dropbox_fake: DropboxFake) -> None:
    provider = from_config(dropbox_fake.config(), Path("."))
    seed = os.urandom(BLOCK)
    sent = hashlib.sha256()

    async def source() -> AsyncIterator[bytes]:
        for i in range(SIZE // BLOCK):
            block = i.to_bytes(8, "big") + seed[8:]
            sent.update(block)
            yield block

    try:
        _reset_peak()
        baseline = _kib("VmRSS")
        before = len(dropbox_fake.log())
        info = await provider.write("", "large.bin", source(), WriteOptions())
        assert info.size == SIZE
        routes = [e["route"] for e in dropbox_fake.log()[before:]]
        assert "files/upload" not in routes
        assert routes.count("files/upload_session/append_v2") == SIZE // provider.chunk_size - 1

        received, count = hashlib.sha256(), 0
        async for chunk in provider.open("", "large.bin"):
            received.update(chunk)
            count += len(chunk)
        assert count == SIZE
        assert received.hexdigest() == sent.hexdigest()

        growth_mib = (_kib("VmHWM") - baseline) / 1024
        print(f"dropbox 256 MiB round trip: peak RSS growth {growth_mib:.1f} MiB")
        assert growth_mib < 100
    finally:
        await provider.delete("", "large.bin")
        await provider.close()


def test_fake_caps_single_upload_at_150_mib(dropbox_fake: DropboxFake) -> None:
    # Like the real API, files/upload refuses more than 150 MiB: big files need sessions.
    def body() -> Iterator[bytes]:
        block = bytes(MIB)
        for _ in range(150):
            yield block
        yield b"!"

    response = requests.post(
        f"https://{dropbox_fake.host}/2/files/upload",
        headers={
            "Authorization": f"Bearer {dropbox_fake.token}",
            "Content-Type": "application/octet-stream",
            "Dropbox-API-Arg": '{"path": "/too-big.bin", "mode": "overwrite"}',
        },
        data=body(),
        verify=str(dropbox_fake.cert),
        timeout=60,
    )
    assert response.status_code == 409
    assert response.json() == {
        "error_summary": "payload_too_large/..",
        "error": {".tag": "payload_too_large"},
    }
