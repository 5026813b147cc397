"""Raster images inside an SVG (``data:`` URLs) are held to the pixel limits and counted
in the cost estimate (``processing/svgimages.py``). A prober's SVG of 100x100 holding a
12000x12000 PNG was decoded whole (1.27 GB, 144 megapixels past the 100 allowed) as a
small job, and at 16000x16000 librsvg dropped the image and answered the wrong picture.

Generated: SVGs of 1-6 embedded PNG, JPEG, GIF and WebP images (animated ones too) of
sizes around the limits, refused exactly when one is over ``max_input_pixels`` or
``max_frames``, or all of them (and the canvas) over ``max_total_pixels``."""

from __future__ import annotations

import base64
import dataclasses
import io
import random
import time
import urllib.parse
from pathlib import Path

import pytest
import pyvips
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from stowage import errors
from stowage.processing import chain, cost, svg, svgimages
from stowage.processing.base import BigJob, Limits, Output
from stowage.processing.vips import VipsEngine

HEAD = '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink"'
CANVAS = 20  # the canvas's side: 400 pixels, counted with the images
LIMITS = Limits(
    max_input_pixels=10_000,
    max_input_bytes=50 << 20,
    max_output_dimension=10_000,
    seconds=30,
    max_frames=3,
    max_total_pixels=30_000,
)
SIDES = [40, 99, 100, 101, 120]  # 100x100 is exactly the input limit; 101x100 past it
PIL_FORMATS = {"png": "PNG", "jpeg": "JPEG", "gif": "GIF", "webp": "WEBP"}
PNG = Output("png", "image/png", "png")


def encoded(fmt: str, width: int, height: int, frames: int = 1) -> bytes:
    """An image of ``frames`` frames, each of another colour (encoders merge equal ones)."""
    pictures = [Image.new("RGB", (width, height), (0, 40 * i, 0)) for i in range(frames)]
    out = io.BytesIO()
    more = {"save_all": True, "append_images": pictures[1:]} if frames > 1 else {}
    pictures[0].save(out, PIL_FORMATS[fmt], **more)
    return out.getvalue()


def data_url(data: bytes, label: str = "png") -> str:
    return f"data:image/{label};base64,{base64.b64encode(data).decode()}"


def document(urls: list[str], side: int = CANVAS) -> str:
    images = "".join(f'<image width="{side}" height="{side}" href="{u}"/>' for u in urls)
    red = f'<rect width="{side}" height="{side}" fill="red"/>'
    return f'{HEAD} width="{side}" height="{side}">{red}{images}</svg>'


def rewrite(text: str, limits: Limits | None = LIMITS) -> svgimages.Embedded:
    images = svgimages.Embedded() if limits is None else svgimages.Embedded.within(limits)
    svg.rewrite(io.BytesIO(text.encode()), io.StringIO(), images)
    return images


def over(images: list[tuple[str, int, int, int]], canvas: int = 0) -> bool:
    """Whether the limits refuse these images (format, width, height, frames)."""
    if any(f > LIMITS.max_frames or w * h > LIMITS.max_input_pixels for _, w, h, f in images):
        return True
    return canvas + sum(w * h * f for _, w, h, f in images) > LIMITS.max_total_pixels


IMAGE = st.tuples(
    st.sampled_from(list(PIL_FORMATS)),
    st.sampled_from(SIDES),
    st.sampled_from(SIDES),
    st.integers(1, 4),
).map(lambda t: (t[0], t[1], t[2], t[3] if t[0] in ("gif", "webp") else 1))


@given(st.lists(IMAGE, min_size=1, max_size=6))
@settings(max_examples=120, deadline=None)
def test_embedded_images_are_refused_exactly_when_over_a_limit(
    images: list[tuple[str, int, int, int]],
) -> None:
    text = document([data_url(encoded(*i), i[0]) for i in images])
    if over(images):
        with pytest.raises(errors.ImageTooLarge):
            rewrite(text)
    else:
        found = rewrite(text)
        assert found.count == len(images)
        assert found.pixels == sum(w * h * f for _, w, h, f in images)


@pytest.mark.parametrize("seed", range(24))
def test_the_engine_refuses_or_draws_them_with_the_canvas(tmp_path: Path, seed: int) -> None:
    """Through the engine: the canvas counts with the images, a refusal is the job's
    ImageTooLarge before drawing, and an image that is allowed is drawn (not dropped)."""
    rng = random.Random(seed)
    images = [("png", rng.choice(SIDES), rng.choice(SIDES), 1) for _ in range(rng.randint(1, 4))]
    source = tmp_path / "s.svg"
    source.write_text(document([data_url(encoded(*i)) for i in images]))

    def render() -> None:
        VipsEngine().render(
            source, chain.parse(["resize=width:10"]), PNG, tmp_path / "out.png", LIMITS
        )

    if over(images, CANVAS * CANVAS):
        with pytest.raises(errors.ImageTooLarge, match=r"PNG|pixels in all"):
            render()
        return
    render()
    drawn = pyvips.Image.new_from_file(str(tmp_path / "out.png"))
    assert drawn(5, 5)[:3] == [0, 0, 0]  # the image over the red canvas


def test_the_canvas_and_the_images_are_held_to_the_total(tmp_path: Path) -> None:
    """Two 100x100 images and a 100x100 canvas: 30,000 pixels, the total allowed; with
    a 1x1 image more, refused only for the canvas."""
    urls = [data_url(encoded("png", 100, 100))] * 2
    for more, refused in (([], False), ([data_url(encoded("png", 1, 1))], True)):
        source = tmp_path / f"{refused}.svg"
        source.write_text(document(urls + more, 100))
        assert rewrite(document(urls + more, 100)).pixels <= LIMITS.max_total_pixels
        parsed = chain.parse(["resize=width:10"])
        dest = tmp_path / "out.png"
        if refused:
            with pytest.raises(errors.ImageTooLarge, match="canvas and data: images"):
                VipsEngine().render(source, parsed, PNG, dest, LIMITS)
        else:
            VipsEngine().render(source, parsed, PNG, dest, LIMITS)


def spellings(data: bytes) -> list[str]:
    """The ways a document names an embedded image that a URL parser reads the same."""
    b64 = base64.b64encode(data).decode()
    wrapped = "\n".join(b64[i : i + 60] for i in range(0, len(b64), 60))
    url = "data:image/png;base64," + b64
    return [
        f'<image href="{url}"/>',
        f'<image xlink:href="{url}"/>',
        f'<filter id="f"><feImage href="{url}"/></filter>',
        f'<rect width="5" height="5" style="fill: url({url}#x)"/>',
        f"<style>rect {{ fill: url('{url}') }}</style>",
        f'<image href="data:image/png;base64,{wrapped}"/>',
        f'<image href="data:image/png;base64,{b64.rstrip("=")}"/>',
        f'<image href="data:image/PNG;charset=utf-8; BASE64,{b64}"/>',
        f'<image href="data:image/png,{urllib.parse.quote_from_bytes(data)}"/>',
    ]


@pytest.mark.parametrize("index", range(len(spellings(b""))))
def test_every_spelling_is_read(index: int) -> None:
    small, large = encoded("png", 100, 100), encoded("png", 101, 100)
    assert rewrite(f"{HEAD}>{spellings(small)[index]}</svg>").pixels == 10_000
    with pytest.raises(errors.ImageTooLarge, match="101x100 PNG: 10100 pixels"):
        rewrite(f"{HEAD}>{spellings(large)[index]}</svg>")


@pytest.mark.parametrize(
    "url",
    [
        "data:image/png;base64,AAAA",  # no image
        "data:image/JPEG;base64,AAAA",
        data_url(encoded("png", 10, 10), "jpeg"),  # librsvg draws this as nothing
        data_url(encoded("gif", 10, 10), "png"),
        data_url(encoded("png", 10, 10)[:20]),  # cut inside the header
        data_url(encoded("png", 10, 10)[:8] + b"\0" * 30),  # no IHDR
        data_url(Image.new("RGB", (9, 9)).tobytes()),
        "data:image/png;base64,!!!!",
        "data:image/png;base64,A",
        "data:image/png",
    ],
)
def test_an_image_whose_header_cannot_be_read_is_refused(url: str) -> None:
    """Refused (422 INVALID_IMAGE), not left to librsvg to drop and draw without it."""
    with pytest.raises(svg.Refused, match=r"cannot be drawn|refers to"):
        rewrite(document([url]))


@given(st.sampled_from(["gif", "webp"]), st.integers(1, 6), st.sampled_from(SIDES))
@settings(max_examples=30, deadline=None)
def test_an_animations_frames_are_counted_as_its_decoder_counts_them(
    fmt: str, frames: int, side: int
) -> None:
    data = encoded(fmt, side, side, frames)
    with Image.open(io.BytesIO(data)) as opened:
        expected = getattr(opened, "n_frames", 1)
    found = svgimages.read(data_url(data, fmt))
    assert (found.frames, found.width, found.height) == (expected, side, side)


def test_the_number_of_images_is_bounded_and_reading_them_is_quick() -> None:
    tiny = [data_url(encoded("png", 2, 2 + i % 50)) for i in range(svgimages.MAX_IMAGES)]
    started = time.process_time()
    assert rewrite(document(tiny), None).count == svgimages.MAX_IMAGES
    assert time.process_time() - started < 1.0  # about 0.01 s measured
    with pytest.raises(svg.Refused, match=f"more than {svgimages.MAX_IMAGES} data: images"):
        rewrite(document([*tiny, tiny[0]]), None)


def test_their_pixels_make_a_big_job_or_a_refused_one(tmp_path: Path) -> None:
    """Four 1000x1000 PNGs of one colour (a few KB) in a 20x20 SVG: 4 megapixels decoded,
    a big job at ``cost.EMBEDDED``'s rate, or past the cost limit a refusal, before
    any drawing. Without them the estimate saw 400 pixels."""
    limits = Limits(100_000_000, 50 << 20, 10_000, 30, max_total_pixels=200_000_000)
    source = tmp_path / "s.svg"
    source.write_text(document([data_url(encoded("png", 1000, 1000))] * 4))
    parsed = chain.parse(["resize=width:10"])
    seconds = 4 * cost.EMBEDDED
    big = dataclasses.replace(limits, big_cost=seconds * 0.9)
    with pytest.raises(BigJob):
        VipsEngine().render(source, parsed, PNG, tmp_path / "out.png", big)
    costly = dataclasses.replace(limits, max_cost=seconds * 0.9)
    with pytest.raises(errors.ProcessingTooCostly):
        VipsEngine().render(source, parsed, PNG, tmp_path / "out.png", costly)
    VipsEngine().render(source, parsed, PNG, tmp_path / "out.png", limits)
