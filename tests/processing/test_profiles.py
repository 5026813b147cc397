"""Colour profiles: an image tagged with a profile other than sRGB (here Display P3)
shows the same colours whatever the chain. A result saved without a profile (stripped,
or a GIF, which holds none) has its pixels turned into sRGB first, as a file without a
profile is shown as sRGB; a result that keeps the profile keeps its pixels as they are."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import pyvips
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stowage.processing import chain, composite
from stowage.processing.vips import VipsEngine
from tests.processing.test_engine import LIMITS

WIDTH, HEIGHT = 160, 120
SOURCES = {"p3.jpg": "image/jpeg", "p3.png": "image/png", "p3.webp": "image/webp"}
DROPPING = ["no_metadata", "output=strip:true", "compress=metadata:true", "output=format:gif"]
KEEPING = ["compress", "output=format:png", "output=format:webp", "quality=value:90"]
BEFORE = [None, "resize=width:80", "flip", "rotate=deg:90", "crop=dim:[10,10,100,80]"]
AFTER = [None, "output=format:jpg", "output=format:png", "output=format:webp"]


def shown(image: pyvips.Image) -> pyvips.Image:
    """The colours a viewer shows: its profile applied, or sRGB when it has none."""
    if image.get_typeof("icc-profile-data"):
        image = image.icc_transform("srgb", embedded=True)
    return image.extract_band(0, n=3).cast("uchar")


def psnr(a: pyvips.Image, b: pyvips.Image) -> float:
    mse = ((a.cast("float") - b.cast("float")) ** 2).avg()
    return 99.0 if mse == 0 else 10 * math.log10(255**2 / mse)


def gradients() -> pyvips.Image:
    xy = pyvips.Image.xyz(WIDTH, HEIGHT)
    red, green = (xy[0] * 255 / WIDTH).cast("uchar"), (xy[1] * 255 / HEIGHT).cast("uchar")
    return red.bandjoin([green, (255 - red)]).copy(interpretation="srgb")


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Saturated gradients (where P3 and sRGB differ most), tagged Display P3."""
    folder = tmp_path_factory.mktemp("profiles")
    p3 = gradients().icc_export(output_profile="p3")
    for name in SOURCES:
        p3.write_to_file(str(folder / name), **({"Q": 95} if name.endswith("jpg") else {}))
    return folder


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    name=st.sampled_from(sorted(SOURCES)),
    before=st.sampled_from(BEFORE),
    saving=st.sampled_from(DROPPING + KEEPING),
    after=st.sampled_from(AFTER),
)
def test_the_colours_shown_are_the_sources_whatever_the_chain(
    sources: Path, tmp_path: Path, name: str, before: str | None, saving: str, after: str | None
) -> None:
    if saving == "output=format:gif" and after is not None:
        after = None  # one format a chain
    segments = [s for s in (before, saving, after) if s is not None]
    parsed = chain.parse(segments)
    output = chain.output_for(parsed, SOURCES[name])
    dest = tmp_path / f"out.{output.extension}"
    VipsEngine(threads_per_job=1).render(sources / name, parsed, output, dest, LIMITS)

    made = pyvips.Image.new_from_file(str(dest))
    if saving in DROPPING:
        assert not made.get_typeof("icc-profile-data"), segments
    # The source as shown, through the same geometry (a chain without the saving).
    plain = chain.parse([s for s in (before,) if s is not None] or ["flip", "flip"])
    expected = tmp_path / "expected.png"
    VipsEngine(threads_per_job=1).render(
        sources / name, plain, chain.output_for(plain, "image/png"), expected, LIMITS
    )
    bar = 28 if output.format == "gif" else 32  # a GIF holds 256 colours
    assert psnr(shown(made), shown(pyvips.Image.new_from_file(str(expected)))) > bar, segments


@pytest.mark.parametrize("profile", ["garbage", "truncated", "cmyk on rgb"])
@pytest.mark.parametrize("segment", ["no_metadata", "output=format:gif"])
def test_a_broken_profile_does_not_make_the_image_unreadable(
    tmp_path: Path, profile: str, segment: str
) -> None:
    """libvips falls back to sRGB for a profile it cannot use: the result is the pixels."""
    rgb = gradients()
    data = {
        "garbage": b"\x00" * 36 + b"acsp" + b"\x01" * 300,
        "truncated": rgb.icc_export(output_profile="p3").get("icc-profile-data")[:100],
        "cmyk on rgb": rgb.icc_export(output_profile="cmyk").get("icc-profile-data"),
    }[profile]
    tagged = rgb.copy()
    tagged.set_type(pyvips.GValue.blob_type, "icc-profile-data", data)
    tagged.jpegsave(str(tmp_path / "tagged.jpg"), Q=95)
    parsed = chain.parse([segment])
    output = chain.output_for(parsed, "image/jpeg")
    dest = tmp_path / f"out.{output.extension}"
    VipsEngine(threads_per_job=1).render(tmp_path / "tagged.jpg", parsed, output, dest, LIMITS)
    made = pyvips.Image.new_from_file(str(dest))
    assert (made.width, made.height) == (WIDTH, HEIGHT)
    assert psnr(shown(made), rgb) > (28 if output.format == "gif" else 32)


OTHER = "O" * 20


@pytest.mark.parametrize("tagged", ["base", "mark", "both"])
def test_files_placed_together_keep_their_colours(tmp_path: Path, tagged: str) -> None:
    """A logo and a photo in different colour spaces: each shows its own colours in the
    result (a P3 logo placed as it was on an sRGB photo came out more saturated)."""
    colours = {"base": [40, 170, 60], "mark": [200, 40, 160]}
    files = {}
    for name, side in (("base", 80), ("mark", 20)):
        plain = pyvips.Image.black(side, side).new_from_image(colours[name]).cast("uchar")
        plain = plain.copy(interpretation="srgb")
        if tagged in (name, "both"):  # these numbers, read as Display P3
            plain = plain.icc_export(output_profile="p3")
        files[name] = tmp_path / f"{name}.png"
        plain.pngsave(str(files[name]))
    parsed = chain.parse([f"watermark=file:{OTHER}"])
    output = chain.output_for(parsed, "image/png")
    with composite.using(((OTHER, files["mark"]),), LIMITS, 0, tmp_path / "out"):
        VipsEngine(threads_per_job=1).render(
            files["base"], parsed, output, tmp_path / "out.png", LIMITS
        )
    made = shown(pyvips.Image.new_from_file(str(tmp_path / "out.png")))
    for (x, y), name in (((40, 40), "mark"), ((5, 5), "base")):
        got, want = made(x, y), shown(pyvips.Image.new_from_file(str(files[name])))(5, 5)
        assert all(abs(g - w) <= 3 for g, w in zip(got, want, strict=True)), (name, got, want)
