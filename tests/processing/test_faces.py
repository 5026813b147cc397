"""The face finder and the face tasks on real photos: scikit-image's bundled
``astronaut.png`` (NASA, public domain) and faces of its ``lfw_subset`` placed on a
background; plain images and photos without people must give no face."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
import pyvips
from hypothesis import given, settings
from hypothesis import strategies as st

from stowage import errors
from stowage.processing import catalogue, chain, faces, facetasks, subjects
from stowage.processing.base import Limits, Task, Value
from stowage.processing.faces import Box
from stowage.processing.params import NotGiven
from stowage.processing.vips import VipsEngine
from tests.processing.rgbprofiles import rgb_profile

PHOTOS = Path(str(resources.files("skimage") / "data"))
ASTRONAUT = PHOTOS / "astronaut.png"
#: Where the face is in astronaut.png (512x512), read off the photo by hand: the centre
#: of the face (between the eyes and the mouth) and its size, brow to chin.
FACE_CENTRE = (224, 114)
FACE_SIDE = 100
SLOW = settings(max_examples=6, deadline=None)
LIMITS = Limits(
    max_input_pixels=50_000_000, max_input_bytes=10**9, max_output_dimension=4000, seconds=20
)


def task(name: str, **options: Value) -> Task:
    return Task(name, tuple(sorted(options.items())))


def astronaut(side: int = 512) -> pyvips.Image:
    image = pyvips.Image.new_from_file(str(ASTRONAUT))
    return image if side == 512 else image.resize(side / 512)


def group(count: int = 3) -> tuple[pyvips.Image, list[tuple[int, int]]]:
    """``count`` faces of Labeled Faces in the Wild in a row on a grey gradient, 100 px
    each: the image and the centre of each face, left to right."""
    lfw = np.load(PHOTOS / "lfw_subset.npy")[:count]
    width, height = 160 * count + 40, 220
    xy = pyvips.Image.xyz(width, height)
    image = (xy[1] * 0.3 + 90).cast("uchar")
    centres = []
    for i, face in enumerate(lfw):
        pixels = (face * 255).astype(np.uint8)
        tile = pyvips.Image.new_from_memory(pixels.tobytes(), 25, 25, 1, "uchar").resize(4)
        left, top = 40 + 160 * i, 60
        image = image.insert(tile, left, top)
        centres.append((left + 50, top + 50))
    return image.copy_memory(), centres


def near(box: Box, centre: tuple[int, int], side: float) -> bool:
    cx, cy = box.centre
    close = abs(cx - centre[0]) <= side * 0.25 and abs(cy - centre[1]) <= side * 0.25
    return close and side * 0.6 <= box.width <= side * 1.6


def mean_change(before: pyvips.Image, after: pyvips.Image, box: Box) -> float:
    area = (box.x, box.y, box.width, box.height)
    diff = (before.extract_area(*area).cast("float") - after.extract_area(*area)).abs()
    return float(diff.avg())


# -- the finder -------------------------------------------------------------------
def test_the_astronauts_face_is_found_where_it_is() -> None:
    found = faces.detect(astronaut())
    assert len(found) == 1
    assert near(found[0], FACE_CENTRE, FACE_SIDE)


@SLOW
@given(side=st.integers(180, 2600))  # a face from 35 px
def test_boxes_are_in_the_images_own_coordinates_at_any_size(side: int) -> None:
    """Larger than DETECT_SIDE the finder reads a smaller copy; the box is scaled back."""
    found = faces.detect(astronaut(side))
    scale = side / 512
    assert len(found) == 1
    assert near(
        found[0], (round(FACE_CENTRE[0] * scale), round(FACE_CENTRE[1] * scale)), 100 * scale
    )


def test_faces_are_numbered_left_to_right() -> None:
    image, centres = group(3)
    found = faces.detect(image)
    assert len(found) == 3
    for box, centre in zip(found, centres, strict=True):
        assert near(box, centre, 100)


def lfw_tile(pixels: np.ndarray) -> pyvips.Image:
    """One 25 px LFW crop, enlarged 4x onto a 180 px tile (its edges extended)."""
    grey = (pixels * 255).astype(np.uint8)
    image = pyvips.Image.new_from_memory(grey.tobytes(), 25, 25, 1, "uchar")
    return image.resize(4, kernel="cubic").embed(40, 40, 180, 180, extend="copy")


def test_the_rate_the_docs_state_on_labeled_faces_in_the_wild() -> None:
    """docs/transformations.md: 97 of lfw_subset's 100 faces, no box on its 100 others."""
    lfw = np.load(PHOTOS / "lfw_subset.npy")
    found = sum(1 for face in lfw[:100] if faces.detect(lfw_tile(face)))
    assert found >= 97
    assert sum(len(faces.detect(lfw_tile(other))) for other in lfw[100:]) == 0


@pytest.mark.parametrize("kind", ["gradient", "flat", "noise"])
def test_no_face_in_plain_images(kind: str) -> None:
    xy = pyvips.Image.xyz(800, 600)
    image = {
        "gradient": (xy[0] * 255 / 800).cast("uchar").bandjoin([xy[1] * 255 / 600, 128]),
        "flat": pyvips.Image.black(800, 600, bands=3).linear(1, [200, 180, 160]).cast("uchar"),
        "noise": pyvips.Image.gaussnoise(800, 600, mean=128, sigma=40).cast("uchar"),
    }[kind]
    assert faces.detect(image) == []


@pytest.mark.parametrize(
    "name",
    [
        "chelsea.png", "coffee.png", "rocket.jpg", "motorcycle_left.png", "motorcycle_right.png",
        "horse.png", "hubble_deep_field.jpg", "retina.jpg", "grass.png", "gravel.png",
        "brick.png", "page.png", "text.png", "coins.png", "moon.png", "ihc.png", "cell.png",
        "clock_motion.png", "color.png", "logo.png", "microaneurysms.png", "phantom.png",
    ],
)  # fmt: skip
def test_no_face_in_photos_without_people(name: str) -> None:
    assert faces.detect(pyvips.Image.new_from_file(str(PHOTOS / name))) == []


def test_size_filters_follow_the_hosted_rules() -> None:
    boxes = [Box(0, 0, 100, 100), Box(0, 0, 200, 200), Box(0, 0, 300, 300)]
    # From 0 to 1: a fraction of the middle face (200): 200 - 0.3 * 200 = 140.
    assert faces.filtered(boxes, 0.3, 0) == boxes[1:]
    assert faces.filtered(boxes, 0, 0.3) == boxes[:2]  # 200 + 0.3 * 200 = 260
    assert faces.filtered(boxes, 150, 250) == boxes[1:2]  # above 1: pixels
    assert faces.filtered(boxes, 0, 0) == boxes


def test_detection_fits_in_a_job_process_address_space() -> None:
    """The job process runs under RLIMIT_AS (processing_job_memory, 2 GiB by default):
    importing OpenCV and finding faces in a 3000 px photo must work under it."""
    code = (
        "import resource; resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))\n"
        "import pyvips; from stowage.processing import faces\n"
        f"image = pyvips.Image.new_from_file({str(ASTRONAUT)!r}).resize(3000 / 512)\n"
        "print(len(faces.detect(image.copy_memory())))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1"


# -- the tasks --------------------------------------------------------------------
def test_export_answers_the_boxes_as_json() -> None:
    image = astronaut()
    answer = facetasks.export_faces(image, task("detect_faces", export=True))
    assert answer == [box.as_json() for box in faces.detect(image)]
    assert isinstance(answer, list) and set(answer[0]) == {"x", "y", "width", "height"}
    assert facetasks.export_faces(image, task("detect_faces")) is None  # an image, then
    declared = catalogue.TABLE["detect_faces"].answer
    assert declared is not None
    renderer, output = declared.render, declared.output
    assert json.loads(renderer(image, task("detect_faces", export=True))) == answer
    assert output.mimetype == "application/json"
    assert declared.when(task("detect_faces", export=True))
    assert not declared.when(task("detect_faces", color="red"))


def test_detect_faces_draws_the_box_outline_in_its_colour() -> None:
    image = astronaut()
    box = faces.detect(image)[0]
    drawn = facetasks.detect_faces(image, task("detect_faces", color="ff0000"))
    assert (drawn.width, drawn.height, drawn.bands) == (512, 512, 3)
    assert drawn(box.x, box.centre[1]) == [255.0, 0.0, 0.0]  # on the left edge
    assert drawn(*box.centre) == image(*box.centre)  # inside: untouched
    assert drawn(5, 5) == image(5, 5)


def test_detect_faces_outlines_in_the_colour_asked_on_a_kept_profile() -> None:
    """On a photo that keeps an Adobe RGB profile, 2080C0 is drawn as that profile's
    values, which show it (as they were, (32, 128, 192) showed as (0, 129, 196))."""
    image = astronaut().copy()
    image.set_type(pyvips.GValue.blob_type, "icc-profile-data", rgb_profile("adobe"))
    box = faces.detect(image)[0]
    drawn = facetasks.detect_faces(image, task("detect_faces", color="2080c0"))
    shown = drawn.icc_transform("srgb", embedded=True, depth=16)(box.x, box.centre[1])
    assert all(abs(v / 257 - w) <= 2 for v, w in zip(shown, (32, 128, 192), strict=True))


def test_crop_mode_is_the_face_box_itself() -> None:
    image = astronaut()
    box = faces.detect(image)[0]
    cropped = facetasks.crop_faces(image, task("crop_faces", mode="crop"))
    expected = image.extract_area(box.x, box.y, box.width, box.height)
    assert (cropped.width, cropped.height) == (box.width, box.height)
    assert (cropped - expected).abs().max() == 0


def test_thumb_of_100x100_contains_the_face() -> None:
    cropped = facetasks.crop_faces(astronaut(), task("crop_faces", width=100, height=100))
    assert (cropped.width, cropped.height) == (100, 100)
    # The default buffer (200 %) makes the crop three faces wide: the face is a third of
    # it, whole (the box is moved, not cut, where it meets the photo's top edge).
    found = faces.detect(cropped.resize(3))
    assert len(found) == 1
    assert found[0].x >= 0 and found[0].right <= 300 and found[0].bottom <= 300
    assert 60 <= found[0].width <= 160


@SLOW
@given(
    mode=st.sampled_from(["thumb", "crop", "fill"]),
    width=st.integers(1, 600),
    height=st.integers(1, 600),
    buffer=st.integers(0, 1000),
)
def test_crop_faces_with_width_and_height_is_exactly_that(
    mode: str, width: int, height: int, buffer: int
) -> None:
    options = {"mode": mode, "width": width, "height": height, "buffer": buffer}
    cropped = facetasks.crop_faces(astronaut(), task("crop_faces", **options))
    assert (cropped.width, cropped.height) == (width, height)


def test_crop_faces_without_a_face_leaves_the_image() -> None:
    plain = (pyvips.Image.black(300, 200) + 120).cast("uchar")
    assert facetasks.crop_faces(plain, task("crop_faces", width=50, height=50)).width == 300


def test_crop_faces_picks_the_numbered_face() -> None:
    image, _ = group(3)
    second = facetasks.crop_faces(image, task("crop_faces", mode="crop", faces=2))
    box = faces.detect(image)[1]
    assert (second.width, second.height) == (box.width, box.height)
    every = facetasks.crop_faces(image, task("crop_faces", mode="crop", faces="all"))
    assert every.width > 2 * 160  # from the first face to the last


@pytest.mark.parametrize("name", ["pixelate_faces", "blur_faces"])
@pytest.mark.parametrize("shape", ["rect", "oval"])
def test_faces_change_inside_their_box_and_nothing_outside(name: str, shape: str) -> None:
    image = astronaut()
    box = faces.detect(image)[0]
    op = facetasks.pixelate_faces if name == "pixelate_faces" else facetasks.blur_faces
    covered = op(image, task(name, type=shape))
    assert mean_change(image, covered, box) > 8  # a face is no longer recognisable
    outside = image.copy(interpretation="srgb")
    mask = pyvips.Image.black(512, 512).draw_rect(
        255, box.x, box.y, box.width, box.height, fill=True
    )
    changed = ((covered.cast("float") - outside).abs().bandor() > 0) & (mask == 0)
    assert changed.max() == 0


def test_buffer_widens_the_covered_area() -> None:
    image = astronaut()
    box = faces.detect(image)[0]
    ring = Box(box.x - 20, box.y - 20, 15, box.height)  # left of the face, in the buffer
    plain = facetasks.blur_faces(image, task("blur_faces"))
    wider = facetasks.blur_faces(image, task("blur_faces", buffer=100))
    assert mean_change(image, plain, ring) == 0
    assert mean_change(image, wider, ring) > 1


@SLOW
@given(
    mode=st.sampled_from(["face", "object", "auto"]),
    width=st.integers(1, 700),
    height=st.integers(1, 700),
)
def test_smart_crop_is_exactly_width_by_height(mode: str, width: int, height: int) -> None:
    cropped = subjects.smart_crop(
        astronaut(), task("smart_crop", mode=mode, width=width, height=height)
    )
    assert (cropped.width, cropped.height) == (width, height)


def test_smart_crop_keeps_the_face_in_a_narrow_strip() -> None:
    strip = subjects.smart_crop(astronaut(), task("smart_crop", mode="face", width=150, height=512))
    centre_x = faces.detect(astronaut())[0].centre[0]
    original = astronaut().extract_area(centre_x - 75, 0, 150, 512)
    assert (strip - original).abs().max() <= 1  # the window centred on the face


def test_smart_crop_with_one_side_keeps_the_proportion() -> None:
    cropped = subjects.smart_crop(astronaut(), task("smart_crop", width=128))
    assert (cropped.width, cropped.height) == (128, 128)


@st.composite
def one_side(draw: st.DrawFn) -> tuple[int, int, int]:
    """A source's width and height and a width to make, half of them where the height in
    proportion is exactly half a pixel (width 2*want*r, height r*odd)."""
    if draw(st.booleans()):
        return draw(st.integers(2, 500)), draw(st.integers(2, 500)), draw(st.integers(1, 400))
    want, r, odd = draw(st.integers(1, 60)), draw(st.integers(1, 4)), draw(st.integers(0, 60))
    return 2 * want * r, r * (2 * odd + 1), want


@settings(max_examples=40, deadline=None)
@given(sizes=one_side(), by_width=st.booleans())
def test_smart_crop_with_one_side_is_the_size_resize_makes(
    tmp_path_factory: pytest.TempPathFactory, sizes: tuple[int, int, int], by_width: bool
) -> None:
    width, height, want = sizes
    if not by_width:  # the same sizes turned: the width derived from a height
        width, height = height, width
    folder = tmp_path_factory.mktemp("one-side")
    source = folder / "source.png"
    pyvips.Image.gaussnoise(width, height, seed=1).cast("uchar").pngsave(str(source))
    side = f"{'width' if by_width else 'height'}:{want}"
    made = [outcome(source, folder, f"{name}={side}") for name in ("resize", "smart_crop")]
    assert made[0] == made[1], (width, height, side)  # a size, or the same refusal


def outcome(source: Path, folder: Path, segment: str) -> tuple[int, int] | str:
    """The result's size, or the code of the refusal (a side past the output limit)."""
    try:
        return rendered_from(source, folder, segment)
    except errors.StowageError as exc:
        return exc.code


def rendered_from(source: Path, folder: Path, segment: str) -> tuple[int, int]:
    parsed = chain.parse([segment])
    output = chain.output_for(parsed, "image/png")
    dest = folder / f"{segment.split('=')[0]}.{output.extension}"
    VipsEngine(threads_per_job=1).render(source, parsed, output, dest, LIMITS)
    image = pyvips.Image.new_from_file(str(dest))
    return image.width, image.height


def test_redeye_turns_red_pupils_dark_and_leaves_the_rest() -> None:
    image = astronaut().copy_memory()
    face = faces.detect(image)[0]
    eyes = faces.eyes(image, face)
    assert len(eyes) == 2
    red = image.copy()
    for eye in eyes:
        red = red.draw_circle([230, 20, 30], *eye.centre, max(2, eye.width // 6), fill=True)
    fixed = subjects.redeye(red, task("redeye"))
    for eye in eyes:
        r, g, b = fixed(*eye.centre)
        assert r <= max(g, b) + 10
    untouched = pyvips.Image.black(512, 512)  # where the eyes of the red photo are found
    for eye in faces.eyes(red, faces.detect(red)[0]):
        untouched = untouched.draw_rect(255, eye.x, eye.y, eye.width, eye.height, fill=True)
    changed = ((fixed.cast("float") - red).abs().bandor() > 0) & (untouched == 0)
    assert changed.max() == 0


def test_metadata_answers_the_size_at_that_step() -> None:
    image = astronaut(300)
    assert subjects.metadata_answer(image, task("metadata")) == {"width": 300, "height": 300}
    only = subjects.metadata_answer(image, task("metadata", params=("height", "filename")))
    assert only == {"height": 300}
    answer = catalogue.TABLE["metadata"].answer
    assert answer is not None
    renderer, output = answer.render, answer.output
    assert json.loads(renderer(image, task("metadata"))) == {"width": 300, "height": 300}
    assert output.mimetype == "application/json"


def test_align_faces_crop_is_centred_on_the_face() -> None:
    window = subjects.crop_on_faces(astronaut(), 120, 120)
    found = faces.detect(window.resize(2))
    assert (window.width, window.height) == (120, 120)
    assert len(found) == 1 and near(found[0], (120, 120), 200)
    assert faces.detect_shown(astronaut()) == faces.detect(astronaut())  # untagged


# -- the declarations ---------------------------------------------------------------
SPECS = {spec.name: spec for spec in (*facetasks.TASKS, *subjects.TASKS)}
#: (task, parameter, short name, lowest, highest, whole numbers only), as the hosted
#: documentation and filestack-js 4.3.8's schema give them.
RANGES = [
    ("detect_faces", "minsize", "n", 0, 10_000, False),
    ("detect_faces", "maxsize", "x", 0, 10_000, False),
    ("crop_faces", "width", "w", 1, 10_000, True),
    ("crop_faces", "height", "h", 1, 10_000, True),
    ("crop_faces", "buffer", "b", 0, 10_000, True),
    ("crop_faces", "minsize", "n", 0, 10_000, False),
    ("pixelate_faces", "amount", "a", 2, 100, True),
    ("pixelate_faces", "blur", "l", 0, 20, False),
    ("pixelate_faces", "buffer", "b", 0, 10_000, True),
    ("blur_faces", "amount", "a", 0, 20, False),
    ("blur_faces", "blur", "l", 0, 20, False),
    ("smart_crop", "width", "w", 0, 10_000, True),
    ("smart_crop", "height", "h", 0, 10_000, True),
]


@pytest.mark.parametrize(("name", "param", "short", "low", "high", "whole"), RANGES)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_parameter_ranges_and_short_names(
    name: str, param: str, short: str, low: int, high: int, whole: bool, data: st.DataObject
) -> None:
    spec = SPECS[name].param(short)
    assert spec is not None and spec.name == param and SPECS[name].param(param) is spec
    inside = data.draw(st.integers(low, high) if whole else st.floats(low, high))
    if inside == 0 and getattr(spec.check, "zero_unset", False):  # smart_crop's sides
        with pytest.raises(NotGiven):  # 0 is the side not given (test_zero_unset.py)
            spec.check(inside)
    else:
        assert spec.check(inside) == inside
    outside = data.draw(
        st.one_of(st.integers(high + 1, 10**9), st.integers(-(10**9), low - 1))
        | st.floats(high + 0.001, 1e9)
    )
    with pytest.raises(ValueError):
        spec.check(outside)


@pytest.mark.parametrize(
    ("name", "param", "value", "checked"),
    [
        ("crop_faces", "faces", "all", "all"),
        ("crop_faces", "faces", 3, 3),
        ("pixelate_faces", "faces", (1, 3, 5), (1, 3, 5)),
        ("crop_faces", "mode", "FILL", "fill"),
        ("blur_faces", "type", "oval", "oval"),
        ("smart_crop", "mode", "object", "object"),
        ("detect_faces", "export", True, True),
        ("metadata", "params", ("width", "height"), ("width", "height")),
    ],
)
def test_documented_values_are_accepted(
    name: str, param: str, value: Value, checked: Value
) -> None:
    spec = SPECS[name].param(param)
    assert spec is not None and spec.check(value) == checked


@pytest.mark.parametrize(
    ("name", "param", "value"),
    [
        ("crop_faces", "faces", 0),
        ("crop_faces", "faces", 1001),
        ("crop_faces", "faces", "some"),
        ("crop_faces", "faces", (1, 0)),
        ("crop_faces", "mode", "zoom"),
        ("pixelate_faces", "type", "star"),
        ("smart_crop", "mode", "dog"),
        ("detect_faces", "export", "sometimes"),
        ("metadata", "params", ("width", "colour")),
        ("metadata", "params", ("width", "width")),
    ],
)
def test_values_outside_the_documentation_are_refused(name: str, param: str, value: Value) -> None:
    spec = SPECS[name].param(param)
    assert spec is not None
    with pytest.raises(ValueError):
        spec.check(value)


def test_documented_defaults() -> None:
    defaults = {(spec.name, p.name): p.default for spec in SPECS.values() for p in spec.params}
    assert defaults[("crop_faces", "mode")] == "thumb"
    assert defaults[("crop_faces", "faces")] == 1
    assert defaults[("pixelate_faces", "faces")] == "all"
    assert defaults[("pixelate_faces", "amount")] == 10
    assert defaults[("pixelate_faces", "blur")] == 4
    assert defaults[("blur_faces", "type")] == "rect"
    assert defaults[("detect_faces", "minsize")] == 0.35
    assert defaults[("smart_crop", "mode")] == "auto"


# -- through the engine, as URLs ask --------------------------------------------------
def rendered(tmp_path: Path, *segments: str) -> pyvips.Image:
    source = tmp_path / "astronaut.jpg"
    astronaut().jpegsave(str(source), Q=95)
    parsed = chain.parse(list(segments))
    output = chain.output_for(parsed, "image/jpeg")
    dest = tmp_path / f"out.{output.extension}"
    VipsEngine().render(source, parsed, output, dest, LIMITS)
    return pyvips.Image.new_from_file(str(dest)).copy_memory()  # dest is written again


def test_crop_faces_thumb_through_the_engine(tmp_path: Path) -> None:
    image = rendered(tmp_path, "crop_faces=m:thumb,w:100,h:100")
    assert (image.width, image.height) == (100, 100)
    assert len(faces.detect(image.resize(3))) == 1


def test_align_faces_first_in_a_chain_shrinks_on_load_and_keeps_the_face(
    tmp_path: Path,
) -> None:
    """A first resize reads a shrunk copy once; align:faces reads it twice."""
    on_faces = rendered(tmp_path, "resize=w:200,h:100,f:crop,a:faces")
    centred = rendered(tmp_path, "resize=w:200,h:100,f:crop")
    cover = astronaut().thumbnail_image(200, height=200, size="force").copy_memory()
    face = faces.detect(cover)[0]
    left, top = faces.anchor(cover, 200, 100)
    assert top <= face.y and face.bottom <= top + 100  # the window holds the whole face
    expected = cover.extract_area(left, top, 200, 100)
    assert (on_faces.width, on_faces.height) == (200, 100)
    assert float((on_faces.cast("float") - expected).abs().avg()) < 6
    assert float((centred.cast("float") - expected).abs().avg()) > 15  # the centre is lower
    later = rendered(tmp_path, "flip", "flip", "resize=w:200,h:100,f:crop,a:faces")
    assert float((later.cast("float") - expected).abs().avg()) < 6  # later in a chain too


@pytest.mark.parametrize(
    ("segments", "size"),
    [
        (("smart_crop=width:200,height:200",), (200, 200)),
        (("resize=w:300", "smart_crop=w:100,h:150,m:face"), (100, 150)),
        (("resize=width:300", "crop_faces=f:all,m:fill,w:50,h:80"), (50, 80)),
        (("pixelate_faces=t:oval,a:20", "blur_faces=f:all"), (512, 512)),
        (("redeye", "detect_faces=c:red,n:0.2"), (512, 512)),
    ],
)
def test_face_tasks_in_chains(
    tmp_path: Path, segments: tuple[str, ...], size: tuple[int, int]
) -> None:
    image = rendered(tmp_path, *segments)
    assert (image.width, image.height) == size


@SLOW
@given(
    canvas=st.tuples(st.integers(1200, 3200), st.integers(700, 1400)),
    scale=st.floats(1.3, 2.2),
    place=st.tuples(st.floats(0, 1), st.floats(0, 1)),
    box=st.tuples(st.integers(60, 200), st.integers(60, 200)),
    first=st.booleans(),
)
def test_align_faces_finds_a_face_the_cover_shrinks_under_the_finders_smallest(
    tmp_path_factory: pytest.TempPathFactory,
    canvas: tuple[int, int],
    scale: float,
    place: tuple[float, float],
    box: tuple[int, int],
    first: bool,
) -> None:
    """The face was looked for in the cover, the picture scaled to cover the box: a face
    of a fourteenth of a 3000x1000 photo was 20 px there, under the finder's 24, and the
    centre was cut instead. The cut now holds the face's centre, as smart_crop's did."""
    tmp_path = tmp_path_factory.mktemp("wide")
    face = astronaut().extract_area(130, 20, 190, 190).resize(scale)
    width, height = canvas
    left = int(place[0] * (width - face.width))
    top = int(place[1] * (height - face.height))
    picture = (pyvips.Image.black(width, height, bands=3) + 230).cast("uchar")
    picture.insert(face, left, top).copy(interpretation="srgb").pngsave(str(tmp_path / "s.png"))
    segments = [] if first else ["crop=dim:[0,0,100000,100000]"]
    segments.append(f"resize=w:{box[0]},h:{box[1]},f:crop,a:faces")
    parsed = chain.parse(segments)
    output = chain.output_for(parsed, "image/png")
    VipsEngine().render(tmp_path / "s.png", parsed, output, tmp_path / "o.png", LIMITS)
    made = pyvips.Image.new_from_file(str(tmp_path / "o.png"))
    factor = max(box[0] / width, box[1] / height)
    cover_w, cover_h = round(width * factor), round(height * factor)
    centre_x = (left + (FACE_CENTRE[0] - 130) * scale) * cover_w / width
    centre_y = (top + (FACE_CENTRE[1] - 20) * scale) * cover_h / height
    # where the cut can start for the face's centre to be inside it
    spare_w, spare_h = cover_w - box[0], cover_h - box[1]
    at_x = min(max(0, round(centre_x - box[0] / 2)), spare_w)
    at_y = min(max(0, round(centre_y - box[1] / 2)), spare_h)
    cover = pyvips.Image.new_from_file(str(tmp_path / "s.png")).thumbnail_image(
        cover_w, height=cover_h, size="force"
    )
    expected = cover.extract_area(at_x, at_y, box[0], box[1])
    assert (made.width, made.height) == box
    difference = float((made.cast("float") - expected.cast("float")).abs().avg())
    assert difference < 8, (difference, canvas, box, (left, top))


@settings(max_examples=30, deadline=None)
@given(
    photo=st.sampled_from(["astronaut", "group", "astronaut-wide"]),
    mode=st.sampled_from(["thumb", "crop", "fill"]),
    width=st.none() | st.integers(1, 400),
    height=st.none() | st.integers(1, 400),
    buffer=st.integers(0, 10_000),
)
def test_crop_faces_is_never_larger_than_estimated(
    photo: str, mode: str, width: int | None, height: int | None, buffer: int
) -> None:
    """crop_faces declared no size, so the estimate took the source's: a 512-px photo
    cropped to 10000x10000 ran 14 s, past the cost limit, where smart_crop is refused."""
    from stowage.processing import cost

    image = {
        "astronaut": lambda: astronaut(),
        "group": lambda: group()[0],
        "astronaut-wide": lambda: astronaut().embed(0, 0, 1400, 512, extend="mirror"),
    }[photo]()
    options: dict[str, Value] = {"mode": mode, "buffer": buffer}
    options |= {k: v for k, v in (("width", width), ("height", height)) if v is not None}
    made = facetasks.crop_faces(image, task("crop_faces", **options))
    estimated = cost.size_after(task("crop_faces", **options), image.width, image.height)
    assert made.width * made.height <= estimated[0] * estimated[1], (made.width, made.height)
