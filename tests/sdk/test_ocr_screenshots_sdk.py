"""OCR and URL screenshots as filestack-python builds them (issue 26), against a real
``stowage serve``: ``Filelink.ocr()`` answers the hosted JSON read by Tesseract, and
``Client.urlscreenshot(url, ...)`` a PNG of the page drawn by headless Chromium."""

from __future__ import annotations

import time

import filestack
import filestack.utils
import pytest
import pyvips
import requests
from filestack import Client, Filelink, Security

from tests.sdk.conftest import site_folder
from tests.sdk.filestack_shim import point_filestack_at
from tests.sdk.stack import Stack
from tests.sdk.test_python_sdk import pointed  # noqa: F401  (autouse: SDK pointed at us)


def signed(stack: Stack) -> Security:
    """filestack-python signs ocr's URL always (the hosted service asks for a policy)."""
    policy = {"expiry": int(time.time()) + 600, "call": ["store", "read", "convert"]}
    return Security(policy, stack.secure_secret)


@pytest.fixture(scope="module")
def text_page(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Filelink:
    text = pyvips.Image.text("HELLO FROM STOWAGE\nSECOND LINE", dpi=300, font="sans")
    page = (255 - text).embed(40, 40, text.width + 80, text.height + 80, extend="white")
    path = tmp_path_factory.mktemp("ocr") / "scan.png"
    page.pngsave(str(path))
    saved = {k: filestack.CFG.__dict__[k] for k in ("API_URL", "CDN_URL", "MULTIPART_START_URL")}
    original = filestack.utils.original_requests
    point_filestack_at(stack.api, stack.cdn)
    try:
        link: Filelink = Client(stack.secure_key, security=signed(stack)).upload(filepath=str(path))
    finally:
        for name, value in saved.items():
            setattr(filestack.CFG, name, value)
        filestack.utils.original_requests = original
    return link


@pytest.mark.needs("tesseract", by="scripts/setup.d/78-tesseract.sh")
def test_python_sdk_ocr(stack: Stack, text_page: Filelink) -> None:
    found = text_page.ocr(security=signed(stack))
    assert found["text"] == "HELLO FROM STOWAGE\nSECOND LINE"
    words = [w["text"] for a in found["document"]["text_areas"] for line in a["lines"]
             for w in line["words"]]  # fmt: skip
    assert words == ["HELLO", "FROM", "STOWAGE", "SECOND", "LINE"]


@pytest.mark.needs("chromium", by="scripts/setup.d/90-browser.sh")
def test_python_sdk_urlscreenshot(
    stack: Stack, source_site: tuple[str, bytes], tmp_path_factory: pytest.TempPathFactory
) -> None:
    url, body = source_site
    site = site_folder(tmp_path_factory, body)
    (site / "page.html").write_text(
        "<!doctype html><body style='margin:0;background:#0f0'><h1>hello</h1></body>"
    )
    shot = Client(stack.open_key).urlscreenshot(
        url.replace("remote.bin", "page.html"), mode="window", width=640, height=360, delay=0
    )
    resp = requests.get(shot.url, timeout=60)
    assert resp.status_code == 200, resp.text[:300]
    assert resp.headers["Content-Type"] == "image/png"
    image = pyvips.Image.new_from_buffer(resp.content, "")
    assert (image.width, image.height) == (640, 360)
    assert [round(v) for v in image.getpoint(600, 300)[:3]] == [0, 255, 0]
