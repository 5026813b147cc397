"""``stowage import`` from a second Stowage playing the old service (security on: the
files are read with the old app's secret), run as the operator runs it: a subprocess."""

from __future__ import annotations

import asyncio
import hashlib
import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest

from stowage.core.security import encode_policy, sign
from tests.servers.stowage_serve import StowageServe

COUNT = 1000


@dataclass
class Old:
    server: StowageServe
    key: str
    secret: str
    files: dict[str, bytes]  # handle -> bytes

    def query(self, **extra: str) -> dict[str, str]:
        policy = encode_policy({"expiry": int(time.time()) + 3600})
        return {"key": self.key, "policy": policy, "signature": sign(self.secret, policy), **extra}


def body_of(i: int) -> bytes:
    return hashlib.sha256(str(i).encode()).hexdigest().encode() * (1 + i % 7)


async def store_many(old: Old, count: int) -> None:
    slots = asyncio.Semaphore(16)

    async def one(http: aiohttp.ClientSession, i: int) -> None:
        async with slots:
            url = f"{old.server.api}/api/store/S3"
            params = old.query(filename=f"file-{i}.txt", mimetype="text/plain")
            async with http.post(url, params=params, data=body_of(i)) as r:
                assert r.status == 200, await r.text()
                old.files[(await r.json())["handle"]] = body_of(i)

    async with aiohttp.ClientSession() as http:
        await asyncio.gather(*(one(http, i) for i in range(count)))


@pytest.fixture(scope="module")
def old(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Old]:
    server = StowageServe(tmp_path_factory.mktemp("old") / "data")
    created = json.loads(server.cli("apps", "create", "--json", "--security"))
    server.start()
    try:
        found = Old(server, created["api_key"], created["secret"], {})
        asyncio.run(store_many(found, COUNT))
        yield found
    finally:
        server.stop_quietly()


def new_side(root: Path) -> tuple[StowageServe, str]:
    server = StowageServe(root / "data")
    return server, server.create_app()[0]


def import_args(new: StowageServe, key: str, old: Old, listing: Path, *extra: str) -> list[str]:
    return [
        *(sys.executable, "-m", "stowage", "--data-dir", str(new.data_dir), "import"),
        *(str(listing), "--app", key, "--from", old.server.cdn),
        *("--old-key", old.key, "--old-secret", old.secret, *extra),
    ]


def run_import(
    new: StowageServe, key: str, old: Old, listing: Path, *extra: str
) -> tuple[int, dict[str, object], str]:
    report = listing.parent / "report.json"
    out = subprocess.run(
        import_args(new, key, old, listing, "--report", str(report), *extra),
        capture_output=True,
        text=True,
        env=new.environment(),
        timeout=600,
    )
    return out.returncode, json.loads(report.read_text()), out.stdout + out.stderr


def kill_halfway(run: subprocess.Popen[bytes], progress: Callable[[], int], halfway: int) -> None:
    """SIGKILLs ``run`` once ``progress()`` reaches ``halfway`` (within five minutes)."""
    deadline = time.monotonic() + 300
    while progress() < halfway:
        assert run.poll() is None, "the run ended before it was killed"
        assert time.monotonic() < deadline
        time.sleep(0.05)
    run.send_signal(signal.SIGKILL)
    run.wait(10)


def journal_lines(new: StowageServe, key: str) -> int:
    path = new.data_dir / "imports" / f"{key}.jsonl"
    return len(path.read_text().splitlines()) if path.exists() else 0


def stored_objects(new: StowageServe, key: str) -> list[Path]:
    root = new.data_dir / "storage" / key
    return [p for p in root.rglob("*") if p.is_file() and "tmp" not in p.relative_to(root).parts]


async def served(server: StowageServe, handles: list[str]) -> dict[str, bytes]:
    slots = asyncio.Semaphore(16)

    async def one(http: aiohttp.ClientSession, handle: str) -> tuple[str, bytes]:
        async with slots, http.get(f"{server.cdn}/{handle}") as r:
            assert r.status == 200, (handle, r.status)
            return handle, await r.read()

    async with aiohttp.ClientSession() as http:
        return dict(await asyncio.gather(*(one(http, h) for h in handles)))


async def metadata(server: StowageServe, handle: str, **query: str) -> dict[str, object]:
    async with aiohttp.ClientSession() as http:
        url = f"{server.api}/api/file/{handle}/metadata"
        async with http.get(url, params=query) as r:
            assert r.status == 200, await r.text()
            result: dict[str, object] = await r.json()
            return result


def test_import_survives_kill_9_and_keeps_every_handle_and_byte(old: Old, tmp_path: Path) -> None:
    new, key = new_side(tmp_path)
    listing = tmp_path / "handles.txt"
    listing.write_text("".join(f"{h}\n" for h in old.files))
    first = subprocess.Popen(
        import_args(new, key, old, listing, "--concurrency", "4"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=new.environment(),
    )
    kill_halfway(first, lambda: journal_lines(new, key), COUNT // 2)
    done_before = journal_lines(new, key)
    assert COUNT // 2 <= done_before < COUNT

    code, report, output = run_import(new, key, old, listing)
    assert code == 0, output
    assert report["failed"] == 0
    assert f"{COUNT // 20}/{COUNT} (" in output and f"{COUNT}/{COUNT} (" in output  # progress
    # Nothing twice: what the killed run finished is skipped, the rest imported once.
    assert report["skipped"] >= done_before
    assert report["imported"] == COUNT - report["skipped"]
    assert len(stored_objects(new, key)) == COUNT  # no copy the killed run left behind

    again, report2, _ = run_import(new, key, old, listing, "--trust-journal")
    assert again == 0 and report2["imported"] == 0 and report2["skipped"] == COUNT

    new.start()
    try:
        assert asyncio.run(served(new, list(old.files))) == old.files
        for handle in list(old.files)[:20]:
            before = asyncio.run(metadata(old.server, handle, **old.query()))
            after = asyncio.run(metadata(new, handle))
            for field in ("filename", "mimetype", "size", "uploaded"):
                assert after[field] == before[field], (handle, field)
    finally:
        new.stop_quietly()


def test_wrong_size_or_hash_from_the_old_side_is_a_failure_not_a_file(
    old: Old, tmp_path: Path
) -> None:
    new, key = new_side(tmp_path)
    handles = list(old.files)[:4]
    good = old.files[handles[3]]
    export = [
        {"handle": handles[0], "size": len(old.files[handles[0]]) + 1},
        {"handle": handles[1], "sha256": "0" * 64},
        {"handle": handles[2], "md5": "f" * 32},
        {
            "url": f"https://cdn.example/{handles[3]}",
            "filename": "kept.txt",
            "mimetype": "text/plain",
            "size": len(good),
            "uploaded": "2019-05-01T10:00:00Z",
            "sha256": hashlib.sha256(good).hexdigest(),
        },
        {"handle": "not/a-handle"},
    ]
    listing = tmp_path / "export.json"
    listing.write_text(json.dumps({"files": export}))
    code, report, output = run_import(new, key, old, listing)
    assert code == 1, output
    assert report["imported"] == 1 and report["failed"] == 4
    reasons = {f["handle"]: f["reason"] for f in report["failures"]}  # type: ignore[union-attr]
    assert "bytes" in reasons[handles[0]]
    assert "SHA-256" in reasons[handles[1]]
    assert "MD5" in reasons[handles[2]]
    assert len(stored_objects(new, key)) == 1  # the failed ones left nothing behind
    new.start()
    try:
        assert asyncio.run(served(new, [handles[3]])) == {handles[3]: good}
        meta = asyncio.run(metadata(new, handles[3]))
        assert meta["filename"] == "kept.txt"
        assert meta["uploaded"] == 1556704800000  # the export's time, not the import's
        for handle in handles[:3]:
            with pytest.raises(AssertionError):
                asyncio.run(served(new, [handle]))
    finally:
        new.stop_quietly()


def test_a_different_file_is_reported_unless_overwrite(old: Old, tmp_path: Path) -> None:
    new, key = new_side(tmp_path)
    handle = list(old.files)[-1]
    listing = tmp_path / "one.csv"
    listing.write_text(f"Handle,Filename\n{handle},changed.bin\n")
    code, report, output = run_import(new, key, old, listing)
    assert code == 0 and report["imported"] == 1, output

    async def overwrite_on_the_old_side() -> None:
        async with aiohttp.ClientSession() as http:
            url = f"{old.server.api}/api/file/{handle}"
            async with http.post(url, params=old.query(), data=b"new content") as r:
                assert r.status == 200, await r.text()

    asyncio.run(overwrite_on_the_old_side())
    old.files[handle] = b"new content"
    code, report, output = run_import(new, key, old, listing)
    assert code == 1 and report["failed"] == 1, output
    assert "--overwrite" in report["failures"][0]["reason"]  # type: ignore[index]
    code, report, output = run_import(new, key, old, listing, "--overwrite")
    assert code == 0 and report["imported"] == 1, output
    new.start()
    try:
        assert asyncio.run(served(new, [handle])) == {handle: b"new content"}
        assert asyncio.run(metadata(new, handle))["filename"] == "changed.bin"
    finally:
        new.stop_quietly()
