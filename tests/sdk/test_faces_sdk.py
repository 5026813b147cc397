"""Faces and image sizes as the official SDKs ask for them, against a real ``stowage
serve``: filestack-python's ``crop_faces``, ``pixelate_faces``, ``smart_crop`` and
``metadata(['width', 'height'])``; filestack-js's ``transform`` and ``metadata``. The
photo is scikit-image's astronaut (NASA, public domain)."""

from __future__ import annotations

import base64
from importlib import resources
from pathlib import Path
from typing import Any

import filestack
import filestack.utils
import pytest
import pyvips
import requests
from filestack import Client, Filelink

from stowage.processing import faces
from tests.sdk.filestack_shim import point_filestack_at
from tests.sdk.stack import Stack, run_js
from tests.sdk.test_python_sdk import pointed  # noqa: F401  (autouse: SDK pointed at us)

ASTRONAUT = Path(str(resources.files("skimage") / "data" / "astronaut.png"))


@pytest.fixture(scope="module")
def astronaut(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Filelink:
    path = tmp_path_factory.mktemp("faces") / "astronaut.jpg"
    pyvips.Image.new_from_file(str(ASTRONAUT)).jpegsave(str(path), Q=92)
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


def fetched(url: str) -> pyvips.Image:
    resp = requests.get(url, timeout=60)
    assert resp.status_code == 200, (url, resp.text[:300])
    return pyvips.Image.new_from_buffer(resp.content, "")


def test_python_sdk_crop_faces(astronaut: Filelink) -> None:
    image = fetched(astronaut.crop_faces(mode="thumb", width=100, height=100).url)
    assert (image.width, image.height) == (100, 100)
    assert len(faces.detect(image.resize(3))) == 1


@pytest.mark.parametrize(
    ("build", "size"),
    [
        (lambda f: f.smart_crop(width=200, height=120), (200, 120)),
        (lambda f: f.smart_crop(mode="face", width=90, height=160), (90, 160)),
        (lambda f: f.pixelate_faces(faces="all", amount=20, type="oval"), (512, 512)),
        (lambda f: f.detect_faces(color="red"), (512, 512)),
        (lambda f: f.redeye(), (512, 512)),
        (lambda f: f.resize(width=300, height=150, fit="crop", align="faces"), (300, 150)),
    ],
)
def test_python_sdk_face_tasks(astronaut: Filelink, build: Any, size: tuple[int, int]) -> None:
    image = fetched(build(astronaut).url)
    assert (image.width, image.height) == size


def test_python_sdk_metadata_width_and_height(astronaut: Filelink) -> None:
    assert astronaut.metadata(["width", "height"]) == {"width": 512, "height": 512}


def test_js_sdk_metadata_width_and_height(stack: Stack, astronaut: Filelink) -> None:
    meta = run_js(
        stack, "metadata", handle=astronaut.handle, options={"width": True, "height": True}
    )
    assert meta == {"width": 512, "height": 512, "handle": astronaut.handle}


def test_js_sdk_crop_faces(stack: Stack, astronaut: Filelink) -> None:
    options = {"crop_faces": {"mode": "fill", "width": 120, "height": 80}}
    out = run_js(stack, "transform", source=astronaut.handle, options=options)
    image = pyvips.Image.new_from_buffer(base64.b64decode(out["body"]), "")
    assert (image.width, image.height) == (120, 80)
