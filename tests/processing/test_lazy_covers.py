"""``smart_crop`` whose cover enlarges the picture: only the window is made, from the
picture held at its own size, and the window is found in a view of the cover at the
face finder's size (``geometry.lazy_cover``, as ``resize=fit:crop,align:faces``). A
54x135 photo to ``smart_crop=w:10000,h:171`` answered 422 ``IMAGE_TOO_LARGE`` for its
10000x25000 cover where ``resize=w:10000,h:171,f:crop`` made it. Sizes from fixed seeds:
tiny sources, extreme aspect ratios, sides up to 10000."""

from __future__ import annotations

import dataclasses
import math
import random
from pathlib import Path

import pytest
import pyvips

from stowage import errors
from stowage.processing import decisions, ops, subjects
from stowage.processing.base import Task
from stowage.processing.geometry import proportional, view_size
from tests.processing.test_engine import LIMITS, render
from tests.processing.test_faces import astronaut

LIMIT = 10_000
LIMITS_HERE = dataclasses.replace(LIMITS, max_output_dimension=LIMIT)


def picture(width: int, height: int, rng: random.Random) -> pyvips.Image:
    """A grey picture with a saturated band across it, somewhere: something for the
    attention measure to find."""
    image = pyvips.Image.black(width, height, bands=3).linear(1, 128)
    top = rng.randrange(height)
    image = image.draw_rect([230, 20, 20], 0, top, width, max(1, height // 20), fill=True)
    return image.cast("uchar").copy(interpretation="srgb")


def hosted_size(source: tuple[int, int], box: tuple[int, int]) -> tuple[int, int]:
    """docs/transformations.md: exactly width x height; one side 0 or absent follows the
    picture's proportion, rounded as ``resize`` rounds it."""
    (width, height), (want_w, want_h) = source, box
    if want_w and not want_h:
        return want_w, proportional(height, width, want_w)
    if want_h and not want_w:
        return proportional(width, height, want_h), want_h
    return want_w, want_h


def cases(seed: int, count: int) -> list[tuple[tuple[int, int], tuple[int, int], str]]:
    """Sources of 1-200 px, some a pixel thick; boxes with a long side of 3000-10000
    across the source's short side (the cover grows most) and a short one of 1-300, or
    0 (not given) now and then."""
    rng = random.Random(seed)
    found: list[tuple[tuple[int, int], tuple[int, int], str]] = [((54, 135), (10_000, 171), "auto")]
    while len(found) < count:
        short_side = rng.choice([1, 2, rng.randrange(1, 40), rng.randrange(1, 200)])
        long_side = rng.randrange(short_side, 201)
        long_box, short_box = rng.randrange(3000, LIMIT + 1), rng.randrange(1, 301)
        if rng.random() < 0.15:
            short_box = 0
        wide = rng.random() < 0.5  # the source wide (the box tall), or tall
        source = (long_side, short_side) if wide else (short_side, long_side)
        box = (short_box, long_box) if wide else (long_box, short_box)
        found.append((source, box, rng.choice(["auto", "face", "object"])))
    return found


def segment(box: tuple[int, int], mode: str) -> str:
    sides = ",".join(f"{k}:{v}" for k, v in zip("wh", box, strict=True) if v)
    return f"smart_crop={sides},mode:{mode}"


@pytest.mark.parametrize("seed", [5270, 5271])
def test_smart_crop_makes_its_size_whatever_its_cover(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed + 100)
    past, wrong = 0, []
    for source, box, mode in cases(seed, 12):
        path = tmp_path / "s.png"
        picture(*source, rng).pngsave(str(path))
        cover = subjects.cover_size(_task(box), *source)
        past += cover[0] * cover[1] > LIMIT * LIMIT
        want = hosted_size(source, box)
        try:
            made = render(
                tmp_path, path, segment(box, mode), "output=format:png", limits=LIMITS_HERE
            )
        except errors.ImageTooLarge as exc:  # right only for a result past the side limit
            if max(want) <= LIMIT or "would make the image" not in str(exc):
                wrong.append((source, box, mode, str(exc)))
            continue
        image = pyvips.Image.new_from_file(str(made))
        if (image.width, image.height) != want:
            wrong.append((source, box, mode, f"{image.width}x{image.height}, not {want}"))
    assert past >= 6  # most covers are past the limit's square: the class is tried
    assert not wrong, wrong


def _task(box: tuple[int, int]) -> Task:
    return Task(
        "smart_crop", tuple((k, v) for k, v in zip(("width", "height"), box, strict=True) if v)
    )


def _window(
    monkeypatch: pytest.MonkeyPatch, image: pyvips.Image, task: Task
) -> tuple[pyvips.Image, tuple[int, int]]:
    """smart_crop's result and the window it decided (its top-left in the cover)."""
    seen: list[tuple[int, int]] = []
    decide = decisions.decided

    def spying(choose):  # type: ignore[no-untyped-def]
        seen.append(decide(choose))
        return seen[-1]

    monkeypatch.setattr(decisions, "decided", spying)
    made = subjects.smart_crop(image, task)
    made = made.copy_memory()
    return made, seen[0]


@pytest.mark.parametrize("seed", [5272, 5273, 14666, 15374])
def test_the_window_is_where_the_whole_cover_puts_it(
    monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """Found in the view, the attention window is where it is found in the whole cover
    made in memory (as before), to libvips' own precision: its attention measure places
    the window on the cover shrunk to 32 px a side, so one of those pixels apart, which
    in whole pixels is 36 or 37 for a side of 1159 (seed 14666: 37), and the view's own
    rounding, one of its pixels in the cover (seed 15374: 82 for a side of 2548, whose
    attention pixel is 79.6 and whose view's pixel 2.5)."""
    rng = random.Random(seed)
    for _ in range(6):
        width, height = rng.randrange(20, 120), rng.randrange(20, 120)
        image = picture(width, height, rng).copy_memory()
        long_box, short_box = rng.randrange(1100, 2500), rng.randrange(20, 300)
        box = (long_box, short_box) if rng.random() < 0.5 else (short_box, long_box)
        task = Task("smart_crop", (("height", box[1]), ("mode", "object"), ("width", box[0])))
        cover_w, cover_h = subjects.cover_size(task, width, height)
        cover = ops.scaled(image, cover_w, cover_h, "force").copy_memory()
        cut = cover.smartcrop(*box, interesting="attention")
        whole = (-int(cut.xoffset), -int(cut.yoffset))
        made, window = _window(monkeypatch, image, task)
        assert (made.width, made.height) == box
        view_w, view_h = view_size(cover_w, cover_h)
        apart = abs(window[0] - whole[0]), abs(window[1] - whole[1])
        assert apart[0] <= math.ceil(cover_w / 32 + cover_w / view_w), (width, height, box)
        assert apart[1] <= math.ceil(cover_h / 32 + cover_h / view_h), (width, height, box)


def test_faces_place_the_window_as_they_place_align_faces(tmp_path: Path) -> None:
    """The astronaut's face, 240x200 of the photo's top, to a 400x10000 window: a
    12000x10000 cover, past the limit's square. The window is the one
    ``resize=fit:crop,align:faces`` cuts (the same view searched, the same cover), off
    the centre (her face is left of it)."""
    source = tmp_path / "a.png"
    astronaut(300).extract_area(0, 0, 240, 200).pngsave(str(source))

    def made(segment: str) -> pyvips.Image:
        out = render(tmp_path, source, segment, "output=format:png", limits=LIMITS_HERE)
        return pyvips.Image.new_from_file(str(out)).copy_memory()

    smart = made("smart_crop=w:400,h:10000")
    assert (smart.width, smart.height) == (400, 10_000)
    assert (smart - made("resize=w:400,h:10000,fit:crop,align:faces")).abs().max() == 0
    assert (smart - made("resize=w:400,h:10000,fit:crop")).abs().avg() > 10


def test_every_cover_cut_by_resize_is_its_box_too(tmp_path: Path) -> None:
    """The other task that cuts a cover, ``resize=fit:crop``, whatever its ``align``
    (faces included: its cover is left lazy too), on the same kind of sizes."""
    rng = random.Random(5280)
    aligns = ["center", "top", "bottom", "left", "right", "[top,left]", "[bottom,right]", "faces"]
    for source, box, _ in cases(5280, 10):
        box = (box[0] or rng.randrange(1, 300), box[1] or rng.randrange(1, 300))
        path = tmp_path / "s.png"
        picture(*source, rng).pngsave(str(path))
        segment = f"resize=width:{box[0]},height:{box[1]},fit:crop,align:{rng.choice(aligns)}"
        made = render(tmp_path, path, segment, "output=format:png", limits=LIMITS_HERE)
        image = pyvips.Image.new_from_file(str(made))
        assert (image.width, image.height) == box, (source, segment)
