"""filestack-python's document tasks against a real ``stowage serve`` (issue 26): files
uploaded with ``Client.upload``, then ``Filelink("[h1,h2]").pdfcreate()`` and
``Filelink(h).doc_to_images(...)`` fetched at the URLs the SDK builds."""

from __future__ import annotations

import io
from pathlib import Path

import pypdfium2 as pdfium
import pyvips
import requests
from filestack import Client, Filelink

from tests.processing import pdfs
from tests.sdk.stack import Stack
from tests.sdk.test_python_sdk import pointed  # noqa: F401  (autouse: SDK pointed at us)


def test_pdfcreate_and_doc_to_images_through_the_sdk(stack: Stack, tmp_path: Path) -> None:
    (tmp_path / "three.pdf").write_bytes(pdfs.three_pages())
    pyvips.Image.black(200, 100).write_to_file(str(tmp_path / "black.png"))
    client = Client(stack.open_key)
    document = client.upload(filepath=str(tmp_path / "three.pdf"))
    picture = client.upload(filepath=str(tmp_path / "black.png"))
    merged = Filelink(f"[{picture.handle},{document.handle}]").pdfcreate()
    assert merged.url == f"{stack.cdn}/pdfcreate/[{picture.handle},{document.handle}]"
    resp = requests.get(merged.url, timeout=60)
    assert resp.status_code == 200, resp.text[:300]
    assert resp.headers["Content-Type"] == "application/pdf"
    made = pdfium.PdfDocument(io.BytesIO(resp.content))
    try:
        sizes = [tuple(round(v) for v in made.get_page_size(i)) for i in range(len(made))]
    finally:
        made.close()
    assert sizes == [(200, 100), (612, 792), (300, 200), (400, 400)]
    pages = document.doc_to_images(pages=[2], format="png", density=144)
    answer = requests.get(pages.url, timeout=60).json()
    (image,) = answer["images"]
    assert (image["page"], image["width"], image["height"]) == (2, 600, 400)
    drawn = requests.get(image["url"], timeout=60)
    assert drawn.headers["Content-Type"] == "image/png"
    assert pyvips.Image.new_from_buffer(drawn.content, "").width == 600
