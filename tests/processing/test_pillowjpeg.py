"""Pillow's path for a JPEG resized (or only converted) to WebP or JPEG
(processing/pillowjpeg.py) gives what
libvips' path gives: the same size for every source size and resize it takes (checked
against libvips' own arithmetic), close pixels, the same metadata (EXIF orientation kept,
not applied), the same limits and errors; every other chain or source stays libvips'."""

from __future__ import annotations

import io
import itertools
import struct
from pathlib import Path

import numpy as np
import pytest
import pyvips
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image, ImageCms, JpegImagePlugin

from stowage import errors
from stowage.processing import chain, geometry, pillowjpeg
from stowage.processing.base import BigJob, Limits, Rendered
from stowage.processing.vips import VipsEngine, save_options
from stowage.processing.vips import _from_file as vips_from_file

LIMITS = Limits(
    max_input_pixels=50_000_000, max_input_bytes=10**9, max_output_dimension=4000, seconds=10
)
SRGB = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
XMP = b'<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF/></x:xmpmeta>'
_names = itertools.count()


def photo(path: Path, width: int, height: int, orientation: int = 1, **save: object) -> Path:
    """A smooth picture (gradients and soft waves, like a photo), saved as a JPEG."""
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    red = 128 + 100 * np.sin(x / 37.0) * np.cos(y / 53.0)
    green = 255 * x / max(1, width - 1)
    blue = 255 * y / max(1, height - 1)
    pixels = np.clip(np.dstack([red, green, blue]), 0, 255).astype(np.uint8)
    exif = Image.Exif()
    exif[0x0112] = orientation
    exif[0x010F] = "Camera"
    Image.fromarray(pixels, "RGB").save(path, "JPEG", quality=90, exif=exif.tobytes(), **save)
    return path


def resize_segment(side: str, first: int, second: int, fit: str) -> str:
    """``resize`` with width, height or both, and a fit the Pillow path takes."""
    sizes = {"width": f"width:{first}", "height": f"height:{first}"}
    sizes["both"] = f"width:{first},height:{second}"
    return f"resize={sizes[side]}" + ("" if fit == "clip" else f",fit:{fit}")


def engines(
    tmp_path: Path, source: Path, segments: list[str], limits: Limits = LIMITS
) -> tuple[tuple[Path, Rendered], tuple[Path, Rendered | None]]:
    """(libvips' result, Pillow's result), each as (file, Rendered)."""
    parsed = chain.parse(segments)
    output = chain.output_for(parsed, "image/jpeg")
    by_vips = tmp_path / f"vips-{next(_names)}.{output.extension}"
    by_pillow = tmp_path / f"pillow-{next(_names)}.{output.extension}"
    done = VipsEngine(pillow_jpeg=False).render(source, parsed, output, by_vips, limits)
    options = save_options(parsed, output)
    fast = pillowjpeg.render(source, parsed, output, by_pillow, limits, options)
    return (by_vips, done), (by_pillow, fast)


def psnr(first: Path, second: Path) -> float:
    with Image.open(first) as a, Image.open(second) as b:
        x = np.asarray(a.convert("RGB"), dtype=np.float64)
        y = np.asarray(b.convert("RGB"), dtype=np.float64)
    mse = float(((x - y) ** 2).mean())
    return 99.0 if mse == 0 else 10 * np.log10(255**2 / mse)


_header = io.BytesIO()
Image.new("RGB", (16, 16)).save(_header, "JPEG")
HEADER = _header.getvalue()


def header_only(path: Path, width: int, height: int) -> Path:
    """A JPEG whose header says ``width`` x ``height`` (its data is a 16x16 image's): the
    size arithmetic reads headers only, so any source size costs nothing to try."""
    at = HEADER.index(b"\xff\xc0") + 5
    path.write_bytes(
        HEADER[:at] + height.to_bytes(2, "big") + width.to_bytes(2, "big") + HEADER[at + 4 :]
    )
    return path


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    width=st.integers(1, 30_000),
    height=st.integers(1, 30_000),
    side=st.sampled_from(["width", "height", "both"]),
    fit=st.sampled_from(["clip", "max", "scale"]),
    first=st.integers(1, 10_000),
    second=st.integers(1, 10_000),
)
def test_the_size_is_libvips_thumbnail_size(
    tmp_path: Path, width: int, height: int, side: str, fit: str, first: int, second: int
) -> None:
    """libvips' path makes exactly this size: its thumbnail's (``vips._from_file``), then
    the other side derived from the source's (``geometry._kept_aspect``: 251x1192 to width 28
    is 28x133; thumbnail's 28x135 was the Pillow path's answer)."""
    task = chain.parse([resize_segment(side, first, second, fit)]).tasks[0]
    size = pillowjpeg.size(task, width, height)
    if size is None:  # an upscale: libvips renders it
        return
    source = header_only(tmp_path / f"h{next(_names)}.jpg", width, height)
    header = pyvips.Image.new_from_file(str(source))
    made = geometry.resize_with(vips_from_file(source, header), task, width, height)
    assert size == (made.width, made.height)


@pytest.mark.parametrize("width, height", [(4000, 3000), (3000, 4000), (1600, 900), (1201, 799)])
def test_a_side_at_half_a_pixel_rounds_as_libvips_rounds(
    tmp_path: Path, width: int, height: int
) -> None:
    """A photo's common shapes make many sides of exactly half a pixel (4000x3000 to any
    even width not divisible by 4): each rounds as libvips' path rounds it (the job
    then stays Pillow's; leaving ties to libvips sent half of such requests there)."""
    source = header_only(tmp_path / "h.jpg", width, height)
    header = pyvips.Image.new_from_file(str(source))
    for first in range(2, 700, 2):
        for side in ("width", "height"):
            task = chain.parse([resize_segment(side, first, 0, "clip")]).tasks[0]
            made = geometry.resize_with(vips_from_file(source, header), task, width, height)
            assert pillowjpeg.size(task, width, height) == (made.width, made.height), task


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    width=st.integers(64, 1400),
    height=st.integers(64, 1400),
    orientation=st.integers(1, 8),
    side=st.sampled_from(["width", "height", "both", "none"]),
    fit=st.sampled_from(["clip", "max", "scale"]),
    scale=st.floats(0.05, 0.9),
    output=st.sampled_from([[], ["output=format:webp"], ["output=format:jpg", "quality=value:92"]]),
    extras=st.booleans(),
)
def test_pillow_gives_what_libvips_gives(
    tmp_path: Path,
    width: int,
    height: int,
    orientation: int,
    side: str,
    fit: str,
    scale: float,
    output: list[str],
    extras: bool,
) -> None:
    metadata: dict[str, object] = {"icc_profile": SRGB, "xmp": XMP} if extras else {}
    source = photo(tmp_path / f"s{next(_names)}.jpg", width, height, orientation, **metadata)
    first = max(1, round((width if side != "height" else height) * scale))
    second = max(1, round(height * scale))
    if side == "none":  # only converted to WebP, at its own size
        segments = ["output=format:webp,quality:80"]
    else:
        segments = [resize_segment(side, first, second, fit), *output]
    (by_vips, done), (by_pillow, fast) = engines(tmp_path, source, segments)
    assert fast is not None, "the Pillow path declined a chain it takes"
    assert (fast.width, fast.height) == (done.width, done.height)
    with Image.open(by_vips) as vips_image, Image.open(by_pillow) as pillow_image:
        assert pillow_image.size == vips_image.size == (done.width, done.height)
        assert pillow_image.format == vips_image.format
        # Not turned upright (nor by libvips): the orientation is kept for viewers.
        assert pillow_image.getexif()[0x0112] == vips_image.getexif()[0x0112] == orientation
        sizes = pillow_image.getexif().get_ifd(0x8769)
        assert (sizes[0xA002], sizes[0xA003]) == pillow_image.size
        for name in ("icc_profile", "xmp"):
            assert bool(pillow_image.info.get(name)) is bool(vips_image.info.get(name)) is extras
        assert pillow_image.info.get("icc_profile") == vips_image.info.get("icc_profile")
    # Two resamplers: their edges weigh more the smaller the result (the worst of 3,000
    # sources: 31.5 dB from 64 px up, 28.9 dB below; one later run found 27.8 dB below; a
    # few pixels are not compared).
    if min(done.width, done.height) >= 8:
        assert psnr(by_vips, by_pillow) > (30 if min(done.width, done.height) >= 64 else 27)


def test_a_large_jpeg_is_decoded_at_one_eighth(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pillow's draft mode really asks libjpeg for 1/8 scale: 500x375 for 300x225."""
    source = tmp_path / "big.jpg"
    Image.new("RGB", (4000, 3000), (120, 80, 40)).save(source, "JPEG")
    drafted: list[tuple[int, int]] = []
    load = JpegImagePlugin.JpegImageFile.load

    def spying(image: JpegImagePlugin.JpegImageFile) -> object:
        drafted.append(image.size)
        return load(image)

    monkeypatch.setattr(JpegImagePlugin.JpegImageFile, "load", spying)
    _, (_, fast) = engines(tmp_path, source, ["resize=width:300"])
    assert fast is not None and (fast.width, fast.height) == (300, 225)
    assert (500, 375) in drafted, drafted


def test_quality_and_subsampling_are_libvips(tmp_path: Path) -> None:
    source = photo(tmp_path / "s.jpg", 800, 600)
    for quality, sampling in ((None, 2), (50, 2), (95, 0)):
        asked = [] if quality is None else [f"output=format:jpg,quality:{quality}"]
        (by_vips, _), (by_pillow, _) = engines(tmp_path, source, ["resize=width:200", *asked])
        with Image.open(by_vips) as a, Image.open(by_pillow) as b:
            assert a.quantization == b.quantization  # the same quality's tables
            assert JpegImagePlugin.get_sampling(a) == JpegImagePlugin.get_sampling(b) == sampling


@pytest.mark.parametrize(
    "segments",
    [
        ["resize=width:100", "rotate=deg:90"],
        ["resize=width:100", "flip"],
        ["resize=width:100,fit:crop"],
        ["resize=width:100,align:top"],
        ["resize=width:100", "resize=width:50"],
        ["resize=width:100", "output=format:png"],
        ["resize=width:100", "output=format:pjpg"],
        ["resize=width:100", "output=format:webp,strip:true"],
        ["resize=width:100", "no_metadata"],
        ["resize=width:100", "compress"],
        ["resize=width:100", "output=format:jpg,quality:input"],
        ["resize=width:900"],  # an upscale
        ["output=format:webp", "flip"],  # no resize, another task
        ["output=format:png"],  # no resize, a format Pillow's path does not save
        ["output=format:jpg,quality:80"],  # no resize, a JPEG: libvips streams it
        ["resize=width:100", "imagesize"],
    ],
)
def test_other_chains_stay_libvips(tmp_path: Path, segments: list[str]) -> None:
    source = photo(tmp_path / "s.jpg", 600, 400)
    parsed = chain.parse(segments)
    output = chain.output_for(parsed, "image/jpeg")
    options = save_options(parsed, output)
    assert pillowjpeg.render(source, parsed, output, tmp_path / "o", LIMITS, options) is None


@pytest.mark.parametrize("kind", ["png", "grey", "cmyk", "text"])
def test_other_sources_stay_libvips(tmp_path: Path, kind: str) -> None:
    source = tmp_path / "s"
    if kind == "text":
        source.write_text("no image")
    else:
        mode = {"png": "RGB", "grey": "L", "cmyk": "CMYK"}[kind]
        Image.new(mode, (600, 400)).save(source, "PNG" if kind == "png" else "JPEG")
    parsed = chain.parse(["resize=width:100", "output=format:webp"])
    output = chain.output_for(parsed, "image/jpeg")
    assert pillowjpeg.render(source, parsed, output, tmp_path / "o", LIMITS, {}) is None


def _with_exif_entry(path: Path, tag: int, kind: int, count: int, value: bytes) -> Path:
    """A JPEG whose Exif block holds one entry, typed as given (a camera's odd tag)."""
    ifd = b"II*\x00" + struct.pack("<IH", 8, 1) + struct.pack("<HHI", tag, kind, count)
    payload = b"Exif\x00\x00" + ifd + value.ljust(4, b"\x00") + struct.pack("<I", 0)
    plain = io.BytesIO()
    Image.new("RGB", (600, 400), (90, 140, 200)).save(plain, "JPEG")
    data = plain.getvalue()
    app1 = b"\xff\xe1" + struct.pack(">H", len(payload) + 2) + payload
    path.write_bytes(data[:2] + app1 + data[2:])
    return path


@pytest.mark.parametrize(
    ("tag", "kind", "count", "value"),
    [
        (0x0112, 2, 4, b"abc\x00"),  # the orientation as ASCII text
        (0x0128, 11, 1, b"\x00\x00\xc0\x3f"),  # a short tag holding a float
        (0x0112, 4, 1, b"\x00\x00\x01\x00"),  # a long past a short's 65535
    ],
)
def test_exif_pillow_cannot_write_again_is_libvips(
    tmp_path: Path, tag: int, kind: int, count: int, value: bytes
) -> None:
    """Pillow raised writing such an Exif block again (``struct.error``, ``AttributeError``),
    which ended the job process: the thumbnail was ``422 INVALID_IMAGE`` while every other
    chain rendered the photo. It is libvips' now, as any source the path does not take
    (seed 9541 of the source probes: 22 of 60 random Exif blocks)."""
    source = _with_exif_entry(tmp_path / "odd.jpg", tag, kind, count, value)
    for segments in (WEBP_100, ["resize=width:100"]):
        parsed = chain.parse(segments)
        output = chain.output_for(parsed, "image/jpeg")
        options = save_options(parsed, output)
        assert pillowjpeg.render(source, parsed, output, tmp_path / "p", LIMITS, options) is None
        dest = tmp_path / f"o.{output.extension}"
        done = VipsEngine(pillow_jpeg=True).render(source, parsed, output, dest, LIMITS)
        assert (done.width, done.height) == (100, 67)
        with Image.open(dest) as result:
            assert result.size == (100, 67)


WEBP_100 = ["resize=width:100", "output=format:webp"]


def test_a_truncated_jpeg_is_invalid_as_with_libvips(tmp_path: Path) -> None:
    whole = photo(tmp_path / "w.jpg", 600, 400).read_bytes()
    cut = tmp_path / "cut.jpg"
    cut.write_bytes(whole[: len(whole) // 3])
    parsed = chain.parse(WEBP_100)
    output = chain.output_for(parsed, "image/jpeg")
    for engine in (VipsEngine(pillow_jpeg=False), VipsEngine(pillow_jpeg=True)):
        with pytest.raises(errors.InvalidImage) as raised:
            engine.render(cut, parsed, output, tmp_path / "o.webp", LIMITS)
        assert raised.value.code == "INVALID_IMAGE" and raised.value.status == 422
    with pytest.raises(errors.InvalidImage):  # and it was Pillow that refused it
        pillowjpeg.render(cut, parsed, output, tmp_path / "o.webp", LIMITS, {})


@pytest.mark.parametrize(
    ("limits", "refusal"),
    [
        (Limits(100_000, 10**9, 4000, 10), errors.ImageTooLarge),  # input pixels
        (Limits(50_000_000, 10**9, 4000, 10, max_total_pixels=100_000), errors.ImageTooLarge),
        (Limits(50_000_000, 10**9, 4000, 10, max_cost=0.0001), errors.ProcessingTooCostly),
        (Limits(50_000_000, 10**9, 4000, 10, big_cost=0.0001), BigJob),
        (Limits(50_000_000, 10**9, 4000, 10, max_output_bytes=100), errors.ImageTooLarge),
        (Limits(50_000_000, 10**9, 80, 10), errors.ImageTooLarge),  # output side
        (Limits(50_000_000, 10**9, 4000, 0), errors.ProcessingTimeout),
    ],
)
def test_limits_refuse_as_libvips_does(
    tmp_path: Path, limits: Limits, refusal: type[Exception]
) -> None:
    source = photo(tmp_path / "s.jpg", 600, 400)
    parsed = chain.parse(WEBP_100)
    output = chain.output_for(parsed, "image/jpeg")
    for engine in (VipsEngine(pillow_jpeg=False), VipsEngine(pillow_jpeg=True)):
        with pytest.raises(refusal):
            engine.render(source, parsed, output, tmp_path / "o.webp", limits)
