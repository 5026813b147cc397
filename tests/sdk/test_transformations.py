"""Image transformations as the official SDKs build them, against a real ``stowage serve``:
filestack-python's ``ImageTransformationMixin`` (each required task, chains,
``signed_url``, ``.store()``, ``transform_external``) and filestack-js's
``client.transform``. Every answer is decoded with pyvips; geometry and format checked."""

from __future__ import annotations

import base64
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import filestack
import filestack.utils
import pytest
import pyvips
import requests
from filestack import Client, Filelink, Security

from tests.sdk.conftest import site_folder
from tests.sdk.filestack_shim import point_filestack_at
from tests.sdk.stack import JsError, Stack, run_js
from tests.sdk.test_python_sdk import pointed  # noqa: F401  (autouse: SDK pointed at us)


def picture(path: Path, width: int = 640, height: int = 480) -> Path:
    xy = pyvips.Image.xyz(width, height)
    image = (xy[0] * 255 / width).bandjoin([xy[1] * 255 / height, 128]).cast("uchar")
    image.write_to_file(str(path))
    return path


def decoded(body: bytes) -> pyvips.Image:
    return pyvips.Image.new_from_buffer(body, "")


@pytest.fixture(scope="module")
def uploaded(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Filelink:
    path = picture(tmp_path_factory.mktemp("img") / "photo.jpg")
    saved = {k: filestack.CFG.__dict__[k] for k in ("API_URL", "CDN_URL", "MULTIPART_START_URL")}
    original = filestack.utils.original_requests
    point_filestack_at(stack.api, stack.cdn)
    try:
        link: Filelink = Client(stack.open_key).upload(filepath=str(path))
    finally:
        for name, value in saved.items():
            setattr(filestack.CFG, name, value)
        filestack.utils.original_requests = original
    return link


Build = Callable[[Filelink], Any]
CASES: list[tuple[str, Build, tuple[int, int], str]] = [
    ("resize", lambda f: f.resize(width=300), (300, 225), "jpeg"),
    (
        "resize crop",
        lambda f: f.resize(width=90, height=90, fit="crop", align="top"),
        (90, 90),
        "jpeg",
    ),
    ("resize scale", lambda f: f.resize(width=90, height=30, fit="scale"), (90, 30), "jpeg"),
    ("resize max", lambda f: f.resize(width=4000, fit="max"), (640, 480), "jpeg"),
    # Computed sizes as Python prints them: every digit (400/3), an exponent (1e-05: 0).
    ("resize computed", lambda f: f.resize(width=400 / 3), (133, 100), "jpeg"),
    ("resize exponent", lambda f: f.resize(width=300, height=1 / 100_000), (300, 225), "jpeg"),
    ("crop", lambda f: f.crop(dim=[10, 20, 100, 50]), (100, 50), "jpeg"),
    # Python's / makes floats: 320.0 is that whole number wherever one is read.
    ("crop floats", lambda f: f.crop(dim=[10.0, 40 / 2, 200 / 2, 50.0]), (100, 50), "jpeg"),
    ("border float", lambda f: f.border(width=8 / 2, color="00FF00"), (648, 488), "jpeg"),
    ("rotate", lambda f: f.rotate(deg=90), (480, 640), "jpeg"),
    ("rotate exif", lambda f: f.rotate(exif=True, background="white"), (640, 480), "jpeg"),
    ("flip", lambda f: f.flip(), (640, 480), "jpeg"),
    ("flop", lambda f: f.flop(), (640, 480), "jpeg"),
    ("png", lambda f: f.filetype_conversion(format="png"), (640, 480), "png"),
    ("webp", lambda f: f.filetype_conversion(format="webp", quality=50), (640, 480), "webp"),
    ("avif", lambda f: f.filetype_conversion(format="avif"), (640, 480), "heif"),
    ("gif", lambda f: f.filetype_conversion(format="gif"), (640, 480), "gif"),
    ("tiff", lambda f: f.filetype_conversion(format="tiff", compress=True), (640, 480), "tiff"),
    ("jpg strip", lambda f: f.filetype_conversion(format="jpg", strip=True), (640, 480), "jpeg"),
    ("quality", lambda f: f.quality(value=20), (640, 480), "jpeg"),
    ("no_metadata", lambda f: f.no_metadata(), (640, 480), "jpeg"),
    ("blur", lambda f: f.blur(amount=3), (640, 480), "jpeg"),
    ("sharpen", lambda f: f.sharpen(amount=3), (640, 480), "jpeg"),
    ("monochrome", lambda f: f.monochrome(), (640, 480), "jpeg"),
    ("blackwhite", lambda f: f.blackwhite(threshold=40), (640, 480), "jpeg"),
    ("sepia", lambda f: f.sepia(tone=70), (640, 480), "jpeg"),
    ("negative", lambda f: f.negative(), (640, 480), "jpeg"),
    ("modulate", lambda f: f.modulate(brightness=120, hue=40, saturation=90), (640, 480), "jpeg"),
    ("pixelate", lambda f: f.pixelate(amount=6), (640, 480), "jpeg"),
    ("circle", lambda f: f.circle(background="red"), (640, 480), "jpeg"),
    ("round_corners", lambda f: f.round_corners(radius=30), (640, 480), "jpeg"),
    ("border", lambda f: f.border(width=4, color="00FF00"), (648, 488), "jpeg"),
    (
        "chain",
        lambda f: f.resize(width=200).rotate(deg=90).filetype_conversion(format="webp"),
        (150, 200),
        "webp",
    ),
]


@pytest.mark.parametrize(("name", "build", "size", "fmt"), CASES, ids=[c[0] for c in CASES])
def test_python_sdk_transformation(
    uploaded: Filelink, name: str, build: Build, size: tuple[int, int], fmt: str
) -> None:
    url = build(uploaded).url
    resp = requests.get(url, timeout=30)
    assert resp.status_code == 200, (url, resp.text[:300])
    image = decoded(resp.content)
    assert (image.width, image.height) == size
    assert image.get("vips-loader").startswith(fmt)


def test_python_sdk_store(stack: Stack, uploaded: Filelink) -> None:
    """``Transformation.store()`` POSTs <cdn>/<tasks>/store=.../<HANDLE>."""
    stored = uploaded.resize(width=64).store(filename="thumb.jpg", path="thumbs/")
    assert stored.handle != uploaded.handle
    image = decoded(stored.get_content())
    assert (image.width, image.height) == (64, 48)
    assert stored.metadata(["filename"]) == {"filename": "thumb.jpg"}


def test_python_sdk_signed_url(stack: Stack, tmp_path: Path) -> None:
    policy = {"expiry": int(time.time()) + 600, "call": ["store", "read", "convert"]}
    security = Security(policy, stack.secure_secret)
    client = Client(stack.secure_key, security=security)
    link = client.upload(filepath=str(picture(tmp_path / "s.png", 200, 100)))
    assert requests.get(link.resize(width=50).url, timeout=30).status_code == 401
    signed = link.resize(width=50).signed_url(security=security)
    resp = requests.get(signed, timeout=30)
    assert resp.status_code == 200, resp.text
    image = decoded(resp.content)
    assert (image.width, image.height, image.get("vips-loader")) == (50, 25, "pngload_buffer")
    no_convert = Security({"expiry": int(time.time()) + 600, "call": ["read"]}, stack.secure_secret)
    resp = requests.get(link.resize(width=50).signed_url(security=no_convert), timeout=30)
    assert resp.status_code == 403


def test_python_sdk_transform_external(stack: Stack, source_image: str) -> None:
    transform = Client(stack.open_key).transform_external(source_image).resize(width=40)
    resp = requests.get(transform.url, timeout=30)
    assert resp.status_code == 200, resp.text
    assert decoded(resp.content).width == 40


@pytest.fixture(scope="module")
def source_image(source_site: tuple[str, bytes], tmp_path_factory: pytest.TempPathFactory) -> str:
    """A PNG on the module's loopback web server (the server runs with fetches to private
    addresses allowed, as the tests' URL stores do)."""
    url, body = source_site
    site = site_folder(tmp_path_factory, body)
    picture(site / "remote.png", 160, 80)
    return url.replace("remote.bin", "remote.png")


def test_js_sdk_transform(stack: Stack, uploaded: Filelink) -> None:
    options = {"resize": {"width": 120, "fit": "crop", "height": 60}, "output": {"format": "webp"}}
    out = run_js(stack, "transform", source=uploaded.handle, options=options)
    assert out["url"].startswith(f"{stack.cdn}/{stack.open_key}/")
    image = decoded(base64.b64decode(out["body"]))
    assert (image.width, image.height, image.get("vips-loader")) == (120, 60, "webpload_buffer")
    assert out["type"] == "image/webp"
    out = run_js(
        stack, "transform", source=uploaded.handle, options={"flip": True, "blur": {"amount": 2}}
    )
    assert decoded(base64.b64decode(out["body"])).width == 640


def test_js_sdk_transform_external(stack: Stack, source_image: str) -> None:
    """filestack-js puts a source holding ``/`` in double quotes (``escapeValue``):
    ``/<KEY>/resize=width:40/"http://127.0.0.1:<port>/remote.png"``; with a query
    string, the request's query closes the quote."""
    for source in (source_image, source_image + "?v=2"):
        out = run_js(stack, "transform", source=source, options={"resize": {"width": 40}})
        assert out["url"].endswith(f'/resize=width:40/"{source}"'), out["url"]
        assert out["status"] == 200 and decoded(base64.b64decode(out["body"])).width == 40


def test_js_sdk_list_of_urls(stack: Stack, source_image: str, uploaded: Filelink) -> None:
    """``client.transform([url, url], {animate})``: a list of quoted URLs; and a list of
    Filestack CDN links, which are handles here."""
    link = f"https://cdn.filestackcontent.com/{uploaded.handle}"
    for sources, size in (([source_image, source_image], (160, 80)), ([link, link], (640, 480))):
        options = {"animate": {"delay": 100}}
        out = run_js(stack, "transform", source=sources, options=options)
        assert out["url"].endswith('","'.join(sources) + '"]'), out["url"]
        image = pyvips.Image.new_from_buffer(base64.b64decode(out["body"]), "", n=-1)
        assert (out["type"], image.get("n-pages")) == ("image/gif", 2)
        assert (image.width, image.get("page-height")) == size


def test_js_sdk_list_of_urls_keeps_their_escapes(
    stack: Stack, source_site: tuple[str, bytes], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """filestack-js writes a list's URLs as given, as it writes one URL: ``%2541``,
    ``%3F`` and ``%20`` are the URLs' own and reach the origin as they are, listed or
    alone (the list was decoded once: ``/a%41 b.png`` became ``/aA b.png``, 404)."""
    url, body = source_site
    site = site_folder(tmp_path_factory, body)
    names = {"a%2541%20b.png": "a%41 b.png", "q%3F%2B.png": "q?+.png"}
    for index, name in enumerate(names.values()):
        picture(site / name, 30 + 10 * index, 20)
    urls = [url.replace("remote.bin", escaped) for escaped in names]
    for source in urls:
        out = run_js(stack, "transform", source=source, options={"resize": {"width": 12}})
        assert out["status"] == 200 and decoded(base64.b64decode(out["body"])).width == 12
    out = run_js(stack, "transform", source=urls, options={"animate": {"delay": 100}})
    assert out["url"].endswith('","'.join(urls) + '"]'), out["url"]
    image = pyvips.Image.new_from_buffer(base64.b64decode(out["body"]), "", n=-1)
    assert (out["type"], image.get("n-pages")) == ("image/gif", 2)


def test_js_sdk_source_of_a_filestack_cdn_link_is_its_handle(
    stack: Stack, uploaded: Filelink
) -> None:
    """``new Filelink("https://cdn.filestackcontent.com/<H>")`` (no API key needed):
    the handle, kept by an import, is the source here; nothing is fetched."""
    link = f"https://cdn.filestackcontent.com/{uploaded.handle}"
    out = run_js(stack, "transform", source=link, options={"resize": {"width": 64}})
    assert out["url"].endswith(f'/resize=width:64/"{link}"'), out["url"]
    image = decoded(base64.b64decode(out["body"]))
    assert (out["status"], image.width, image.height) == (200, 64, 48)


def test_js_sdk_transform_with_security(stack: Stack, tmp_path: Path) -> None:
    policy = {"expiry": int(time.time()) + 600, "call": ["store", "read", "convert"]}
    security = Security(policy, stack.secure_secret)
    link = Client(stack.secure_key, security=security).upload(
        filepath=str(picture(tmp_path / "j.jpg", 300, 300))
    )
    out = run_js(
        stack,
        "transform",
        secure=True,
        policy=policy,
        source=link.handle,
        options={"resize": {"width": 30}},
    )
    assert decoded(base64.b64decode(out["body"])).width == 30
    with pytest.raises(JsError):
        run_js(
            stack, "transform", secure=True, source=link.handle, options={"resize": {"width": 30}}
        )
