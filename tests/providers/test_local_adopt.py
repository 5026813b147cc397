"""A local store takes a finished file by renaming it (``LocalProvider.adopt``, used by
the derivative cache): the same bytes, durable and readable like a written file, the
spool file gone; across file systems it copies; a key that cannot be a file is refused
and the file left where it was."""

from __future__ import annotations

import asyncio
import errno
import os
import stat
from pathlib import Path

import pytest

from stowage import errors
from stowage.processing.cache import DerivativeCache
from stowage.storage import build_provider, local
from stowage.storage.base import WriteOptions
from stowage.storage.local import LocalProvider


def provider(tmp_path: Path) -> LocalProvider:
    made = build_provider({"type": "local", "root": str(tmp_path / "store")}, tmp_path)
    assert isinstance(made, LocalProvider)
    return made


def spooled(tmp_path: Path, data: bytes, name: str = "derivative-x.webp") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    path.chmod(0o600)  # as mkstemp makes them
    return path


async def read(store: LocalProvider, key: str) -> bytes:
    return b"".join([chunk async for chunk in store.open("default", key)])


@pytest.mark.parametrize("size", [0, 1, 65536, 1 << 20])
async def test_an_adopted_file_is_the_written_one(tmp_path: Path, size: int) -> None:
    store, data = provider(tmp_path), os.urandom(size)
    source = spooled(tmp_path, data)
    info = await store.adopt("default", "a/b/c.webp", source)
    assert info is not None and not source.exists()
    assert await read(store, "a/b/c.webp") == data
    assert info == await store.stat("default", "a/b/c.webp")
    assert stat.S_IMODE(store.local_path("default", "a/b/c.webp").stat().st_mode) == 0o644


async def test_adopting_over_a_key_replaces_it_whole(tmp_path: Path) -> None:
    store = provider(tmp_path)
    await store.adopt("default", "k.png", spooled(tmp_path, b"first"))
    await store.adopt("default", "k.png", spooled(tmp_path, b"second"))
    assert await read(store, "k.png") == b"second"


async def test_across_file_systems_the_cache_copies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = provider(tmp_path)
    cache, source = DerivativeCache(store), spooled(tmp_path, b"bytes")
    renames = []
    replace = os.replace

    def spool_on_another_disk(src: str, dst: str) -> None:
        renames.append(src)
        if Path(src) == source:
            raise OSError(errno.EXDEV, os.strerror(errno.EXDEV))
        replace(src, dst)

    monkeypatch.setattr(local.os, "replace", spool_on_another_disk)
    assert await store.adopt("default", "k.png", source) is None
    assert source.read_bytes() == b"bytes"  # left as it was
    info = await cache.put("k.png", source, "image/png")
    assert Path(renames[1]) == source and len(renames) == 3  # refused, then write's part
    assert await read(store, "k.png") == b"bytes" and info.size == 5
    assert source.read_bytes() == b"bytes"  # a copy: the spool file is its owner's
    assert list(store.tmp.iterdir()) == []


async def test_a_key_under_a_file_is_refused_and_the_file_kept(tmp_path: Path) -> None:
    store = provider(tmp_path)
    await store.write("default", "a", _one(b"x"), WriteOptions())
    source = spooled(tmp_path, b"kept")
    with pytest.raises(errors.KeyInUse):
        await store.adopt("default", "a/b.png", source)
    assert source.read_bytes() == b"kept"


async def test_the_derivative_cache_renames_into_a_local_store(tmp_path: Path) -> None:
    cache = DerivativeCache(provider(tmp_path))
    source = spooled(tmp_path, b"made")
    before = source.stat().st_ino
    info = await cache.put("d/1.webp", source, "image/webp")
    kept = cache.local_path("d/1.webp")
    assert kept is not None and kept.stat().st_ino == before  # no copy
    assert info.size == 4 and not source.exists()


async def _one(data: bytes):  # type: ignore[no-untyped-def]
    yield data


@pytest.mark.parametrize("size", [0, 1, 65536])
async def test_a_synced_file_is_adopted_without_a_thread(
    tmp_path: Path, size: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A job process's result, synced by it (``jobfiles.settle``), is renamed into the
    cache on the event loop: no executor, the same bytes, mode and stat as the other way."""
    from stowage.processing import jobfiles

    store, data = provider(tmp_path), os.urandom(size)
    source = spooled(tmp_path, data)
    jobfiles.settle(source)
    jobfiles.settle(tmp_path / "absent")  # a job that answered in its reply: nothing to do
    assert stat.S_IMODE(source.stat().st_mode) == 0o644

    def no_thread(*_: object) -> None:
        raise AssertionError("a synced file went through a thread")

    monkeypatch.setattr(asyncio.get_running_loop(), "run_in_executor", no_thread)
    info = await store.adopt("default", "a/b/c.webp", source, synced=True)
    monkeypatch.undo()
    assert info is not None and not source.exists()
    assert await read(store, "a/b/c.webp") == data
    assert info == await store.stat("default", "a/b/c.webp")
    assert stat.S_IMODE(store.local_path("default", "a/b/c.webp").stat().st_mode) == 0o644
