"""Photos whose pixels are stored sideways or mirrored with an Exif orientation (a phone's
portrait photo: tag 6) have their faces found as the photo is shown, boxes in the stored
pixels. The cascade finds upright faces only: such photos had none found, so crop_faces
answered the whole photo and blur_faces hid nothing. Faces from scikit-image's astronaut
photo placed at seeded random places and sizes (probe seeds 5144-5146)."""

from __future__ import annotations

import json
import random
from importlib import resources
from pathlib import Path

import pytest
import pyvips

from stowage.processing import chain, faces, facetasks
from stowage.processing.base import Limits, Task
from stowage.processing.vips import VipsEngine

ASTRONAUT = Path(str(resources.files("skimage") / "data" / "astronaut.png"))
LIMITS = Limits(10**8, 10**9, 10_000, 60, max_cost=8.0)
#: The orientation whose turn undoes each one's (libvips' autorot of the stored pixels).
UNDONE = {2: 2, 3: 3, 4: 4, 5: 5, 6: 8, 7: 7, 8: 6}


def tagged(image: pyvips.Image, orientation: int) -> pyvips.Image:
    out = image.copy()
    out.set_type(pyvips.GValue.gint_type, "orientation", orientation)
    return out


def upright_photo(seed: int) -> pyvips.Image:
    """Astronaut faces at random places and sizes on a plain background, apart."""
    rng = random.Random(seed)
    photo = pyvips.Image.new_from_file(str(ASTRONAUT))
    face = faces.detect(photo)[0].grown(60, photo.width, photo.height)
    tile = photo.extract_area(face.x, face.y, face.width, face.height)
    canvas = pyvips.Image.black(1000, 700, bands=3) + [rng.randint(60, 200)] * 3
    placed: list[tuple[int, int, int, int]] = []
    while len(placed) < 3:
        cell = tile.resize(rng.uniform(0.7, 1.5))
        x, y = rng.randint(0, 1000 - cell.width), rng.randint(0, 700 - cell.height)
        if all(x > a + w or a > x + cell.width or y > b + h or b > y + cell.height
               for a, b, w, h in placed):  # fmt: skip
            canvas = canvas.insert(cell, x, y)
            placed.append((x, y, cell.width, cell.height))
    return canvas.cast("uchar").copy(interpretation="srgb")


def shown_boxes(boxes: list[faces.Box], width: int, height: int, orientation: int) -> list:
    """Each stored box as it is shown: drawn on a mask of the stored frame, turned."""
    shown = []
    for box in boxes:
        mask = pyvips.Image.black(width, height).draw_rect(255, *box.as_json().values(), fill=True)
        turned = tagged(mask, orientation).autorot()
        left, top, w, h = turned.find_trim(threshold=10, background=[0])
        shown.append((left, top, w, h))
    return shown


@pytest.mark.parametrize("seed", [5144, 5145, 5146])
def test_faces_are_found_as_the_photo_is_shown(seed: int) -> None:
    upright = upright_photo(seed)
    expected = [(b.x, b.y, b.width, b.height) for b in faces.detect(upright)]
    assert len(expected) >= 2
    for orientation in range(2, 9):
        stored = tagged(upright, UNDONE[orientation]).autorot()  # the pixels as stored
        found = faces.detect(tagged(stored, orientation))
        seen = shown_boxes(found, stored.width, stored.height, orientation)
        assert len(seen) == len(expected), orientation
        for got, want in zip(seen, expected, strict=True):  # the same faces, in that order
            assert all(abs(a - b) <= 3 for a, b in zip(got, want, strict=True)), orientation


def test_crop_faces_cuts_the_face_of_a_photo_stored_sideways() -> None:
    upright = upright_photo(5144)
    task = Task("crop_faces", (("mode", "crop"),))
    first = facetasks.found(upright, task, 1)[0]  # the size filters' first face
    stored = tagged(tagged(upright, 8).autorot(), 6)  # a portrait photo: turned, tag 6
    cut = facetasks.crop_faces(stored, task)
    assert sorted((cut.width, cut.height)) == sorted((first.width, first.height))
    assert cut.get("orientation") == 6  # shown turned, as the source


@pytest.mark.parametrize("orientation", range(2, 9))
def test_red_eyes_are_looked_for_in_the_upper_face_as_shown(orientation: int) -> None:
    """``redeye`` looks for eyes in a face's upper part: the upper part as shown (the
    stored pixels' upper part of a photo tagged 6 is the face's side)."""
    photo = pyvips.Image.new_from_file(str(ASTRONAUT))
    expected = [tuple(e.as_json().values()) for e in faces.eyes(photo, faces.detect(photo)[0])]
    assert len(expected) == 2
    stored = tagged(tagged(photo, UNDONE[orientation]).autorot(), orientation)
    eyes = faces.eyes(stored, faces.detect(stored)[0])
    assert shown_boxes(eyes, stored.width, stored.height, orientation) == expected


#: Tasks placed on faces; ``{w}`` and ``{h}`` are given swapped for a photo stored
#: transposed (tags 5-8), so that both twins ask for the same picture as shown.
PLACED = (
    "crop_faces=width:{w},height:{h}",
    "crop_faces=mode:fill,width:{w},height:{h},buffer:37",
    "crop_faces=mode:crop,faces:[1,2],width:{w},height:{h}",
    "smart_crop=width:{w},height:{h},mode:face",
    "resize=width:{w},height:{h},fit:crop,align:faces",
    "pixelate_faces=amount:7,buffer:13",
    "pixelate_faces=type:oval,buffer:9,blur:0",
    "blur_faces=buffer:21",
)


def rendered(photo: pyvips.Image, task: str, suffix: str, tmp_path: Path) -> pyvips.Image:
    source = tmp_path / f"source.{suffix}"
    photo.write_to_file(str(source), **({"Q": 95} if suffix == "jpg" else {}))
    parsed = chain.parse([task, "output=format:png"])
    output = chain.output_for(parsed, "image/jpeg" if suffix == "jpg" else "image/png")
    dest = tmp_path / "out.png"
    VipsEngine(threads_per_job=1).render(source, parsed, output, dest, LIMITS)
    return pyvips.Image.new_from_file(str(dest)).copy_memory()


@pytest.mark.parametrize("orientation", range(2, 9))
@pytest.mark.parametrize("template", PLACED)
def test_a_photo_stored_turned_is_worked_on_exactly_where_its_upright_twin_is(
    template: str, orientation: int, tmp_path: Path
) -> None:
    """A photo stored turned or mirrored (its pixels lossless, so that both twins hold the
    same picture) is cut, pixelated and blurred where its upright twin is, to the pixel:
    its result, shown, is the twin's, and keeps the tag. Placed in the stored pixels, a
    window centred on a face, a box grown by half a pixel and blocks laid from a box's
    corner each landed a pixel off on a turned or mirrored axis (a 60 px cut of a face
    4-8 levels away on average). Random sizes, seeds 5555-5610."""
    rng = random.Random(5555 + 7 * PLACED.index(template) + orientation)
    upright = upright_photo(rng.randrange(10**6))
    # crop_faces scales its cut: kept under the faces' 70-130 px, as libvips enlarges
    # off centre (half an output pixel down and right), so a mirrored twin's lands apart
    small = 45 if template.startswith("crop_faces") else 120
    w, h = rng.randint(16, small), rng.randint(16, small)
    stored = tagged(tagged(upright, UNDONE[orientation]).autorot(), orientation)
    sw, sh = (h, w) if orientation >= 5 else (w, h)
    plain = rendered(upright, template.format(w=w, h=h), "png", tmp_path)
    turned = rendered(stored, template.format(w=sw, h=sh), "png", tmp_path)
    assert turned.get("orientation") == orientation
    shown = turned.autorot()
    assert (shown.width, shown.height) == (plain.width, plain.height)
    off = (shown.cast("float") - plain).abs()
    if template.startswith(("pixelate", "blur")):
        assert off.max() <= 1, (template, off.max())
    else:  # scaled: libvips shrinks a side's last few pixels and its two directions apart
        assert off.avg() < 1, (template, w, h, off.avg())


def test_a_jpeg_photo_stored_turned_has_its_faces_found_where_its_twins_are(
    tmp_path: Path,
) -> None:
    """Through the engine, a JPEG stored turned (a phone's portrait photo) has the faces of
    its upright twin's JPEG, numbered alike, within the cascade's noise: each twin is
    compressed apart, and the cascade's boxes move with that noise by a few pixels
    (docs/transformations.md measures it), so a cut scaled from a face can differ."""
    upright = upright_photo(5145)
    stored = tagged(tagged(upright, 8).autorot(), 6)
    task = "detect_faces=export:true,minsize:0,maxsize:0"
    boxes = []
    for photo in (upright, stored):
        source = tmp_path / "source.jpg"
        photo.jpegsave(str(source), Q=95)
        parsed = chain.parse([task])
        dest = tmp_path / "out.json"
        VipsEngine(threads_per_job=1).render(
            source, parsed, chain.output_for(parsed, "image/jpeg"), dest, LIMITS
        )
        boxes.append([faces.Box(**box) for box in json.loads(dest.read_text())])
    plain, turned = boxes
    seen = shown_boxes(turned, stored.width, stored.height, 6)
    assert len(plain) == len(seen) == 3
    for got, want in zip(seen, plain, strict=True):
        # 180 faces of 60 such pairs (seeds 7000-7767): a median 1 px apart, at most 9, a
        # twelfth of the face; seed 21206 drew 10 px of 113
        near = 2 + 0.12 * want.width
        assert all(abs(a - b) <= near for a, b in zip(got, want.rect, strict=True)), (got, want)
