# ruff: noqa: E501  (tables of cases read best one per line)
"""Checklist 45, 48-51 and slow clients, against a real ``stowage serve`` process: a client
cut off by a TCP reset, a client sending one byte a second, EIO injected into the running
process with libfiu, and a SIGKILL exactly between the rename and the directory fsync (and
just before the rename).
(48 and 50 with a 40 MiB body: tests/e2e/test_serve.py.)"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from tests.api.test_file_ops import basic
from tests.reliability.checks import TOTALS, assert_intact, fault
from tests.reliability.faultproxy import FaultProxy
from tests.reliability.serve import Serve

MiB = 1024 * 1024
CRASHER = str(Path(__file__).with_name("crashing_serve.py"))


@pytest.fixture
def serve(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Serve]:
    options = getattr(request, "param", {})
    server = Serve(tmp_path / "data", **options)
    try:
        yield server
    finally:
        server.stop_quietly()


def _check_no_leftovers(server: Serve, key: str, expected_objects: int) -> None:
    files = server.files(key)
    partial = files.get("tmp", [])
    pending = [row for row in server.rows() if row[1] != "stored"]
    TOTALS.partial_files_seen += len(partial) + len(pending)
    assert partial == [] and pending == [], (files, pending)
    assert len(files.get("objects", [])) == expected_objects, files


async def _post(url: str, data: bytes, **kwargs: object) -> tuple[int, dict[str, object]]:
    async with aiohttp.ClientSession() as http, http.post(url, data=data, **kwargs) as resp:  # type: ignore[arg-type]
        return resp.status, await resp.json(content_type=None)


async def test_client_reset_after_n_bytes_leaves_no_object_or_row(serve: Serve) -> None:
    """51 (tusd TestUnexpectedNetworkReset), on store and on overwrite."""
    key, secret = serve.create_app()
    serve.start()
    status, body = await _post(f"{serve.api}/api/store/S3?key={key}", b"v1" * 1000)
    assert status == 200
    handle = str(body["handle"])
    async with FaultProxy(serve.port, mode="reset", after=3 * MiB) as proxy:
        for url, headers in (
            (f"{proxy.url}/api/store/S3?key={key}", {}),
            (f"{proxy.url}/api/file/{handle}?key={key}", basic("app", secret)),
        ):
            with pytest.raises(aiohttp.ClientError):
                await _post(url, b"r" * (8 * MiB), headers=headers)
            fault()
    await asyncio.sleep(0.5)  # the server notices the reset
    _check_no_leftovers(serve, key, expected_objects=1)
    assert len(serve.rows()) == 1
    async with aiohttp.ClientSession() as http, http.get(f"{serve.api}/api/file/{handle}") as r:
        assert_intact(await r.read(), b"v1" * 1000)


@pytest.mark.parametrize("serve", [{"env": {"STOWAGE_BODY_IDLE_TIMEOUT": "1"}}], indirect=True)
async def test_a_client_sending_one_byte_a_second_is_timed_out(serve: Serve) -> None:
    """Slow clients: raw, multipart and overwrite bodies stall past body_idle_timeout: 408,
    nothing stored, the old version kept."""
    key, secret = serve.create_app()
    serve.start()
    _status, body = await _post(f"{serve.api}/api/store/S3?key={key}", b"old")
    handle = str(body["handle"])
    multipart = (
        b'--B\r\nContent-Disposition: form-data; name="fileUpload"; filename="a"\r\n\r\n'
        + b"m" * 4096
    )
    cases = [
        (f"/api/store/S3?key={key}", "application/octet-stream", b"s" * 4096, ""),
        (f"/api/store/S3?key={key}", "multipart/form-data; boundary=B", multipart, ""),
        (f"/api/file/{handle}?key={key}", "text/plain", b"o" * 4096, basic("app", secret)["Authorization"]),
    ]  # fmt: skip
    async with FaultProxy(serve.port, mode="trickle", after=1024, interval=1.6) as proxy:
        for path, ctype, payload, auth in cases:
            head = (
                f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: {ctype}\r\n"
                f"Content-Length: {len(payload) + 100}\r\nConnection: close\r\n"
                + (f"Authorization: {auth}\r\n" if auth else "")
                + "\r\n"
            ).encode()
            reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
            writer.write(head + payload)
            answer = await asyncio.wait_for(reader.read(), 20)
            writer.close()
            TOTALS.inputs_tried += 1
            fault()
            assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
            assert b'"REQUEST_TIMEOUT"' in answer
    _check_no_leftovers(serve, key, expected_objects=1)
    async with aiohttp.ClientSession() as http, http.get(f"{serve.api}/api/file/{handle}") as r:
        assert_intact(await r.read(), b"old")


@pytest.mark.parametrize(
    "serve", [{"module": [CRASHER], "env": {"STOWAGE_TEST_CRASH_ARM": "armed"}}], indirect=True
)
async def test_crash_between_rename_and_directory_fsync(serve: Serve) -> None:
    """49: SIGKILL after the rename, before the directory fsync and the registry update.
    A store in that window: after restart, 404 and nothing left (its pending row and object
    are removed). An overwrite: after restart the file is the new version whole and its
    row describes it (the overwrite's intent, recorded before the rename, is adopted:
    core/overwrites.py); `stowage verify` says ok."""
    armed = serve.data_dir.parent / "armed"
    serve.env["STOWAGE_TEST_CRASH_ARM"] = str(armed)
    key, secret = serve.create_app()
    serve.start()
    _status, body = await _post(f"{serve.api}/api/store/S3?key={key}", b"v1" * 5000)
    handle = str(body["handle"])
    armed.touch()
    with pytest.raises(aiohttp.ClientError):
        await _post(f"{serve.api}/api/store/S3?key={key}", b"new" * 5000)
    fault()
    assert serve.proc is not None and serve.proc.wait(10) == -9
    _restart(serve)
    assert [row[0] for row in serve.rows()] == [handle]  # the crashed store left no handle
    _check_no_leftovers(serve, key, expected_objects=1)
    serve.kill()
    serve.module, serve.env = [CRASHER], {"STOWAGE_TEST_CRASH_ARM": str(armed)}
    serve.start()
    await _crash_overwriting(serve, handle, secret, b"v2" * 9000)
    _restart(serve)
    await _expect_version(serve, key, handle, b"v2" * 9000)


@pytest.mark.parametrize(
    "serve",
    [{"module": [CRASHER], "env": {"STOWAGE_TEST_CRASH_POINT": "before-rename"}}],
    indirect=True,
)
async def test_crash_before_the_rename_keeps_the_old_version_and_its_row(serve: Serve) -> None:
    """49, the other side: SIGKILL once the overwrite recorded its intent and its new file
    is complete, before the rename. After restart the intent is dropped (storage still
    holds the old version): v1 content, v1 row, `stowage verify` ok, no temporary file."""
    armed = serve.data_dir.parent / "armed"
    serve.env["STOWAGE_TEST_CRASH_ARM"] = str(armed)
    key, secret = serve.create_app()
    serve.start()
    _status, body = await _post(f"{serve.api}/api/store/S3?key={key}", b"v1" * 5000)
    handle = str(body["handle"])
    armed.touch()
    await _crash_overwriting(serve, handle, secret, b"v2" * 9000)
    assert serve.intents() == [(handle, 2)]  # recorded before the crash
    assert len(serve.files(key)["tmp"]) == 1  # the new version, never renamed
    _restart(serve)
    await _expect_version(serve, key, handle, b"v1" * 5000)


async def _crash_overwriting(serve: Serve, handle: str, secret: str, data: bytes) -> None:
    with pytest.raises(aiohttp.ClientError):
        await _post(f"{serve.api}/api/file/{handle}", data, headers=basic("app", secret))
    fault()
    assert serve.proc is not None and serve.proc.wait(10) == -9


def _restart(serve: Serve) -> None:
    serve.module, serve.env = ["-m", "stowage"], {}
    serve.start()


async def _expect_version(serve: Serve, key: str, handle: str, data: bytes) -> None:
    """The file is ``data`` whole and its row (size, sha256) describes exactly that."""
    async with aiohttp.ClientSession() as http, http.get(f"{serve.api}/api/file/{handle}") as r:
        content = await r.read()
    assert_intact(content, data)
    assert serve.rows() == [(handle, "stored", len(data), hashlib.sha256(data).hexdigest())]
    assert serve.intents() == []
    _check_no_leftovers(serve, key, expected_objects=1)
    verify = subprocess.run(
        serve_cli(serve, "verify", "--", handle), capture_output=True, text=True
    )
    assert verify.returncode == 0 and f"{handle}  ok" in verify.stdout, verify.stdout


def serve_cli(serve: Serve, *args: str) -> list[str]:
    import sys

    return [sys.executable, "-m", "stowage", "--data-dir", str(serve.data_dir), *args]


@pytest.mark.parametrize("serve", [{"wrapper": ["fiu-run", "-x"]}], indirect=True)
@pytest.mark.parametrize("point", ["posix/io/sync/fsync", "posix/io/rw/write"])
async def test_eio_on_write_or_fsync_is_never_acknowledged(serve: Serve, point: str) -> None:
    """45 (libfiu): EIO injected into the running server; store and overwrite fail with a
    5xx, never a 200; the old version and the registry are untouched."""
    key, secret = serve.create_app()
    serve.start()
    status, body = await _post(f"{serve.api}/api/store/S3?key={key}", b"safe" * 1000)
    assert status == 200
    handle = str(body["handle"])
    assert serve.proc is not None
    ctrl = ["fiu-ctrl", "-c", f"enable name={point},failinfo=5", str(serve.proc.pid)]
    subprocess.run(ctrl, check=True)
    fault()
    try:
        for url, headers in (
            (f"{serve.api}/api/store/S3?key={key}", {}),
            (f"{serve.api}/api/file/{handle}?key={key}", basic("app", secret)),
        ):
            with contextlib.suppress(aiohttp.ClientError):
                status, body = await _post(url, b"lost" * 100_000, headers=headers)
                TOTALS.inputs_tried += 1
                assert status >= 500, body
    finally:
        subprocess.run(["fiu-ctrl", "-c", f"disable name={point}", str(serve.proc.pid)], check=True)
    assert [row[0] for row in serve.rows() if row[1] == "stored"] == [handle]
    async with aiohttp.ClientSession() as http, http.get(f"{serve.api}/api/file/{handle}") as r:
        assert_intact(await r.read(), b"safe" * 1000)
    _check_no_leftovers(serve, key, expected_objects=1)
