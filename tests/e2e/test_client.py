"""The client commands against a real ``stowage serve``: upload (plain and resumable),
download, meta, overwrite, ls, rm, profiles and errors."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.servers.stowage_serve import Running


def run(
    server: Running,
    *args: str,
    env: dict[str, str] | None = None,
    check: bool = True,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    base = {
        **os.environ,
        "STOWAGE_URL": server.server.api,
        "STOWAGE_KEY": server.key,
        "STOWAGE_SECRET": server.secret,
        "HOME": str(server.server.data_dir.parent / "home"),
    }
    out = subprocess.run(
        [sys.executable, "-m", "stowage", *args],
        capture_output=True, text=True, env={**base, **(env or {})}, cwd=cwd, timeout=120,
    )  # fmt: skip
    if check:
        assert out.returncode == 0, out.stderr
    return out


def write(path: Path, size: int, seed: int = 1) -> Path:
    block = hashlib.sha256(str(seed).encode()).digest() * 32768  # 1 MiB pattern
    with path.open("wb") as f:
        left = size
        while left > 0:
            f.write(block[: min(left, len(block))])
            left -= len(block)
    return path


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def test_upload_several_then_download_meta_ls_rm(server: Running, tmp_path: Path) -> None:
    small = write(tmp_path / "small.bin", 1000)
    big = write(tmp_path / "big.bin", 40 * 1024 * 1024 + 5, seed=2)  # multipart: 6 parts
    out = run(server, "upload", str(small), str(big), "--json")
    uploaded = json.loads(out.stdout)
    assert [u["filename"] for u in uploaded] == ["small.bin", "big.bin"]
    assert [u["size"] for u in uploaded] == [1000, 40 * 1024 * 1024 + 5]
    assert "all 2/2" in out.stderr and "100%" in out.stderr  # per-file and overall progress
    handle = uploaded[1]["handle"]

    target = tmp_path / "back.bin"
    run(server, "download", handle, "-o", str(target))
    assert sha256(target) == sha256(big)

    meta = json.loads(run(server, "meta", handle, "--sha256", "--json").stdout)
    assert meta["sha256"] == sha256(big) and meta["size"] == big.stat().st_size
    table = run(server, "meta", handle).stdout
    assert "filename" in table and "big.bin" in table

    listed = json.loads(run(server, "ls", "--json").stdout)
    assert {f["handle"] for f in listed} == {u["handle"] for u in uploaded}
    table = run(server, "ls").stdout.splitlines()
    assert table[0].split()[:3] == ["HANDLE", "FILENAME", "SIZE"] and len(table) == 3

    removed = json.loads(run(server, "rm", handle, "--json").stdout)
    assert removed == [{"handle": handle, "removed": True, "storage": "deleted"}]
    gone = run(server, "download", handle, "-o", str(tmp_path / "x"), check=False)
    assert gone.returncode != 0 and "HANDLE_NOT_FOUND" in gone.stderr
    assert not (tmp_path / "x").exists()


def test_overwrite_and_plain_table_output(server: Running, tmp_path: Path) -> None:
    first = write(tmp_path / "a.txt", 10)
    handle = json.loads(run(server, "upload", str(first), "--json", "-q").stdout)[0]["handle"]
    second = write(tmp_path / "b.txt", 20, seed=3)
    out = run(server, "overwrite", handle, str(second))
    assert handle in out.stdout
    meta = json.loads(run(server, "meta", handle, "--md5", "--json").stdout)
    assert meta["size"] == 20 and meta["md5"] == hashlib.md5(second.read_bytes()).hexdigest()


def test_resumes_an_interrupted_multipart_upload(server: Running, tmp_path: Path) -> None:
    """Kill the client after some parts; the second run sends only the missing parts."""
    big = write(tmp_path / "resume.bin", 48 * 1024 * 1024, seed=4)
    env = {
        "STOWAGE_URL": server.server.api,
        "STOWAGE_KEY": server.key,
        "STOWAGE_SECRET": server.secret,
        "HOME": str(server.server.data_dir.parent / "home"),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "stowage", "upload", str(big), "--json"],
        env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    state_dir = server.server.data_dir.parent / "home" / ".cache" / "stowage" / "uploads"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        states = list(state_dir.glob("*.json")) if state_dir.exists() else []
        if states and len(json.loads(states[0].read_text()).get("parts", {})) >= 2:
            break
        time.sleep(0.02)
    proc.kill()
    proc.wait()
    state = json.loads(next(state_dir.glob("*.json")).read_text())
    done_before = len(state["parts"])
    assert 2 <= done_before < 6, "the upload was not interrupted mid-way"
    out = run(server, "upload", str(big), "--json")
    result = json.loads(out.stdout)[0]
    assert result["size"] == big.stat().st_size
    assert not list(state_dir.glob("*.json")), "state file kept after completion"
    meta = json.loads(run(server, "meta", result["handle"], "--sha256", "--json").stdout)
    assert meta["sha256"] == sha256(big)


def test_profile_file_and_errors(server: Running, tmp_path: Path) -> None:
    profile = tmp_path / "p.toml"
    profile.write_text(
        f'[work]\nurl = "{server.server.api}/api"\nkey = "{server.key}"\n'
        f'secret = "{server.secret}"\n'
    )
    clean = {"STOWAGE_URL": "", "STOWAGE_KEY": "", "STOWAGE_SECRET": ""}
    out = run(
        server, "ls", "--profile", str(profile), "--profile-name", "work", "--json", env=clean
    )
    assert json.loads(out.stdout) == []
    nokey = run(server, "ls", env={**clean, "HOME": str(tmp_path)}, check=False)
    assert nokey.returncode == 2 and "STOWAGE_KEY" in nokey.stderr
    wrong = run(server, "ls", "--secret", "wrong", check=False)
    assert wrong.returncode == 1 and "INVALID_CREDENTIALS" in wrong.stderr
    down = run(server, "ls", "--url", "http://127.0.0.1:9", check=False)
    assert down.returncode == 1 and "cannot reach" in down.stderr


@pytest.mark.parametrize("command", ["download", "meta", "rm", "overwrite"])
def test_a_handle_beginning_with_a_dash_reaches_the_server(
    server: Running, tmp_path: Path, command: str
) -> None:
    """About 1 in 64 handles begin with "-": each command sends it as a handle (the server
    answers it is unknown), never refuses it as an unknown option."""
    handle = "-" + "Q" * 19
    extra = [str(write(tmp_path / "new.bin", 10))] if command == "overwrite" else []
    out = run(server, command, handle, *extra, check=False, cwd=tmp_path)
    assert out.returncode == 1 and "HANDLE_NOT_FOUND" in out.stderr, out.stderr
    assert "No such option" not in out.stderr


@pytest.mark.parametrize("command", ["upload", "download", "meta", "rm", "overwrite", "ls"])
def test_help(command: str) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "stowage", command, "--help"], capture_output=True, text=True
    )
    assert out.returncode == 0 and "--json" in out.stdout
