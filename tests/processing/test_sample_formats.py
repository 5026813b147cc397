"""One picture in any sample format gives the result its 8-bit version gives, through
every chain (processing/samples.py, profiles.py, palettes.py; docs/decisions.md,
"Sample formats and colour kinds").

Each case draws a smooth picture ``truth`` (0..1 a band, alpha last), writes it as a
source of some container, sample format, bands and profile, and compares the chain's
result with the same chain's result on the picture's ideal version: 8-bit, no profile,
computed here in full precision (an integer format: ``value / max``; a float without a
profile: linear light; a profile: its curve and primaries computed in floats). Both
must have the same bands and show the same pixels within a few levels. Before, a
uint32 or int32 source came out nearly white (clipped), a grey float one black, a
palette PNG or GIF of greys as colour, and a grey source with a profile stripped as
colour, or saved as WebP 15 levels off.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import pyvips

from stowage import errors
from stowage.processing import chain, composite
from stowage.processing.base import Limits
from stowage.processing.vips import VipsEngine
from tests.processing.rgbprofiles import rgb_profile, srgb_encoded, srgb_linear, to_srgb
from tests.processing.test_grey_placed import grey_profile

LIMITS = Limits(10**8, 10**9, 10_000, 60, max_cost=50.0)
SEEDS = range(5180, 5190)
CASES = 12
WIDTH, HEIGHT = 48, 36
MARK = "0" * 20  # the watermark's handle

#: Containers and the sample formats, bands and profiles they hold.
CONTAINERS = {
    "tif": (("uint8", "int8", "uint16", "int16", "uint32", "int32", "float32"), (1, 2, 3, 4)),
    "png": (("uint8", "uint16"), (1, 2, 3, 4)),
    "palette.png": (("uint8",), (1, 2, 3, 4)),
    "gif": (("uint8",), (1, 3)),
    "webp": (("uint8",), (3, 4)),
    "jpg": (("uint8",), (1, 3)),
}
KINDS = [(name, sample) for name, (samples, _) in sorted(CONTAINERS.items()) for sample in samples]
TASKS = (
    "resize=width:24",
    "crop=dim:[3,2,24,18]",
    "rotate=deg:90",
    "rotate=deg:30",
    "flip",
    "output=format:png",
    "output=format:jpg",
    "output=format:webp",
    "monochrome",
    "sepia",
    "blur=amount:2",
    "circle",
    "no_metadata",
    f"watermark=file:{MARK}",
    "resize=width:24/output=format:png",
    "modulate=brightness:80",
    "negative",
)
#: A source with a profile: a result that keeps it keeps its pixels in the profile's
#: space (the tasks that mix or compute colours do it there, whatever the depth: not
#: compared here), one that does not has them in sRGB's.
PROFILED_TASKS = (
    "crop=dim:[3,2,24,18]",
    "rotate=deg:90",
    "flip",
    "output=format:png",
    "output=format:jpg",
    "output=format:webp",
    "no_metadata",
    "flip/no_metadata",
    "output=format:jpg/no_metadata",
)
LOSSY = ("jpg", "webp")


@dataclass(frozen=True)
class Case:
    container: str
    sample: str
    bands: int
    profiled: bool
    tasks: str

    @property
    def lossy(self) -> bool:
        return any(f"format:{name}" in self.tasks for name in LOSSY) or self.container == "jpg"


def cases() -> list[tuple[int, int, Case]]:
    found = []
    for seed in SEEDS:
        rng = random.Random(seed)
        for n in range(CASES):
            container, sample = rng.choice(KINDS)  # each sample format of each container
            bandsets = CONTAINERS[container][1]
            profiled = container in ("tif", "png", "jpg", "webp") and rng.random() < 0.35
            tasks = rng.choice(PROFILED_TASKS if profiled else TASKS)
            found.append(
                (
                    seed,
                    n,
                    Case(container, sample, rng.choice(bandsets), profiled, tasks),
                )
            )
    return found


def truth(rng: np.random.Generator, bands: int) -> np.ndarray:
    small = rng.random((HEIGHT // 8, WIDTH // 8, bands))
    image = pyvips.Image.new_from_array(small).resize(8, kernel="linear")
    return np.clip(pixels(image, float)[:HEIGHT, :WIDTH], 0, 1)


def pixels(image: pyvips.Image, kind: type = np.int32) -> np.ndarray:
    return np.asarray(image.numpy(), dtype=kind).reshape(image.height, image.width, -1)


def space(bands: int, deep: bool) -> str:
    if bands < 3:
        return "grey16" if deep else "b-w"
    return "rgb16" if deep else "srgb"


def p3_profile() -> bytes:
    black = pyvips.Image.black(2, 2, bands=3).copy(interpretation="srgb")
    return bytes(black.icc_export(output_profile="p3").get("icc-profile-data"))


def encoded(values: np.ndarray, sample: str, profiled: bool) -> pyvips.Image:
    """The source's samples for ``values`` (what it shows; in the profile's space)."""
    if sample == "float32":
        stored = values.copy()
        if not profiled:  # linear light, alpha as it is
            colours = values.shape[2] - (values.shape[2] in (2, 4))
            stored[..., :colours] = srgb_linear(values[..., :colours])
        return pyvips.Image.new_from_array(stored.astype(np.float32))
    kind = np.dtype(sample)
    image = pyvips.Image.new_from_array(np.rint(values * np.iinfo(kind).max).astype(kind))
    if sample in ("uint8", "uint16"):
        image = image.copy(interpretation=space(values.shape[2], sample == "uint16"))
    return image


def write(image: pyvips.Image, path: Path, container: str, profile: bytes | None) -> None:
    if profile is not None:
        image = image.copy()
        image.set_type(pyvips.GValue.blob_type, "icc-profile-data", profile)
    if container in ("palette.png", "gif") and image.bands < 3:
        grey = image[0]
        image = grey.bandjoin([grey, grey, *image.bandsplit()[1:]]).copy(interpretation="srgb")
    if container == "palette.png":
        image.pngsave(str(path), palette=True, dither=0, bitdepth=8)
    elif container == "gif":
        image.gifsave(str(path), dither=0, bitdepth=8)
    elif container == "jpg":
        image.jpegsave(str(path), Q=100)
    elif container == "webp":
        image.webpsave(str(path), lossless=True)
    else:
        image.write_to_file(str(path))


#: Display P3 to sRGB, linear: the profiles' colours computed, not looked up.
P3_TO_SRGB = to_srgb(rgb_profile("p3"))


def ideal(levels: np.ndarray, profile: bytes | None, kept: bool = False) -> pyvips.Image:
    """What a source of ``levels`` (0..1, as stored) shows, 8-bit, without a profile:
    its profile's curve (gamma 1.8 grey, or Display P3) computed in floats; or, ``kept``,
    its 8-bit levels in the profile's space, the profile with them."""
    bands = levels.shape[2]
    colours = 1 if bands < 3 else 3
    shown = levels.copy()
    if profile is not None and not kept:
        picture = levels[..., :colours]
        linear = picture**1.8 if bands < 3 else srgb_linear(picture) @ P3_TO_SRGB.T
        shown[..., :colours] = srgb_encoded(linear)
    image = pyvips.Image.new_from_array(np.rint(shown * 255).astype(np.uint8))
    image = image.copy(interpretation=space(bands, False))
    if profile is not None and kept:
        image.set_type(pyvips.GValue.blob_type, "icc-profile-data", profile)
    return image


def levels(stored: pyvips.Image, sample: str, values: np.ndarray) -> np.ndarray:
    """The source's levels from 0 to 1 as stored (the picture's, rounded to the
    format); a float without a profile, the picture's own (it stores linear light)."""
    if sample == "float32":
        return values
    return pixels(stored, float) / np.iinfo(np.dtype(sample)).max


def decoded(path: Path, bands: int) -> pyvips.Image:
    """A palette file's own pixels (its palette lost some levels), grey when drawn so."""
    image = pyvips.Image.new_from_file(str(path))
    if bands < 3:
        grey = image[0] if image.bands == 3 else image[0].bandjoin(image[3])
        return grey.copy(interpretation="b-w")
    return image


def render(source: Path, tasks: str, folder: Path, name: str) -> pyvips.Image:
    parsed = chain.parse(tasks.split("/"))
    output = chain.made_output(parsed, "image/png")
    dest = folder / f"{name}.{output.extension}"
    with composite.using(((MARK, folder / "mark.png"),), LIMITS, 0, dest):
        VipsEngine(threads_per_job=1).render(source, parsed, output, dest, LIMITS)
    return pyvips.Image.new_from_file(str(dest))


def shown(image: pyvips.Image) -> np.ndarray:
    """The result's pixels (in its profile's space when it has one), each colour
    weighted by its alpha (a transparent pixel's colour is never seen)."""
    found = pixels(image)
    if found.shape[2] in (2, 4):
        alpha = found[..., -1:]
        found = np.concatenate([found[..., :-1] * alpha // 255, alpha], axis=2)
    return found


@pytest.mark.parametrize(("seed", "n", "item"), cases(), ids=lambda v: str(v)[:14])
def test_a_picture_gives_one_result_whatever_its_sample_format(
    tmp_path: Path, seed: int, n: int, item: Case
) -> None:
    values = truth(np.random.default_rng(seed * 100 + n), item.bands)
    profile = None
    if item.profiled:
        profile = grey_profile(1.8) if item.bands < 3 else p3_profile()
    source = tmp_path / f"source.{item.container.removeprefix('palette.')}"
    stored = encoded(values, item.sample, item.profiled)
    write(stored, source, item.container, profile)
    mark = pyvips.Image.new_from_array(np.full((10, 10, 3), 90, np.uint8))
    mark.copy(interpretation="srgb").pngsave(str(tmp_path / "mark.png"))
    got = render(source, item.tasks, tmp_path, "got")
    kept = bool(got.get_typeof("icc-profile-data"))
    perfect = tmp_path / "ideal.png"
    if item.container in ("palette.png", "gif"):
        decoded(source, item.bands).pngsave(str(perfect))
    else:
        ideal(levels(stored, item.sample, values), profile, kept).pngsave(str(perfect))
    want = render(perfect, item.tasks, tmp_path, "want")
    where = (seed, n, item)
    assert (got.bands, got.interpretation) == (want.bands, want.interpretation), where
    assert kept == bool(want.get_typeof("icc-profile-data")), where
    difference = np.abs(shown(got) - shown(want))
    most, mean = (40, 4.0) if item.lossy else (6, 1.0)
    assert difference.max() <= most and difference.mean() <= mean, (
        where,
        float(difference.mean()),
        int(difference.max()),
    )


@pytest.mark.parametrize("sample", ["double", "complex"])
def test_a_sample_format_no_loader_reads_is_refused_as_an_invalid_image(
    tmp_path: Path, sample: str
) -> None:
    """A 64-bit float or complex TIFF (libvips' TIFF loader reads neither) is a client's
    file the service cannot read: a 422 with its stable code, not a 5xx."""
    source = tmp_path / "source.tif"
    pyvips.Image.new_from_array(np.linspace(0, 1, 64).reshape(8, 8)).cast(sample).tiffsave(
        str(source)
    )
    with pytest.raises(errors.InvalidImage):
        render(source, "resize=width:4", tmp_path, "out")


def chunk(path: Path, kind: bytes) -> bytes:
    data, at = path.read_bytes(), 8
    while data[at + 4 : at + 8] != kind:
        at += 12 + int.from_bytes(data[at : at + 4], "big")
    return data[at + 8 : at + 8 + int.from_bytes(data[at : at + 4], "big")]


def test_grey_tables_ignore_transparent_entries(tmp_path: Path) -> None:
    """A palette's fully transparent entry may hold any colour (libimagequant gives it
    one): a PNG of greys with one stays grey."""
    values = truth(np.random.default_rng(5189), 2)
    values[:4, :4, 1] = 0  # transparent pixels
    source = tmp_path / "source.png"
    write(encoded(values, "uint8", False), source, "palette.png", None)
    entries, alphas = chunk(source, b"PLTE"), chunk(source, b"tRNS")
    hidden = [entries[3 * i : 3 * i + 3] for i, alpha in enumerate(alphas) if alpha == 0]
    assert any(len(set(entry)) > 1 for entry in hidden)  # a colour, never seen
    got = render(source, "flip", tmp_path, "got")
    assert (got.bands, got.interpretation) == (2, "b-w")


@pytest.mark.parametrize("seed", SEEDS[:4])
def test_a_16_bit_grey_profile_applies_in_16_bits(tmp_path: Path, seed: int) -> None:
    """A 16-bit grey scan with a gamma 1.8 profile, stripped: its 8-bit levels are the
    profile's curve of its 16-bit levels, computed in floats, within 2 levels and 0.2 on
    average. Made 8-bit before the profile applied, they were 0.31 off on average."""
    rng = np.random.default_rng(seed)
    stored = rng.integers(0, 65536, (HEIGHT, WIDTH, 1)).astype(np.uint16)
    source = tmp_path / rng.choice(["source.png", "source.tif"])
    image = pyvips.Image.new_from_array(stored).copy(interpretation="grey16")
    write(image, source, source.suffix[1:], grey_profile(1.8))
    tasks = str(rng.choice(["no_metadata", "flip/no_metadata", "output=strip:true"]))
    got = pixels(render(source, tasks, tmp_path, "got"), float)
    want = np.rint(srgb_encoded((stored / 65535) ** 1.8) * 255)
    if "flip" in tasks:  # upside down
        want = want[::-1]
    difference = np.abs(got - want)
    assert got.shape == want.shape, (tasks, got.shape)
    assert difference.max() <= 2 and difference.mean() <= 0.25, (
        tasks,
        float(difference.mean()),
        float(difference.max()),
    )


@pytest.mark.parametrize("seed", SEEDS)
def test_a_file_placed_in_any_sample_format_is_placed_as_its_8_bit_version(
    tmp_path: Path, seed: int
) -> None:
    """The files a ``watermark`` or ``collage`` places are read as the main source is."""
    rng = random.Random(seed)
    sample = rng.choice(CONTAINERS["tif"][0])
    bands = rng.choice((1, 2, 3, 4))
    values = truth(np.random.default_rng(seed), bands)
    base = pyvips.Image.new_from_array(np.full((40, 60, 3), 200, np.uint8))
    base.copy(interpretation="srgb").pngsave(str(tmp_path / "base.png"))
    stored = encoded(values, sample, False)
    write(stored, tmp_path / "placed.tif", "tif", None)
    ideal(levels(stored, sample, values), None).pngsave(str(tmp_path / "placed.png"))
    segment = rng.choice([f"watermark=file:{MARK},size:50", f"collage=files:[{MARK}],margin:2"])
    made = []
    for name in ("placed.tif", "placed.png"):
        parsed = chain.parse([segment, "output=format:png"])
        output = chain.made_output(parsed, "image/png")
        dest = tmp_path / f"{name}.out.png"
        with composite.using(((MARK, tmp_path / name),), LIMITS, 0, dest):
            VipsEngine(threads_per_job=1).render(
                tmp_path / "base.png", parsed, output, dest, LIMITS
            )
        made.append(shown(pyvips.Image.new_from_file(str(dest))))
    got, want = made
    assert got.shape == want.shape, (sample, bands, segment)
    difference = np.abs(got - want)
    assert difference.max() <= 6 and difference.mean() <= 1.0, (sample, bands, segment)


@pytest.mark.parametrize("space", ["lab", "labs"])
def test_a_cielab_tiff_is_read_in_libvips_own_terms(tmp_path: Path, space: str) -> None:
    """A CIELAB TIFF (floats, or 16 bits, which libvips reads as its signed LabS) is no
    light levels to scale: read as integers from 0 to their maximum, 16-bit CIELAB came
    out 68 levels off on average."""
    values = truth(np.random.default_rng(5185), 3) * [100, 60, 60] - [0, 30, 30]
    lab = pyvips.Image.new_from_array(values.astype(np.float32)).copy(interpretation="lab")
    source = tmp_path / "source.tif"
    lab.colourspace(space).tiffsave(str(source))
    got = pixels(render(source, "output=format:png", tmp_path, "got"))
    difference = np.abs(got - pixels(lab.colourspace("srgb")))
    assert difference.max() <= 1, float(difference.mean())
