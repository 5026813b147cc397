"""The libvips engine's contract (processing/base.py): limits before decoding, the error
for each bad input, the deadline, and memory that stays small for a large image."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import pyvips
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from stowage import errors
from stowage.processing import chain, vips
from stowage.processing.base import Limits
from stowage.processing.vips import VipsEngine
from tests.api.test_transform_rules import png_bomb
from tests.processing.test_catalogue import half_up

LIMITS = Limits(
    max_input_pixels=50_000_000, max_input_bytes=10**9, max_output_dimension=4000, seconds=10
)


def render(
    tmp_path: Path, source: Path, *segments: str, limits: Limits = LIMITS, pillow: bool = True
) -> Path:
    parsed = chain.parse(list(segments))
    output = chain.output_for(parsed, "image/jpeg")
    dest = tmp_path / f"out.{output.extension}"
    VipsEngine(pillow_jpeg=pillow).render(source, parsed, output, dest, limits)
    return dest


def jpeg(path: Path, width: int, height: int) -> Path:
    xy = pyvips.Image.xyz(width, height)
    (xy[0] % 256).bandjoin([xy[1] % 256, 90]).cast("uchar").jpegsave(str(path), Q=85)
    return path


def test_bomb_is_refused_from_the_header(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.png"
    bomb.write_bytes(png_bomb(60_000, 60_000))
    started = time.monotonic()
    with pytest.raises(errors.ImageTooLarge):
        render(tmp_path, bomb, "resize=width:10")
    assert time.monotonic() - started < 1  # decoding 3.6 gigapixels would take minutes


def test_not_an_image(tmp_path: Path) -> None:
    text = tmp_path / "a.txt"
    text.write_text("hello")
    with pytest.raises(errors.NotAnImage):
        render(tmp_path, text, "flip")


def test_an_svg_naming_a_file_is_refused_before_libvips(tmp_path: Path) -> None:
    """SVG is drawn only after processing/svg.py's check: a reference to a file is a 422."""
    source = tmp_path / "a.svg"
    source.write_bytes(
        b'<svg xmlns="http://www.w3.org/2000/svg" width="9" height="9"><image '
        b'href="/etc/hosts" width="9" height="9"/></svg>'
    )
    with pytest.raises(errors.InvalidImage, match="refers to '/etc/hosts'"):
        render(tmp_path, source, "flip")


@pytest.mark.parametrize(("name", "content"), [("a.csv", b"1,2,3\n4,5,6\n")])
def test_only_raster_formats(tmp_path: Path, name: str, content: bytes) -> None:
    source = tmp_path / name
    source.write_bytes(content)
    with pytest.raises(errors.NotAnImage):
        render(tmp_path, source, "flip")


def test_a_pdf_is_drawn_by_pdfium_never_by_a_libvips_loader(tmp_path: Path) -> None:
    """A PDF goes to processing/pdf.py (PDFium): a broken one is an invalid document,
    not something libvips' loaders are asked to read."""
    source = tmp_path / "a.pdf"
    source.write_bytes(b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n")
    with pytest.raises(errors.InvalidDocument):
        render(tmp_path, source, "flip")


def test_vips_format_is_refused(tmp_path: Path) -> None:
    source = tmp_path / "a.v"
    pyvips.Image.black(4, 4).write_to_file(str(source))
    with pytest.raises(errors.NotAnImage):
        render(tmp_path, source, "flip")


def test_truncated(tmp_path: Path) -> None:
    whole = jpeg(tmp_path / "w.jpg", 300, 300).read_bytes()
    cut = tmp_path / "cut.jpg"
    cut.write_bytes(whole[: len(whole) // 3])
    with pytest.raises(errors.InvalidImage):
        render(tmp_path, cut, "resize=width:100")


def test_output_too_large(tmp_path: Path) -> None:
    source = jpeg(tmp_path / "s.jpg", 100, 100)
    with pytest.raises(errors.ImageTooLarge):
        render(tmp_path, source, "resize=width:4001")
    with pytest.raises(errors.ImageTooLarge):
        render(tmp_path, source, "resize=width:3999", "border=width:10")


def test_deadline_stops_the_work(tmp_path: Path) -> None:
    source = jpeg(tmp_path / "s.jpg", 3000, 3000)
    quick = Limits(50_000_000, 10**9, 10_000, 0.05)
    started = time.monotonic()
    with pytest.raises(errors.ProcessingTimeout):
        render(tmp_path, source, "blur=amount:20", "blur=amount:20", limits=quick)
    assert time.monotonic() - started < 3


def test_imagesize_reads_only_the_header(tmp_path: Path) -> None:
    bomb = tmp_path / "big.png"
    bomb.write_bytes(png_bomb(7000, 7000))
    dest = render(tmp_path, bomb, "imagesize")
    assert json.loads(dest.read_text()) == {"width": 7000, "height": 7000}


_MEASURE = """
import resource, sys
from pathlib import Path
from stowage.processing import chain
from stowage.processing.base import Limits
from stowage.processing import vips
from stowage.processing.vips import VipsEngine
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
parsed = chain.parse(sys.argv[2].split("/"))
output = chain.output_for(parsed, "image/jpeg")
VipsEngine().render(Path(sys.argv[1]), parsed, output, Path(sys.argv[3]),
                    Limits(100_000_000, 10**10, 10_000, 60))
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)
"""


@pytest.mark.parametrize(
    "segments",
    ["resize=width:300/output=format:webp", "sharpen/resize=width:300", "blur=amount:1"],
)
def test_memory_stays_small_for_a_48_megapixel_jpeg(tmp_path: Path, segments: str) -> None:
    """Decoded whole, this image is 138 MiB: sequential access and shrink-on-load keep
    the growth far below."""
    source = jpeg(tmp_path / "big.jpg", 8000, 6000)
    out = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(source), segments, str(tmp_path / "o.img")],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    grown_mib = int(out.stdout.strip().splitlines()[-1])
    print(f"{segments}: peak RSS grew {grown_mib} MiB")
    assert grown_mib < 100


def test_spool_sweep_removes_only_stale_files(tmp_path: Path) -> None:
    import os

    from stowage.processing.spool import SPOOL_PREFIX, sweep

    old, young, other = (
        tmp_path / f"{SPOOL_PREFIX}old",
        tmp_path / f"{SPOOL_PREFIX}new",
        tmp_path / "x",
    )
    for path in (old, young, other):
        path.write_bytes(b"x")
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    os.utime(other, (time.time() - 7200, time.time() - 7200))
    sweep(tmp_path)
    assert (old.exists(), young.exists(), other.exists()) == (False, True, True)


@pytest.mark.parametrize(
    ("size", "segments"),
    [
        ((4001, 2999), ["resize=width:300"]),
        ((1999, 1333), ["resize=height:101"]),
        ((2400, 1000), ["resize=width:300,height:300"]),
        ((2400, 1000), ["resize=width:200,height:200,fit:crop"]),
        ((1601, 1203), ["resize=width:199,height:77,fit:scale"]),
        ((800, 600), ["resize=width:500"]),  # too little to shrink on load
    ],
)
def test_jpeg_shrink_on_load_keeps_libvips_geometry_and_look(
    tmp_path: Path, size: tuple[int, int], segments: list[str]
) -> None:
    """A JPEG is decoded at 1/8, 1/4 or 1/2 scale when that still covers the result: the
    size is the one libvips' own thumbnail makes, and the pixels differ from it by little."""
    source = tmp_path / "photo.jpg"
    # Colour fields 64 px wide, as in a photo; detail near the pixel pitch would alias
    # differently in any two correct reductions.
    base = pyvips.Image.gaussnoise(size[0] // 64 + 1, size[1] // 64 + 1, sigma=60, mean=128)
    smooth = base.resize(64, kernel="linear").crop(0, 0, *size).cast("uchar")
    smooth.bandjoin([smooth.flip("horizontal"), smooth.flip("vertical")]).jpegsave(str(source))
    out = pyvips.Image.new_from_file(str(render(tmp_path, source, *segments, "output=format:png")))
    task = chain.parse(segments).tasks[0]
    width, height = (int(v) for v in (task.get("width", 0), task.get("height", 0)))  # type: ignore[arg-type]
    fit = task.get("fit", "clip")
    if fit in ("crop", "scale"):
        assert (out.width, out.height) == (width, height)
        return
    reference = pyvips.Image.thumbnail(
        str(source), width or 10_000_000, height=height or 10_000_000, no_rotate=True
    )
    assert (out.width, out.height) == (reference.width, reference.height)
    assert (out - reference).abs().avg() < 3  # of 255: the same picture


def test_jpeg_shrink_is_the_largest_that_covers_the_result(tmp_path: Path) -> None:
    photo = pyvips.Image.new_from_file(str(jpeg(tmp_path / "p.jpg", 4000, 3000)))
    assert vips._jpeg_shrink(photo, 300, 225) == 8  # libvips' thumbnail would take 4
    assert vips._jpeg_shrink(photo, 600, 450) == 4
    assert vips._jpeg_shrink(photo, 1999, 1500) == 2
    assert vips._jpeg_shrink(photo, 2001, 1500) == 1
    narrow = pyvips.Image.new_from_file(str(jpeg(tmp_path / "n.jpg", 7, 400)))
    assert vips._jpeg_shrink(narrow, 1, 50) == 4  # 7 // 8 would be a 0-pixel-wide decode
    png = tmp_path / "p.png"
    pyvips.Image.black(4000, 3000).pngsave(str(png))
    assert vips._jpeg_shrink(pyvips.Image.new_from_file(str(png)), 300, 225) == 1


def test_a_large_jpeg_is_decoded_at_one_eighth(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """libvips really asks the decoder for 1/8 scale (not only computes it); with Pillow's
    path on, that chain is Pillow's (test_pillowjpeg.py)."""
    source = jpeg(tmp_path / "big.jpg", 4000, 3000)
    shrinks: list[object] = []
    opened = pyvips.Image.new_from_file

    def spying(name: str, **options: object) -> pyvips.Image:
        shrinks.append(options.get("shrink"))
        return opened(name, **options)

    monkeypatch.setattr(pyvips.Image, "new_from_file", staticmethod(spying))
    made = render(tmp_path, source, "resize=width:300", pillow=False)
    out = pyvips.Image.new_from_file(str(made))
    assert (out.width, out.height) == (300, 225)
    assert 8 in shrinks, shrinks


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    source=st.tuples(st.integers(1, 2000), st.integers(1, 2000)),
    side=st.sampled_from(["width", "height"]),
    wanted=st.integers(1, 2500),
    fit=st.sampled_from(["clip", "max", "scale"]),
    suffix=st.sampled_from([".jpg", ".png"]),
)
# Tiny JPEGs shrunk on load: libjpeg rounds the 1/8 scale's sides up (10x36 gave 1x5).
@example(source=(10, 36), side="width", wanted=1, fit="clip", suffix=".jpg")
@example(source=(57, 9), side="height", wanted=1, fit="scale", suffix=".jpg")
def test_one_side_given_is_met_exactly(
    tmp_path: Path, source: tuple[int, int], side: str, wanted: int, fit: str, suffix: str
) -> None:
    """``resize`` with one side: that side is the one asked for (unless ``fit:max`` would
    enlarge) and the other keeps the aspect to within a pixel, whatever the rounding."""
    path = tmp_path / f"src{suffix}"
    xy = pyvips.Image.xyz(*source)
    (xy[0] % 256).bandjoin([xy[1] % 256, 90]).cast("uchar").write_to_file(str(path))
    given, other = (0, 1) if side == "width" else (1, 0)
    derived = source[other] * wanted / source[given]
    assume(abs(derived - LIMITS.max_output_dimension) > 1)  # either answer is right there
    if derived > LIMITS.max_output_dimension and (fit != "max" or wanted <= source[given]):
        with pytest.raises(errors.ImageTooLarge):
            render(tmp_path, path, f"resize={side}:{wanted},fit:{fit}")
        return
    out = pyvips.Image.new_from_file(
        str(render(tmp_path, path, f"resize={side}:{wanted},fit:{fit}", "output=format:png"))
    )
    if fit == "max" and wanted > source[given]:
        assert (out.width, out.height) == source
        return
    size = (out.width, out.height)
    assert size[given] == wanted
    assert abs(size[other] - derived) <= 1
    assert size[other] >= 1


@pytest.mark.parametrize("fmt", ["xls", "docx", "odp"])
def test_an_image_asked_as_a_document_is_a_400(tmp_path: Path, fmt: str) -> None:
    """The service sends documents to LibreOffice; a job process asked to save an image
    as one answers 400 instead of ending (it raised KeyError and died)."""
    source = jpeg(tmp_path / "p.jpg", 4, 4)
    with pytest.raises(errors.UnsupportedConversion) as refused:
        render(tmp_path, source, f"output=format:{fmt}")
    assert refused.value.status == 400


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@example(width=300, height=200, side="height", wanted=63, pillow=True)  # 94.5 wide: a tie
@example(width=300, height=200, side="height", wanted=145, pillow=False)
@example(width=4000, height=3000, side="width", wanted=302, pillow=True)  # 226.5 high
@given(
    width=st.integers(20, 900),
    height=st.integers(20, 900),
    side=st.sampled_from(["width", "height"]),
    wanted=st.integers(1, 400),
    pillow=st.booleans(),
)
def test_every_format_of_a_picture_is_resized_to_one_size(
    tmp_path: Path, width: int, height: int, side: str, wanted: int, pillow: bool
) -> None:
    """One side given, the other derived as from the source itself, whatever the format
    decodes smaller on load: a 300x200 WebP to height 63 was 94x63, its PNG 95x63."""
    assume(wanted < (width if side == "width" else height))  # a reduction: no upscale
    xy = pyvips.Image.xyz(width, height)
    image = (xy[0] % 256).bandjoin([xy[1] % 256, 90]).cast("uchar")
    sizes = set()
    for suffix in (".png", ".jpg", ".webp"):  # PNG is never shrunk on load
        source = tmp_path / f"s{suffix}"
        image.write_to_file(str(source))
        made = pyvips.Image.new_from_file(
            str(render(tmp_path, source, f"resize={side}:{wanted}", pillow=pillow))
        )
        sizes.add((suffix, made.width, made.height))
    assert len({(w, h) for _, w, h in sizes}) == 1, sorted(sizes)


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    name=st.sampled_from(["blur", "sharpen", "pixelate", "oil_paint", "vignette"]),
    thousandths=st.integers(0, 20_000).filter(lambda n: n % 1000 != 0),
)
def test_a_decimal_amount_renders_as_its_rounded_whole_number(
    tmp_path: Path, name: str, thousandths: int
) -> None:
    """The schema types these amounts integer: ``blur=amount:0.5`` is ``amount:1`` (it gave
    the image untouched, a sigma of 0.5), ``pixelate=amount:2.5`` is 3 (it was refused)."""
    amount = round(thousandths / 1000 + (2 if name in ("pixelate", "oil_paint") else 0), 3)
    work = Path(tempfile.mkdtemp(dir=tmp_path))  # one per example: the fixture is shared
    xy = pyvips.Image.xyz(61, 47)  # detail at every scale: each amount shows
    source = work / "in.png"
    ((xy[0] * xy[1] * 37) % 256).bandjoin([xy[0] * 4 % 256, 90]).cast("uchar").pngsave(str(source))

    def pixels(*segments: str) -> bytes:
        made = render(Path(tempfile.mkdtemp(dir=work)), source, *segments, "output=format:png")
        return bytes(pyvips.Image.new_from_file(str(made)).write_to_memory())

    rounded = pixels(f"{name}=amount:{half_up(amount)}")
    assert pixels(f"{name}=amount:{amount}") == rounded, (name, amount)
    if half_up(amount) > 0 and name != "vignette":  # the rounded amount changes the image
        assert pixels() != rounded, (name, amount)
