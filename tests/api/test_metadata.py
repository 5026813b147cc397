"""Metadata (4.5): default fields (2.4), every selector, hashes in one pass, EXIF."""

from __future__ import annotations

import hashlib
import io
import time

import pytest
from PIL import Image

from tests.api.harness import Harness

DEFAULT_FIELDS = {
    "mimetype",
    "uploaded",
    "container",
    "writeable",
    "filename",
    "location",
    "key",
    "path",
    "size",
}


def jpeg_with_exif() -> bytes:
    img = Image.new("RGB", (8, 8), "red")
    exif = Image.Exif()
    exif[0x010F] = "StowageCam"  # Make
    exif[0x0110] = "Model 1"  # Model
    out = io.BytesIO()
    img.save(out, "JPEG", exif=exif)
    return out.getvalue()


async def test_no_selector_returns_the_default_set(harness: Harness) -> None:
    before = time.time() * 1000
    result = await harness.store(b"some bytes", filename="m.txt")
    resp = await harness.api.get(f"/api/file/{result['handle']}/metadata")
    meta = await resp.json()
    assert set(meta) == DEFAULT_FIELDS
    assert meta["size"] == 10
    assert meta["filename"] == "m.txt"
    assert meta["mimetype"] == "text/plain"
    assert meta["writeable"] is True
    assert meta["location"] == "local"
    assert meta["container"] == "default"
    assert meta["key"] == meta["path"] == result["key"]
    assert before - 1000 <= meta["uploaded"] <= time.time() * 1000 + 1000


@pytest.mark.parametrize(
    "selector",
    [
        "size",
        "mimetype",
        "filename",
        "uploaded",
        "writeable",
        "cloud",
        "source_url",
        "upload_status",
        "location",
        "path",
        "container",
    ],
)
async def test_each_selector_returns_only_itself(harness: Harness, selector: str) -> None:
    result = await harness.store(b"abc")
    resp = await harness.api.get(
        f"/api/file/{result['handle']}/metadata", params={selector: "true"}
    )
    meta = await resp.json()
    assert list(meta) == [selector]
    expected = {"cloud": False, "source_url": None, "upload_status": "complete", "size": 3}
    if selector in expected:
        assert meta[selector] == expected[selector]


async def test_all_hashes_match_hashlib(harness: Harness) -> None:
    data = bytes(range(256)) * 5000
    result = await harness.store(data)
    names = ["md5", "sha1", "sha224", "sha256", "sha384", "sha512"]
    resp = await harness.api.get(
        f"/api/file/{result['handle']}/metadata", params=dict.fromkeys(names, "true")
    )
    meta = await resp.json()
    assert meta == {n: hashlib.new(n, data).hexdigest() for n in names}


async def test_false_selectors_are_not_returned(harness: Harness) -> None:
    result = await harness.store(b"abc")
    resp = await harness.api.get(
        f"/api/file/{result['handle']}/metadata", params={"size": "true", "md5": "false"}
    )
    assert await resp.json() == {"size": 3}


async def test_exif_needs_a_policy_with_exif_call(harness: Harness) -> None:
    result = await harness.store(jpeg_with_exif(), filename="photo.jpg")
    url = f"/api/file/{result['handle']}/metadata"
    assert (await harness.api.get(url, params={"exif": "true"})).status == 401
    no_call = harness.policy(harness.open_app)  # no call: everything but exif
    assert (await harness.api.get(url, params={"exif": "true", **no_call})).status == 403
    ok = harness.policy(harness.open_app, call=["stat", "exif"])
    resp = await harness.api.get(url, params={"exif": "true", **ok})
    meta = await resp.json()
    assert resp.status == 200, meta
    assert meta["exif"]["Make"] == "StowageCam"
    assert meta["exif"]["Model"] == "Model 1"


async def test_exif_of_non_image_is_empty(harness: Harness) -> None:
    result = await harness.store(b"not an image")
    params = {"exif": "true", **harness.policy(harness.open_app, call=["exif"])}
    resp = await harness.api.get(f"/api/file/{result['handle']}/metadata", params=params)
    assert (await resp.json()) == {"exif": {}}


async def test_exif_on_pixel_bomb_is_a_fast_422(harness: Harness) -> None:
    # A PNG header that claims 30000 x 30000 pixels; the pixels themselves are never decoded.
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    png = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", 30000, 30000, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(b"\x00" * 1000))
        + chunk(b"IEND", b"")
    )
    result = await harness.store(png, filename="bomb.png")
    params = {"exif": "true", **harness.policy(harness.open_app, call=["exif"])}
    started = time.monotonic()
    resp = await harness.api.get(f"/api/file/{result['handle']}/metadata", params=params)
    assert resp.status == 422
    assert time.monotonic() - started < 5


async def test_secure_app_metadata_needs_stat_policy(harness: Harness) -> None:
    app = harness.secure_app
    result = await harness.store(b"abc", app=app)
    url = f"/api/file/{result['handle']}/metadata"
    assert (await harness.api.get(url)).status == 401
    resp = await harness.api.get(url, params=harness.policy(app, call=["stat"]))
    assert (await resp.json())["size"] == 3


def picture(fmt: str, width: int, height: int) -> bytes:
    image = Image.new("RGB", (width, height), "blue")
    out = io.BytesIO()
    image.save(out, fmt)
    return out.getvalue()


@pytest.mark.parametrize(
    ("fmt", "name"),
    [("JPEG", "p.jpg"), ("PNG", "p.png"), ("GIF", "p.gif"), ("WEBP", "p.webp"), ("TIFF", "p.tif")],
)
async def test_width_and_height_of_a_stored_image(harness: Harness, fmt: str, name: str) -> None:
    """As the SDKs ask: ``metadata?width=true&height=true``, on the API and the CDN."""
    result = await harness.store(picture(fmt, 321, 123), filename=name)
    handle = result["handle"]
    wanted = {"width": "true", "height": "true"}
    resp = await harness.api.get(f"/api/file/{handle}/metadata", params=wanted)
    assert await resp.json() == {"width": 321, "height": 123}
    resp = await harness.cdn.get(f"/{handle}/metadata", params=wanted)
    assert await resp.json() == {"width": 321, "height": 123}
    resp = await harness.api.get(f"/api/file/{handle}/metadata", params={"height": "true"})
    assert await resp.json() == {"height": 123}


async def test_width_and_height_are_not_default_fields(harness: Harness) -> None:
    result = await harness.store(picture("PNG", 10, 20), filename="p.png")
    resp = await harness.api.get(f"/api/file/{result['handle']}/metadata")
    assert set(await resp.json()) == DEFAULT_FIELDS


async def test_a_file_that_is_no_image_has_no_width_or_height(harness: Harness) -> None:
    result = await harness.store(b"just some text", filename="notes.txt")
    resp = await harness.api.get(
        f"/api/file/{result['handle']}/metadata",
        params={"width": "true", "height": "true", "size": "true"},
    )
    assert await resp.json() == {"size": 14}


async def test_width_and_height_of_a_bomb_come_from_its_header_at_once(harness: Harness) -> None:
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    png = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", 60000, 50000, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(b"\x00" * 1000))
        + chunk(b"IEND", b"")
    )
    result = await harness.store(png, filename="bomb.png")
    started = time.monotonic()
    resp = await harness.api.get(
        f"/api/file/{result['handle']}/metadata", params={"width": "true", "height": "true"}
    )
    assert await resp.json() == {"width": 60000, "height": 50000}  # no pixel decoded
    assert time.monotonic() - started < 2


async def test_an_iphones_heic_photo_is_an_image_with_its_shown_size(harness: Harness) -> None:
    """An HEIC file (no HEVC decoder here) stored with no type: taken for an MP4 video before,
    with no size. Its boxes say what it is and its turned size."""
    from tests.core.test_heifsize import Layout

    turned = Layout((4032, 3024), 1, 1, [(2, (320, 240))], 0, 0, False, False)
    result = await harness.store(turned.file(b"heic", b"mif1", b"heic"), filename="IMG_0001")
    assert result["type"] == "image/heic"
    resp = await harness.api.get(
        f"/api/file/{result['handle']}/metadata", params={"width": "true", "height": "true"}
    )
    assert await resp.json() == {"width": 3024, "height": 4032}


@pytest.mark.parametrize(
    "spelled",
    [
        "metadata=p:[exif]",
        "metadata=params:[width,exif]",
        "output=format:png/metadata=p:[exif,size]",
    ],
)
async def test_the_metadata_task_asking_exif_needs_the_policy_the_api_needs(
    harness: Harness, spelled: str
) -> None:
    """``/metadata=p:[exif]/<H>`` answered EXIF on an open app without any policy, where
    ``/api/file/<H>/metadata?exif=true`` needs one naming ``exif`` (spec 4.5); a cached
    answer made under a policy is refused without one too."""
    handle = (await harness.store(jpeg_with_exif(), filename="photo.jpg"))["handle"]
    ok = harness.policy(harness.open_app, call=["convert", "exif"])
    resp = await harness.cdn.get(f"/{spelled}/{handle}", params=ok)
    assert resp.status == 200, await resp.text()
    assert (await resp.json())["exif"]["Make"] == "StowageCam"
    no_policy = await harness.cdn.get(f"/{spelled}/{handle}")
    assert no_policy.status == 401, await no_policy.text()
    no_call = harness.policy(harness.open_app)  # no call: everything but exif
    refused = await harness.cdn.get(f"/{spelled}/{handle}", params=no_call)
    assert refused.status == 403, await refused.text()
    # without exif, the task needs nothing on an open app
    plain = await harness.cdn.get(f"/metadata=p:[width,size]/{handle}")
    assert plain.status == 200, await plain.text()
