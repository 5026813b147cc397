"""partial_pixelate and partial_blur with overlapping boxes (processing/effects_regions.py),
and pixelate_faces / blur_faces with overlapping faces (processing/facetasks.py): a pixel
inside any box's shape is hidden whatever the order of the boxes, and a pixel outside
all of them is the source's. Each box was mixed against the source, so where a later
box's ellipse or feathered edge left a pixel out, the source's pixel came back although
an earlier box had hidden it."""

from __future__ import annotations

import random
from collections.abc import Callable
from fractions import Fraction

import numpy as np
import pytest
import pyvips

from stowage.processing import faces, facetasks
from stowage.processing.faces import Box
from stowage.processing.params import half_up
from tests.processing.test_effects import run
from tests.processing.test_faces import task as face_task
from tests.processing.test_filters import assert_in_blocks

WIDTH, HEIGHT = 160, 120
Boxes = list[tuple[int, int, int, int]]


def noise(seed: int) -> pyvips.Image:
    rng = np.random.default_rng(seed)
    pixels = rng.integers(0, 256, (HEIGHT, WIDTH, 3), dtype=np.uint8)
    return pyvips.Image.new_from_array(pixels, interpretation="srgb")


def pixels(image: pyvips.Image) -> np.ndarray:
    return np.asarray(image.numpy(), dtype=np.int16)


def unchanged(render: Callable[[pyvips.Image], pyvips.Image], image: pyvips.Image) -> np.ndarray:
    """Where ``render`` leaves the source's pixel as it was, on ``image`` and on its
    negative: a hidden pixel may equal the source's by chance (a noise pixel matched its
    pixelated neighbourhood, seed 7779); a source that shows through does in both."""
    kept = [(pixels(render(each)) == pixels(each)).all(axis=2) for each in (image, image.invert())]
    return np.logical_and(*kept)


def depth(boxes: Boxes, oval: bool) -> np.ndarray:
    """For each box and pixel: how far inside the box's shape the pixel's centre lies,
    in pixels (negative outside): the rectangle's or the inscribed ellipse's edge."""
    ys, xs = np.mgrid[0:HEIGHT, 0:WIDTH] + 0.5
    found = []
    for x, y, w, h in boxes:
        if oval:
            rx, ry = w / 2, h / 2
            r = np.hypot((xs - x - rx) / rx, (ys - y - ry) / ry)
            found.append((1 - r) * min(rx, ry))
        else:
            found.append(np.minimum.reduce([xs - x, x + w - xs, ys - y, y + h - ys]))
    return np.array(found)


def random_boxes(rng: random.Random) -> Boxes:
    """1-6 boxes inside the image, at least 12 pixels a side, that mostly overlap."""
    made = []
    for _ in range(rng.randint(1, 6)):
        w, h = rng.randint(12, WIDTH), rng.randint(12, HEIGHT)
        made.append((rng.randint(0, WIDTH - w), rng.randint(0, HEIGHT - h), w, h))
    return made


@pytest.mark.parametrize("seed", [*range(30), 9595, 9604])
def test_every_pixel_inside_any_box_is_pixelated_in_any_order(seed: int) -> None:
    """9595 and 9604: a box whose sides each left one pixel past its whole blocks put
    that corner pixel back as it was, inside another box (``filters._cuts``)."""
    rng = random.Random(seed)
    image, boxes = noise(seed), random_boxes(rng)
    shape = rng.choice(["rect", "oval"])
    amount, blur = rng.randint(4, 30), rng.choice([0, rng.uniform(0, 8)])
    inside = depth(boxes, shape == "oval")
    hidden = (inside >= 1.5).any(axis=0)  # well inside one box's shape
    outside = (inside <= -1.5).all(axis=0) if shape == "oval" else (inside < 0).all(axis=0)
    for order in (boxes, boxes[::-1], rng.sample(boxes, len(boxes))):
        objects = tuple(order)

        def pixelated(each: pyvips.Image, objects: tuple[object, ...] = objects) -> pyvips.Image:
            return run(
                each, "partial_pixelate", objects=objects, amount=amount, blur=blur, type=shape
            )

        same = unchanged(pixelated, image)
        assert not (same & hidden).any(), (order, shape, np.argwhere(same & hidden)[:5])
        assert same[outside].all(), (order, shape)


@pytest.mark.parametrize("seed", range(30))
def test_every_pixel_inside_any_box_is_blurred_in_any_order(seed: int) -> None:
    rng = random.Random(seed)
    image, boxes = noise(seed), random_boxes(rng)
    shape = rng.choice(["rect", "oval"])
    amount, soft = rng.uniform(1, 20), rng.choice([0, rng.uniform(0, 20)])
    inside = depth(boxes, shape == "oval")
    hidden = (inside >= soft + 1.5).any(axis=0)  # past the feathered edge of one box
    outside = (inside <= -1.5).all(axis=0) if shape == "oval" else (inside < 0).all(axis=0)
    source, blurred = pixels(image), pixels(image.gaussblur(amount))
    results = []
    for order in (boxes, boxes[::-1], rng.sample(boxes, len(boxes))):
        out = pixels(
            run(image, "partial_blur", objects=tuple(order), amount=amount, blur=soft, type=shape)
        )
        off = np.abs(out - blurred).max(axis=2)
        assert off[hidden].max(initial=0) <= 2, (order, shape, soft)
        assert (out == source).all(axis=2)[outside].all(), (order, shape)
        results.append(out)
    # one blur under every box: the boxes' shapes combine the same in any order
    for other in results[1:]:
        assert np.abs(other - results[0]).max() <= 2


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("name", ["pixelate_faces", "blur_faces"])
def test_overlapping_faces_are_all_hidden(
    monkeypatch: pytest.MonkeyPatch, seed: int, name: str
) -> None:
    """The face tasks cover each face over the image with the faces before it covered:
    an oval face overlapping an earlier one never brings the source back."""
    rng = random.Random(seed)
    image, boxes = noise(seed), random_boxes(rng)
    found = [Box(x, y, w, h) for x, y, w, h in boxes]
    monkeypatch.setattr(faces, "detect_shown", lambda image: found)
    monkeypatch.setattr(faces, "filtered", lambda boxes, low, high: boxes)
    shape = rng.choice(["rect", "oval"])
    inside = depth(boxes, shape == "oval")
    hidden = (inside >= 1.5).any(axis=0)
    outside = (inside < 0).all(axis=0)
    op = facetasks.pixelate_faces if name == "pixelate_faces" else facetasks.blur_faces
    task = face_task(name, type=shape, amount=rng.randint(5, 20))
    same = unchanged(lambda each: op(each, task), image)
    assert not (same & hidden).any(), (boxes, shape)
    assert same[outside].all()


def thin_boxes(rng: random.Random) -> Boxes:
    """1-4 valid boxes that are, or are clipped to, a dot or a strip 1 or 2 pixels wide:
    1x1, 1xN, Nx1, a box of any size on the image's last column or row or its last
    pixel."""
    made = []
    for _ in range(rng.randint(1, 4)):
        kind = rng.choice(["dot", "column", "row", "right edge", "bottom edge", "corner"])
        w, h = rng.randint(1, 200), rng.randint(1, 200)
        x, y = rng.randrange(WIDTH), rng.randrange(HEIGHT)
        if kind in ("dot", "column"):
            w = 1 if kind == "dot" else rng.choice([1, 2])
        if kind in ("dot", "row"):
            h = 1 if kind == "dot" else rng.choice([1, 2])
        if kind in ("right edge", "corner"):
            x = WIDTH - (1 if kind == "corner" else rng.choice([1, 2]))
        if kind in ("bottom edge", "corner"):
            y = HEIGHT - (1 if kind == "corner" else rng.choice([1, 2]))
        made.append((x, y, w, h))
    return made


@pytest.mark.parametrize("seed", range(40))
def test_thin_and_clipped_boxes_are_changed_in_every_path(seed: int) -> None:
    """A box that is 1x1 (or a strip) once clipped to the image is a valid box: an oval
    one crashed the job (its mask came back from pyvips as a 0-d array)."""
    rng = random.Random(seed)
    image, boxes = noise(seed), thin_boxes(rng)
    name = rng.choice(["partial_pixelate", "partial_blur"])
    shape, blur = rng.choice(["rect", "oval"]), rng.choice([0, rng.uniform(0.1, 20)])
    amount = rng.randint(2, 20)
    out = pixels(run(image, name, objects=tuple(boxes), amount=amount, blur=blur, type=shape))
    assert out.shape == (HEIGHT, WIDTH, 3)
    kept = [(x, y, min(w, WIDTH - x), min(h, HEIGHT - y)) for x, y, w, h in boxes]
    inside = depth(kept, shape == "oval")
    source = pixels(image)
    assert (out == source).all(axis=2)[(inside < -1e-3).all(axis=0)].all(), (boxes, shape)
    if name == "partial_blur" and blur == 0:  # the shape's pixels are the blurred image's
        hidden = (inside > 1e-3).any(axis=0)
        off = np.abs(out - pixels(image.gaussblur(amount))).max(axis=2)
        assert off[hidden].max(initial=0) <= 2, (boxes, shape)


@pytest.mark.parametrize("seed", range(40))
def test_partial_pixelate_lays_blocks_of_amount_from_each_box_corner(seed: int) -> None:
    """Blocks of ``amount`` x ``amount`` from the box's top-left corner, cut at its edges:
    a box narrower than ``amount`` is one block across (it had square blocks of its
    short side), and its last columns and rows are pixelated too."""
    rng = random.Random(seed)
    image, source = noise(seed), pixels(noise(seed)).astype(np.float64)
    for box in [*thin_boxes(rng), *random_boxes(rng)][:4]:
        x, y, w, h = box
        amount = rng.choice([2, 3, rng.randint(2, 100)])
        out = run(image, "partial_pixelate", objects=(box,), amount=amount, blur=0)
        clipped = (x, y, min(w, WIDTH - x), min(h, HEIGHT - y))
        assert_in_blocks(source, pixels(out).astype(np.float64), clipped, amount)


@pytest.mark.parametrize("seed", [*range(8), 9702])
def test_pixelate_faces_lays_blocks_over_each_whole_face(
    monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    rng = random.Random(seed)
    image = noise(seed)
    box = rng.choice([*thin_boxes(rng), *random_boxes(rng)])
    face = Box(box[0], box[1], min(box[2], WIDTH - box[0]), min(box[3], HEIGHT - box[1]))
    monkeypatch.setattr(faces, "detect_shown", lambda image: [face])
    monkeypatch.setattr(faces, "filtered", lambda boxes, low, high: boxes)
    amount = rng.randint(2, 100)
    out = facetasks.pixelate_faces(image, face_task("pixelate_faces", amount=amount, blur=0))
    # the documented block, half up as the engine rounds (seed 9702: 22.5 is 23, not 22)
    side = max(2, half_up(Fraction(max(face.width, face.height) * amount, 100)))
    whole = (face.x, face.y, face.width, face.height)
    assert_in_blocks(pixels(image).astype(np.float64), pixels(out).astype(np.float64), whole, side)
