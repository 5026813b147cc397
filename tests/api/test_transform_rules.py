"""Transformations: security, the store task, invalidation on overwrite and delete,
limits (bombs, sizes, time, a full pool) and external URL sources through the guard."""

from __future__ import annotations

import asyncio
import base64
import struct
import zlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from stowage.processing.cache import PREFIX
from stowage.storage.base import Lists, WriteOptions
from tests.api.harness import Harness
from tests.api.test_transform import decoded, get, picture, stored


def png_bomb(width: int, height: int) -> bytes:
    """A tiny PNG whose header claims ``width`` x ``height`` pixels."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    rows = zlib.compress(b"\x00" * 4096, 9)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", rows) + chunk(b"IEND", b"")
    )


async def derivative_files(harness: Harness) -> list[str]:
    """Every derivative in the store, whichever it is (local disk, or a shared bucket)."""
    cache = harness.parts.processor.cache
    assert isinstance(cache.provider, Lists)
    return [key async for key in cache.provider.keys(cache.container, PREFIX + "/")]


async def code_of(resp: Any) -> str:
    return str((await resp.json())["error"]["code"])


# -- security ---------------------------------------------------------------------------
async def test_security_needs_the_convert_call(harness: Harness) -> None:
    app = harness.secure_app
    handle = await stored(harness, app=app)
    url = f"/resize=width:40/{handle}"
    assert (await harness.cdn.get(url)).status == 401
    read_only = harness.policy(app, call=["read"])
    security = f"security=p:{read_only['policy']},s:{read_only['signature']}"
    resp = await harness.cdn.get(f"/resize=width:40/{security}/{handle}")
    assert resp.status == 403 and await code_of(resp) == "POLICY_DENIED"
    convert = harness.policy(app, call=["convert"], handle=handle)
    security = f"security=p:{convert['policy']},s:{convert['signature']}"
    _, body = await get(harness, f"/resize=width:40/{security}/{handle}")
    assert decoded(body).width == 40
    _, body = await get(harness, f"/{app.api_key}/resize=width:41/{handle}", params=convert)
    assert decoded(body).width == 41


async def test_store_needs_store_as_well(harness: Harness) -> None:
    app = harness.secure_app
    handle = await stored(harness, app=app)
    convert = harness.policy(app, call=["convert"])
    resp = await harness.api.post(
        f"/process/resize=width:20/store=filename:s.png/{handle}", params=convert
    )
    assert resp.status == 403
    both = harness.policy(app, call=["convert", "store"])
    resp = await harness.api.post(f"/process/resize=width:20/store/{handle}", params=both)
    assert resp.status == 200, await resp.text()


async def test_a_copy_reads_its_source_with_read_not_convert(harness: Harness) -> None:
    """``/process/store/<H>`` copies the file as it is: its source needs ``read``, as the
    API's copy does (docs/security.md); it asked for ``convert`` (probe sec F3)."""
    app = harness.secure_app
    handle = await stored(harness, app=app)
    for calls, status in (
        (["read", "store"], 200),
        (["convert", "store"], 403),
        (["read"], 403),
        (["read", "convert", "store"], 200),
    ):
        resp = await harness.api.post(
            f"/process/store/{handle}", params=harness.policy(app, call=calls)
        )
        assert resp.status == status, (calls, await resp.text())
    rendered = harness.policy(app, call=["read", "store"])  # a render still needs convert
    resp = await harness.api.post(f"/process/resize=width:20/store/{handle}", params=rendered)
    assert resp.status == 403


# -- store ------------------------------------------------------------------------------
async def test_store_task_makes_a_new_file(harness: Harness) -> None:
    handle = await stored(harness)
    chain = 'resize=width:64/output=format:png/store=filename:thumb.png,path:"thumbs/"'
    resp = await harness.cdn.post(f"/{chain}/{handle}", allow_redirects=False)
    assert resp.status == 308
    assert resp.headers["Location"].endswith(f"/process/{chain}/{handle}".replace('"', "%22"))
    resp = await harness.api.post(f"/process/{chain}/{handle}")
    result = await resp.json()
    assert resp.status == 200, result
    assert result["handle"] != handle and result["filename"] == "thumb.png"
    assert result["type"] == "image/png" and result["key"].startswith("thumbs/")
    _, body = await get(harness, f"/{result['handle']}")
    assert decoded(body).width == 64 and len(body) == result["size"]


@pytest.mark.parametrize("seed", range(3))
async def test_store_alone_copies_the_file_as_it_is(harness: Harness, seed: int) -> None:
    """``/store/<H>`` and ``/<KEY>/store/https://cdn.filestackcontent.com/<H>`` saved a
    JPEG again (2,406 bytes stored as 2,270) and drew a text file as a page: with no other
    task the new file is the old one's bytes, name and type. Random files, forms and
    store options."""
    import random

    rng = random.Random(seed)
    key = harness.open_app.api_key
    for _ in range(3):
        kind = rng.choice(["jpg", "png", "txt", "bin"])
        data = (
            picture(rng.randrange(8, 90), rng.randrange(8, 90), f".{kind}")
            if kind in ("jpg", "png")
            else rng.randbytes(rng.randrange(1, 3000))
        )
        handle = await stored(harness, data, f"f.{kind}")
        meta = await (await harness.api.get(f"/api/file/{handle}/metadata")).json()
        named = rng.random() < 0.5
        task = "store=filename:copy.dat" if named else "store"
        link = f"{key}/{task}/https://cdn.filestackcontent.com/{handle}"
        source = rng.choice([f"{task}/{handle}", link])
        resp = await harness.api.post(f"/process/{source}")
        result = await resp.json()
        assert resp.status == 200, result
        assert result["handle"] != handle and result["type"] == meta["mimetype"], result
        assert result["filename"] == ("copy.dat" if named else meta["filename"])
        _, body = await get(harness, f"/{result['handle']}")
        assert body == data, (kind, source)


@pytest.mark.parametrize("seed", range(2))
async def test_store_base64decode_stores_the_decoded_bytes(harness: Harness, seed: int) -> None:
    """``store=base64decode:true`` was accepted and not applied: the base64 text was
    stored as text/plain. Base64 of random images and bytes, in every spelling and form."""
    import base64
    import random

    rng = random.Random(seed)
    key = harness.open_app.api_key
    for _ in range(3):
        data = rng.choice([picture(rng.randrange(8, 60), 9, ".png"), rng.randbytes(500)])
        text = base64.b64encode(data)
        handle = await stored(harness, text, "b64.txt")
        task = rng.choice(["store=base64decode:true", "store=b:true,filename:out.bin"])
        link = f"{key}/{task}/https://cdn.filestackcontent.com/{handle}"
        source = rng.choice([f"{task}/{handle}", link])
        resp = await harness.api.post(f"/process/{source}")
        result = await resp.json()
        assert resp.status == 200, result
        _, body = await get(harness, f"/{result['handle']}")
        assert body == data, source
        if data.startswith(b"\x89PNG"):
            assert result["type"] == "image/png", result
    handle = await stored(harness, b"not base64 !", "t.txt")
    resp = await harness.api.post(f"/process/store=base64decode:true/{handle}")
    assert resp.status == 400, await resp.text()


@pytest.mark.parametrize("seed", range(2))
async def test_storing_a_hosted_link_copies_the_file_it_names(harness: Harness, seed: int) -> None:
    """``POST /api/store?url=<hosted CDN link>`` (a migrated app's ``storeURL``) and
    ``POST /process`` with the link as a source went out to the hosted service (502);
    ``/<KEY>/store/<link>`` read the file here. Every form stores the named file's bytes."""
    import random

    rng = random.Random(seed)
    key = harness.open_app.api_key
    for _ in range(3):
        data = rng.randbytes(rng.randrange(1, 5000))
        handle = await stored(harness, data, "original.bin")
        link = rng.choice(
            [
                f"https://cdn.filestackcontent.com/{handle}",
                f"https://cdn.filestackcontent.com/{key}/{handle}",
                f"https://cdn.filestackcontent.com/api/file/{handle}",
            ]
        )
        form = rng.choice(["query", "field", "process"])
        if form == "process":
            body = {"apikey": key, "sources": [link], "tasks": [{"name": "store"}]}
            resp = await harness.api.post("/process", json=body)
        elif form == "query":
            resp = await harness.api.post("/api/store/S3", params={"key": key, "url": link})
        else:
            resp = await harness.api.post("/api/store/S3", params={"key": key}, data={"url": link})
        result = await resp.json()
        assert resp.status == 200, (form, link, result)
        _, made = await get(harness, f"/{result['handle']}")
        assert made == data and result["handle"] != handle, (form, link)


async def test_store_with_the_path_unquoted_as_filestack_swift_sends_it(
    harness: Harness,
) -> None:
    """filestack-swift GETs the CDN with the path's slashes as they are (its own test's
    URL); the path is the stored file's folder, as the quoted spelling's is."""
    handle = await stored(harness)
    store = "store=location:S3,path:my/custom/path/,filename:crop.png,access:public"
    chain = f"{store}/crop=dim:[1,1,8,6]"
    resp = await harness.cdn.get(f"/{chain}/{handle}", allow_redirects=False)
    assert resp.status == 307
    resp = await harness.api.get(f"/process/{chain}/{handle}")
    result = await resp.json()
    assert resp.status == 200, result
    assert result["key"].startswith("my/custom/path/") and result["filename"] == "crop.png"
    _, body = await get(harness, f"/{result['handle']}")
    assert decoded(body).width == 8 and decoded(body).height == 6


async def test_derivatives_are_not_files(harness: Harness) -> None:
    handle = await stored(harness)
    await get(harness, f"/resize=width:10/{handle}")
    await get(harness, f"/blur/{handle}")
    resp = await harness.api.get(
        "/api/files", params={"key": harness.open_app.api_key}, headers=_basic(harness)
    )
    listed = await resp.json()
    assert resp.status == 200, listed
    assert [f["handle"] for f in listed["files"]] == [handle]


def _basic(harness: Harness) -> dict[str, str]:
    token = base64.b64encode(f"app:{harness.open_app.secret}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


# -- invalidation -----------------------------------------------------------------------
async def overwrite(harness: Harness, handle: str, data: bytes) -> None:
    key = {"key": harness.open_app.api_key}
    resp = await harness.api.post(
        f"/api/file/{handle}", data=data, headers=_basic(harness), params=key
    )
    assert resp.status == 200, await resp.text()


async def test_overwrite_under_load_never_serves_the_old_version(harness: Harness) -> None:
    handle = await stored(harness, picture(400, 200))
    url = f"/resize=height:100/{handle}"
    _, body = await get(harness, url)
    assert decoded(body).width == 200

    async def hammer(stop: asyncio.Event) -> None:
        while not stop.is_set():
            resp = await harness.cdn.get(url)
            await resp.read()

    stop = asyncio.Event()
    load = [asyncio.create_task(hammer(stop)) for _ in range(4)]
    await asyncio.sleep(0.05)
    await overwrite(harness, handle, picture(100, 200))
    after = await asyncio.gather(*(get(harness, url) for _ in range(6)))
    stop.set()
    await asyncio.gather(*load)
    assert {decoded(body).width for _, body in after} == {50}


async def test_old_derivative_bytes_are_removed_in_the_background(harness: Harness) -> None:
    handle = await stored(harness, picture(400, 200))
    await get(harness, f"/resize=width:10/{handle}")
    await get(harness, f"/blur/{handle}")
    old = await derivative_files(harness)
    assert len(old) == 2
    await overwrite(harness, handle, picture(100, 100))
    await get(harness, f"/resize=width:10/{handle}")
    for _ in range(50):
        if not set(old) & set(await derivative_files(harness)):
            break
        await asyncio.sleep(0.05)
    left = await derivative_files(harness)
    assert len(left) == 1 and left[0] not in old


async def test_derivatives_of_the_earlier_layout_are_removed_with_the_others(
    harness: Harness,
) -> None:
    """Before one folder per handle, keys were ``<handle>/<version>/<digest>.<ext>``."""
    handle = await stored(harness, picture(400, 200))
    await get(harness, f"/resize=width:10/{handle}")
    (current,) = await derivative_files(harness)
    folder, name = current.rsplit("/", 1)
    version, digest = name[: -len(name.split("-")[-1]) - 1], name.split("-")[-1]
    earlier = f"{folder}/{version}/{digest}"
    cache = harness.parts.processor.cache
    await cache.provider.write(cache.container, earlier, _chunks(b"old"), WriteOptions())
    assert set(await derivative_files(harness)) == {current, earlier}
    await overwrite(harness, handle, picture(100, 100))
    await get(harness, f"/resize=width:10/{handle}")
    for _ in range(50):
        left = await derivative_files(harness)
        if not {current, earlier} & set(left):
            break
        await asyncio.sleep(0.05)
    assert len(left) == 1 and left[0] not in (current, earlier)
    assert left[0].startswith(folder + "/") and left[0].count("/") == current.count("/")


async def _chunks(data: bytes) -> AsyncIterator[bytes]:
    yield data


async def test_delete_makes_derivatives_unreachable_and_removes_them(harness: Harness) -> None:
    handle = await stored(harness)
    await get(harness, f"/resize=width:10/{handle}")
    key = {"key": harness.open_app.api_key}
    resp = await harness.api.delete(f"/api/file/{handle}", headers=_basic(harness), params=key)
    assert resp.status == 200
    assert (await harness.cdn.get(f"/resize=width:10/{handle}")).status == 404
    for _ in range(50):
        if not await derivative_files(harness):
            break
        await asyncio.sleep(0.05)
    assert await derivative_files(harness) == []


# -- limits -----------------------------------------------------------------------------
async def test_decompression_bomb_is_refused_before_decoding(harness: Harness) -> None:
    handle = await stored(harness, png_bomb(100_000, 100_000), "bomb.png")
    resp = await harness.cdn.get(f"/resize=width:10/{handle}")
    assert resp.status == 422 and await code_of(resp) == "IMAGE_TOO_LARGE"
    resp = await harness.cdn.get(f"/blur/{handle}")
    assert resp.status == 422


@pytest.mark.settings(processing_max_input_pixels=10_000)
async def test_pixel_limit_setting(harness: Harness) -> None:
    handle = await stored(harness, picture(200, 200))
    resp = await harness.cdn.get(f"/flip/{handle}")
    assert resp.status == 422 and await code_of(resp) == "IMAGE_TOO_LARGE"
    small = await stored(harness, picture(100, 100))
    assert (await harness.cdn.get(f"/flip/{small}")).status == 200


@pytest.mark.settings(processing_max_output_dimension=500)
async def test_output_dimension_limit(harness: Harness) -> None:
    handle = await stored(harness)
    resp = await harness.cdn.get(f"/resize=width:501/{handle}")
    assert resp.status == 422 and await code_of(resp) == "IMAGE_TOO_LARGE"
    assert (await harness.cdn.get(f"/resize=width:500/{handle}")).status == 200


@pytest.mark.settings(processing_max_input_bytes=1000)
async def test_input_bytes_limit(harness: Harness) -> None:
    handle = await stored(harness)
    resp = await harness.cdn.get(f"/resize=width:10/{handle}")
    assert resp.status == 413


@pytest.mark.settings(processing_job_seconds=0.05)
async def test_slow_jobs_are_stopped(harness: Harness) -> None:
    """A chain the estimate admits (about a second of work) past a 50 ms deadline."""
    handle = await stored(harness, picture(3000, 3000))
    resp = await harness.cdn.get(f"/blur=amount:20/sharpen=amount:5/{handle}")
    assert resp.status == 422 and await code_of(resp) == "PROCESSING_TIMEOUT"
    assert (await harness.api.get("/healthz")).status == 200


@pytest.mark.settings(processing_jobs=1, processing_queue=0)
async def test_a_full_pool_answers_503_with_retry_after(harness: Harness) -> None:
    handle = await stored(harness, picture(2000, 2000))
    urls = [f"/blur=amount:{n}/{handle}" for n in range(5, 20)]
    answers = await asyncio.gather(*(harness.cdn.get(url) for url in urls))
    statuses = sorted(resp.status for resp in answers)
    assert statuses[0] == 200 and statuses[-1] == 503
    busy = next(resp for resp in answers if resp.status == 503)
    assert 1 <= int(busy.headers["Retry-After"]) <= 30  # the lane's expected wait
    assert await code_of(busy) == "PROCESSING_BUSY"


async def test_metrics_count_jobs_and_cache(harness: Harness) -> None:
    handle = await stored(harness)
    await get(harness, f"/resize=width:12/{handle}")
    await get(harness, f"/resize=width:12/{handle}")
    text = await harness.metrics()
    assert 'stowage_processing_cache_total{result="hit"}' in text
    assert 'stowage_processing_jobs_total{outcome="ok"}' in text
    assert "stowage_processing_job_seconds_count" in text


# -- external URLs ----------------------------------------------------------------------
async def test_external_url_source(harness: Harness, image_site: str) -> None:
    key = harness.open_app.api_key
    resp, body = await get(harness, f"/{key}/resize=width:100/{image_site}")
    assert resp.headers["Content-Type"] == "image/png"
    assert (decoded(body).width, decoded(body).height) == (100, 50)


@pytest.mark.settings(fetch_allow_private=False)
async def test_external_url_goes_through_the_guard(harness: Harness, image_site: str) -> None:
    key = harness.open_app.api_key
    resp = await harness.cdn.get(f"/{key}/resize=width:100/{image_site}")
    assert resp.status == 403 and await code_of(resp) == "URL_FORBIDDEN"
    resp = await harness.cdn.get(f"/{key}/resize=width:100/http://169.254.169.254/x.png")
    assert resp.status == 403


async def test_external_url_needs_the_policy_url(harness: Harness, image_site: str) -> None:
    app = harness.secure_app
    other = harness.policy(app, call=["convert"], url="https://elsewhere\\.example/.*")
    resp = await harness.cdn.get(f"/{app.api_key}/flip/{image_site}", params=other)
    assert resp.status == 403 and await code_of(resp) == "POLICY_DENIED"
    allowed = harness.policy(app, call=["convert"], url="http://127\\.0\\.0\\.1:.*")
    _, body = await get(harness, f"/{app.api_key}/flip/{image_site}", params=allowed)
    assert decoded(body).width == 300


async def test_failed_jobs_leave_no_spool_files(harness: Harness) -> None:
    for data, name in (
        (png_bomb(90_000, 90_000), "b.png"),
        (b"text", "t.bin"),
        (b"\xff\xd8\xff", "c.jpg"),
    ):
        handle = await stored(harness, data, name)
        assert (await harness.cdn.get(f"/resize=width:10/{handle}")).status in (415, 422)
    spool = harness.settings.data_dir / "tmp"
    assert not list(spool.glob("derivative-*")) if spool.exists() else True


def header_bomb(kind: str, width: int, height: int) -> bytes:
    """A few bytes of ``kind`` whose header claims ``width`` x ``height`` pixels."""
    if kind == "png":
        return png_bomb(width, height)
    if kind == "gif":
        return b"GIF89a" + struct.pack("<HHBBB", width, height, 0, 0, 0) + b";"
    if kind == "jpeg":
        sof = struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
        return b"\xff\xd8" + b"\xff\xc0" + sof + b"\xff\xd9"
    canvas = struct.pack("<I", width - 1)[:3] + struct.pack("<I", height - 1)[:3]
    vp8x = b"VP8X" + struct.pack("<I", 10) + b"\0\0\0\0" + canvas
    return b"RIFF" + struct.pack("<I", 4 + len(vp8x)) + b"WEBP" + vp8x


@pytest.mark.settings(processing_jobs=1, processing_queue=0)
@pytest.mark.parametrize("seed", range(3))
async def test_a_source_over_the_pixel_limit_is_refused_whatever_the_load(
    harness: Harness, seed: int
) -> None:
    """While every job slot was busy, a decompression bomb waited for one and got 503
    PROCESSING_BUSY: its 422 came from the job. Headers of each common format claiming
    more pixels than the limit are refused 422 at once with a full pool; a file within
    the limit still gets the pool's 503."""
    import random

    rng = random.Random(seed)
    most = harness.parts.settings.processing_max_input_pixels
    pool = harness.parts.processor.pool
    pool._small.admitted = pool.jobs  # every slot taken, no queue: 503 at once for a job
    try:
        for kind in rng.sample(["png", "gif", "jpeg", "webp"], 4):
            side = 16383 if kind == "webp" else 65535
            width = rng.randrange(most // side + 1, side)
            height = rng.randrange(most // width + 1, side + 1)
            handle = await stored(harness, header_bomb(kind, width, height), f"b.{kind}")
            chain = rng.choice(["resize=width:10", "flip", "imagesize", "output=format:png"])
            resp = await harness.cdn.get(f"/{chain}/{handle}")
            assert resp.status == 422 and await code_of(resp) == "IMAGE_TOO_LARGE", kind
        resp = await harness.cdn.get(f"/flip/{await stored(harness, picture(40, 30))}")
        assert resp.status == 503
    finally:
        pool._small.admitted = 0


@pytest.mark.settings(processing_jobs=1, processing_queue=0)
@pytest.mark.parametrize("seed", range(5031, 5034))
async def test_a_jpeg_whose_frame_header_lies_far_is_refused_early_too(
    harness: Harness, seed: int
) -> None:
    """With a full pool the header is read in two steps: its first page on the event
    loop, then, for a JPEG whose frame header lies past it (an Exif thumbnail, an ICC
    profile), up to ``admission.HEAD_BYTES`` in a thread. Segments of 0-100 KiB before
    the frame header: each is refused 422 at once, not 503."""
    import random

    rng = random.Random(seed)
    most = harness.parts.settings.processing_max_input_pixels
    pool = harness.parts.processor.pool
    pool._small.admitted = pool.jobs  # every slot taken, no queue: 503 at once for a job
    try:
        for _ in range(4):
            width = rng.randrange(most // 65535 + 1, 65536)
            height = rng.randrange(most // width + 1, 65536)
            pad = rng.randrange(0, 100 * 1024)
            segments = b"".join(
                b"\xff\xe1" + struct.pack(">H", 2 + len(part)) + part
                for part in (rng.randbytes(min(65533, pad - i)) for i in range(0, pad, 65533))
            )
            bomb = header_bomb("jpeg", width, height)
            handle = await stored(harness, bomb[:2] + segments + bomb[2:], "far.jpg")
            resp = await harness.cdn.get(f"/resize=width:10/{handle}")
            assert resp.status == 422 and await code_of(resp) == "IMAGE_TOO_LARGE", pad
    finally:
        pool._small.admitted = 0
