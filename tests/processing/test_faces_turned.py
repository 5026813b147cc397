"""Photos whose pixels are stored sideways or mirrored with an Exif orientation (a phone's
portrait photo: tag 6) have their faces found as the photo is shown, boxes in the stored
pixels. The cascade finds upright faces only: such photos had none found, so crop_faces
answered the whole photo and blur_faces hid nothing. Faces from scikit-image's astronaut
photo placed at seeded random places and sizes (probe seeds 5144-5146)."""

from __future__ import annotations

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
    first = faces.detect(upright)[0]
    stored = tagged(tagged(upright, 8).autorot(), 6)  # a portrait photo: turned, tag 6
    cut = facetasks.crop_faces(stored, Task("crop_faces", (("mode", "crop"),)))
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


@pytest.mark.parametrize(
    "task",
    [
        "crop_faces=width:60,height:60",
        "smart_crop=width:60,height:60,mode:face",
        "resize=width:60,height:60,fit:crop,align:faces",
        "pixelate_faces",
    ],
)
def test_a_photo_stored_turned_is_cut_on_its_face_its_pixels_as_stored(
    task: str, tmp_path: Path
) -> None:
    """A photo stored on its side (tag 6) is cut where its upright twin is, the result's
    pixels as stored and its tag kept: shown, it is the twin's result."""
    upright = upright_photo(5145)
    results = []
    for name, photo in (("upright", upright), ("stored", tagged(tagged(upright, 8).autorot(), 6))):
        source = tmp_path / f"{name}.jpg"
        photo.jpegsave(str(source), Q=95)
        parsed = chain.parse([task, "output=format:png"])
        output = chain.output_for(parsed, "image/jpeg")
        dest = tmp_path / f"{name}-out.png"
        VipsEngine(threads_per_job=1).render(source, parsed, output, dest, LIMITS)
        results.append(pyvips.Image.new_from_file(str(dest)))
    plain, turned = results
    assert turned.get("orientation") == 6
    shown = turned.autorot()
    assert (shown.width, shown.height) == (plain.width, plain.height)
    assert (shown.cast("float") - plain).abs().avg() < 4, task
