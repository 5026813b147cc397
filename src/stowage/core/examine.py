"""On-demand facts about stored bytes: hashes in one streaming pass, and EXIF.

Hashes: the file is read once; each chunk is fed to every requested hash.
hashlib releases the GIL on large buffers, so the hashes are split across two
worker threads and run on both cores while the next chunk is read.
"""

from __future__ import annotations

import asyncio
import hashlib
import tempfile
import warnings
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from stowage import errors

HASHES = ("md5", "sha1", "sha224", "sha256", "sha384", "sha512")
# Rough relative cost per byte, to balance the two worker threads.
_COST = {"md5": 2, "sha1": 1, "sha224": 3, "sha256": 3, "sha384": 2, "sha512": 2}
_POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="hash")


def _groups(names: list[str]) -> list[list[str]]:
    groups: list[list[str]] = [[], []]
    load = [0, 0]
    for name in sorted(names, key=lambda n: -_COST[n]):
        i = load.index(min(load))
        groups[i].append(name)
        load[i] += _COST[name]
    return [g for g in groups if g]


async def hash_stream(chunks: AsyncIterator[bytes], names: list[str]) -> dict[str, str]:
    if not names:
        return {}
    hashers = {n: hashlib.new(n) for n in names}
    loop = asyncio.get_running_loop()
    groups = _groups(names)
    pending: list[asyncio.Future[None]] = []
    async for chunk in chunks:
        await asyncio.gather(*pending)
        pending = [
            loop.run_in_executor(_POOL, _update, [hashers[n] for n in group], chunk)
            for group in groups
        ]
    await asyncio.gather(*pending)
    return {n: h.hexdigest() for n, h in hashers.items()}


def _update(hashers: list[Any], chunk: bytes) -> None:
    for h in hashers:
        h.update(chunk)


async def read_exif(
    chunks: AsyncIterator[bytes],
    local_path: Path | None,
    *,
    max_bytes: int,
    max_pixels: int,
    timeout: float,
    spool_dir: Path,
) -> dict[str, Any]:
    """EXIF tags of an image as JSON-safe values; {} when it has none or is no image."""
    loop = asyncio.get_running_loop()
    if local_path is not None:
        job: Callable[[], dict[str, Any]] = lambda: _exif_from(local_path, max_pixels)  # noqa: E731
        return await _time_boxed(loop.run_in_executor(None, job), timeout)
    spool_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=spool_dir, suffix=".exif") as spool:
        written = 0
        async for chunk in chunks:
            spool.write(chunk[: max_bytes - written])
            written += len(chunk)
            if written >= max_bytes:
                break
        spool.flush()
        path = Path(spool.name)
        return await _time_boxed(
            loop.run_in_executor(None, lambda: _exif_from(path, max_pixels)), timeout
        )


async def _time_boxed(job: asyncio.Future[dict[str, Any]], timeout: float) -> dict[str, Any]:
    try:
        async with asyncio.timeout(timeout):
            return await job
    except TimeoutError as exc:
        raise errors.Unprocessable("reading EXIF took too long") from exc


def _exif_from(path: Path, max_pixels: int) -> dict[str, Any]:
    from PIL import Image, UnidentifiedImageError

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # Pillow's "Corrupt EXIF data": give {}
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            with Image.open(path) as img:
                width, height = img.size
                if width * height > max_pixels:
                    raise errors.Unprocessable("image has too many pixels", max_pixels=max_pixels)
                return _json_safe_exif(img.getexif())
        except (UnidentifiedImageError, OSError, SyntaxError, ValueError):
            return {}
        except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
            raise errors.Unprocessable("image has too many pixels") from exc


def _json_safe_exif(exif: Any) -> dict[str, Any]:
    from PIL.ExifTags import TAGS

    out: dict[str, Any] = {}
    for tag, value in exif.items():
        name = TAGS.get(tag, str(tag))
        out[name] = _json_value(value)
    return out


def _json_value(value: Any) -> Any:
    if isinstance(value, bytes):
        return value[:256].hex()
    if isinstance(value, str | int | bool) or value is None:
        return value
    if isinstance(value, float):
        return value if value == value else None
    if isinstance(value, tuple | list):
        return [_json_value(v) for v in value[:64]]
    try:
        return float(value)
    except (TypeError, ValueError):
        return str(value)[:256]
