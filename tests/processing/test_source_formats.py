"""What a result holds, source format by source format: its bands and colour space (one
rule for every chain), the metadata it carries (none its source did not have), and the
``quality`` task alone answering a file that is no JPEG as it is."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import pyvips

from stowage.processing import chain
from stowage.processing.base import Limits
from stowage.processing.vips import VipsEngine

LIMITS = Limits(10**8, 10**9, 10_000, 60)
#: Tasks that place, turn or resize pixels and add no colour of their own.
GEOMETRY = [
    "flip",
    "flop",
    "rotate=deg:90",
    "rotate=deg:180",
    "resize=width:{w}",
    "crop=dim:[0,0,{w},{h}]",
]
#: Formats that hold grey as grey: a grey result must read back as one band (and alpha).
GREY_OUTPUTS = ["png", "tiff", "jpg"]


def render(source: Path, segments: list[str], mimetype: str, dest_dir: Path) -> Path:
    parsed = chain.parse(segments)
    output = chain.output_for(parsed, mimetype)
    dest = dest_dir / f"out.{output.extension}"
    VipsEngine(threads_per_job=1).render(source, parsed, output, dest, LIMITS)
    return dest


def _source(kind: str, width: int, height: int, seed: int) -> pyvips.Image:
    noise = pyvips.Image.gaussnoise(width, height, sigma=50, mean=128, seed=seed)
    grey = noise.cast("uchar")
    alpha = (grey.flip("horizontal") > 100).ifthenelse(255, 60).cast("uchar")
    if kind == "grey16":
        return (grey.cast("ushort") * 257).copy(interpretation="grey16")
    if kind == "greya16":
        return (grey.bandjoin(alpha).cast("ushort") * 257).copy(interpretation="grey16")
    if kind == "rgb16":
        rgb = grey.bandjoin([grey.flip("vertical"), grey.flip("horizontal")])
        return (rgb.cast("ushort") * 257).copy(interpretation="rgb16")
    if kind == "greya":
        return grey.bandjoin(alpha).copy(interpretation="b-w")
    return grey.copy(interpretation="b-w")


@pytest.mark.parametrize("seed", range(12))
def test_a_results_bands_follow_its_sources_whatever_the_chain(tmp_path: Path, seed: int) -> None:
    """A grey source (8 or 16 bits, alpha or not) gives 8-bit grey, a 16-bit colour one
    8-bit sRGB, through every chain: a 16-bit grey PNG was sRGB through a flip and grey
    through a resize."""
    rng = random.Random(seed)
    kind = rng.choice(["grey16", "greya16", "rgb16", "greya", "grey"])
    width, height = rng.randrange(20, 90), rng.randrange(20, 90)
    source = tmp_path / "source.png"
    _source(kind, width, height, seed).pngsave(str(source))
    tasks = [
        rng.choice(GEOMETRY).format(w=rng.randrange(5, width), h=rng.randrange(5, height))
        for _ in range(rng.randrange(0, 3))
    ]
    fmt = rng.choice(GREY_OUTPUTS)
    made = pyvips.Image.new_from_file(
        str(render(source, [*tasks, f"output=format:{fmt}"], "image/png", tmp_path))
    )
    grey = kind != "rgb16"
    alpha = kind in ("greya16", "greya") and fmt != "jpg"  # a JPEG is flattened
    assert made.format == "uchar", (kind, tasks, fmt)
    assert made.bands == (1 if grey else 3) + alpha, (kind, tasks, fmt, made.bands)
    assert made.interpretation == ("b-w" if grey else "srgb"), (kind, tasks, fmt)


METADATA_FIELDS = ("exif-data", "xmp-data", "iptc-data", "icc-profile-data")
WRITERS = {
    "png": ("pngsave", "image/png"),
    "jpg": ("jpegsave", "image/jpeg"),
    "webp": ("webpsave", "image/webp"),
    "tiff": ("tiffsave", "image/tiff"),
    "avif": ("heifsave", "image/avif"),
    "gif": ("gifsave", "image/gif"),
}


@pytest.mark.parametrize("seed", range(8))
def test_a_result_carries_no_metadata_its_source_did_not_have(tmp_path: Path, seed: int) -> None:
    """A PNG made by Pillow, with no Exif, came out of ``output=format:png`` with an
    ``eXIf`` chunk libvips' saver wrote (and a JPEG, WebP or AVIF with an Exif block)."""
    rng = random.Random(seed)
    source_format = rng.choice(sorted(WRITERS))
    writer, mimetype = WRITERS[source_format]
    image = _source("grey", rng.randrange(10, 60), rng.randrange(10, 60), seed)
    image = image.bandjoin([image.flip("vertical"), image]).copy(interpretation="srgb")
    source = tmp_path / f"source.{source_format}"
    options = {"compression": "av1"} if writer == "heifsave" else {}
    getattr(image, writer)(str(source), keep="none", **options)
    assert not [f for f in METADATA_FIELDS if pyvips.Image.new_from_file(str(source)).get_typeof(f)]
    for result in sorted(WRITERS):
        tasks = rng.choice([[], ["flip"], ["resize=width:8"]])
        made = render(source, [*tasks, f"output=format:{result}"], mimetype, tmp_path)
        header = pyvips.Image.new_from_file(str(made))
        held = [f for f in METADATA_FIELDS if header.get_typeof(f)]
        assert not held, (source_format, tasks, result, held)


@pytest.mark.parametrize("source_format", sorted(set(WRITERS) - {"jpg"}))
def test_the_quality_task_alone_answers_a_file_that_is_no_jpeg_as_it_is(
    tmp_path: Path, source_format: str
) -> None:
    """``quality=value:100`` of a 1.6 KB AVIF was a new 9 KB encode: the loader's name
    (``heifload``) was compared with the format's (``avif``)."""
    rng = random.Random(source_format)
    writer, mimetype = WRITERS[source_format]
    for _ in range(3):
        image = _source("grey", rng.randrange(10, 80), rng.randrange(10, 80), rng.randrange(99))
        image = image.bandjoin([image.flip("vertical"), image]).copy(interpretation="srgb")
        source = tmp_path / f"source.{source_format}"
        options = {"compression": "av1"} if writer == "heifsave" else {}
        getattr(image, writer)(str(source), **options)
        made = render(source, [f"quality=value:{rng.randrange(1, 101)}"], mimetype, tmp_path)
        assert made.read_bytes() == source.read_bytes(), source_format
