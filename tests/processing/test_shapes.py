"""``rounded_corners`` computes one corner's mask and mirrors it (processing/shapes.py);
``smart_crop`` first in a chain shrinks on load (processing/subjects.py). Each is held to
the plain computation it replaces, on generated sizes, radii and blurs."""

from __future__ import annotations

from pathlib import Path

import pytest
import pyvips
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stowage.processing import ops, shapes, subjects, vips
from stowage.processing.base import Task
from tests.processing.test_engine import render
from tests.processing.test_faces import ASTRONAUT, task

GENERATED = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def photo(width: int, height: int, alpha: bool = False) -> pyvips.Image:
    xy = pyvips.Image.xyz(width, height)
    image = (xy[0] * 7 % 256).bandjoin([xy[1] * 3 % 256, (xy[0] + xy[1]) % 256])
    return (image.bandjoin(200) if alpha else image).cast("uchar").copy(interpretation="srgb")


def whole_mask(image: pyvips.Image, radius: float, blur: float) -> pyvips.Image:
    """The mask computed for every pixel (what rounded_corners did before)."""
    limit = min(image.width, image.height) / 2
    return shapes._mask_tile(image.width, image.height, min(radius, limit), blur)


def differs(a: pyvips.Image, b: pyvips.Image) -> float:
    assert (a.width, a.height, a.bands) == (b.width, b.height, b.bands)
    return float((a.cast("int") - b.cast("int")).abs().max())


@GENERATED
@given(
    width=st.integers(1, 300),
    height=st.integers(1, 300),
    radius=st.integers(1, 200),
    blur=st.sampled_from([0, 0.3, 1, 2.5, 7.25, 20]),
    background=st.sampled_from([None, "white", "red", "00ff0080"]),
    alpha=st.booleans(),
)
def test_rounded_corners_are_the_whole_mask_applied(
    width: int, height: int, radius: int, blur: float, background: str | None, alpha: bool
) -> None:
    image = photo(width, height, alpha)
    options = {"radius": radius, "blur": blur} | ({"background": background} if background else {})
    rounded = task("rounded_corners", **options)
    done = shapes.rounded_corners(image, rounded)
    expected = ops.masked(image, whole_mask(image, radius, blur), rounded)
    assert differs(done, expected) == 0


@GENERATED
@given(blur=st.floats(0.1, 20), radius=st.integers(4, 60))
def test_the_inside_stays_opaque_whatever_the_blur(blur: float, radius: int) -> None:
    """libvips' integer blur kernel summed to a little under 1: 255 came out 251, the
    whole image a little transparent, not only its corners."""
    rounded = task("rounded_corners", radius=radius, blur=blur)
    done = shapes.rounded_corners(photo(400, 300), rounded)
    assert done(200, 150)[3] == 255
    assert done(0, 0)[3] < 255  # the corner itself is cut away


def test_pixels_outside_the_corners_are_the_source() -> None:
    image = photo(320, 240)
    done = shapes.rounded_corners(image, task("rounded_corners", radius=40, background="white"))
    middle = (image.width - 2 * 45, image.height)
    assert differs(done.crop(45, 0, *middle), image.crop(45, 0, *middle)) == 0
    assert list(done(0, 0)) == [255, 255, 255]  # the corner shows the background


def test_smart_crop_first_in_a_chain_shrinks_on_load_and_finds_the_same_face(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """First in a chain the picture is decoded shrunk (a JPEG at 1/2 here: to the face
    finder's size, where its faces are looked for); the window is the one the full
    decode gives, on the face (the astronaut's is left of centre)."""
    source = tmp_path / "astronaut.jpg"
    pyvips.Image.new_from_file(str(ASTRONAUT)).resize(4).jpegsave(str(source), Q=92)
    shrinks: list[int] = []
    chosen = vips._jpeg_shrink

    def spying(header: pyvips.Image, width: int, height: int) -> int:
        shrinks.append(chosen(header, width, height))
        return shrinks[-1]

    monkeypatch.setattr(vips, "_jpeg_shrink", spying)
    shrunk = pyvips.Image.new_from_file(str(render(tmp_path, source, "smart_crop=w:300,h:300")))
    assert shrinks == [2]  # the 2048-px JPEG decoded at 1024 px, the finder's size
    whole = pyvips.Image.new_from_file(str(source))
    full = subjects.smart_crop(whole, Task("smart_crop", (("height", 300), ("width", 300))))
    assert (shrunk.width, shrunk.height) == (300, 300)
    assert (shrunk - full).abs().avg() < 6  # the same window, up to the two decodes
    assert (shrunk - full.flip("horizontal")).abs().avg() > 20  # (which would differ)


def test_smart_crop_first_is_followed_by_the_rest_of_the_chain(tmp_path: Path) -> None:
    source = tmp_path / "astronaut.jpg"
    pyvips.Image.new_from_file(str(ASTRONAUT)).resize(2).jpegsave(str(source))
    out = render(tmp_path, source, "smart_crop=w:200,h:100", "rotate=deg:90", "blur=amount:2")
    made = pyvips.Image.new_from_file(str(out))
    assert (made.width, made.height) == (100, 200)
