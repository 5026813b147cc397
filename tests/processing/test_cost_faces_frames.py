"""An animation's faces, and a smart crop's window, are found on its first frame and kept
for the others (``decisions.decided``): the estimate charges that search once.

Before, it charged it on every frame: ``resize=...,fit:crop,align:faces`` on 14-25
frames of a face was estimated 2.9-4.5 times its CPU time, ``crop_faces`` 4.5-5.7 times,
``smart_crop`` 1.4-2.4 times (``blur_faces``, which searches each frame, 1.3-1.7)."""

from __future__ import annotations

import random
from pathlib import Path

import PIL.Image
import pytest

from tests.processing.test_cost import LIMITS
from tests.processing.test_cost_gif_frames import SLACK, estimated_and_spent
from tests.processing.test_faces import ASTRONAUT

SEED = 5472
#: crop_faces' result is priced at the frame's size (the faces' box is not known before
#: the search): up to 3 times its CPU time, as on a still. That the search is charged
#: once is held by the estimates alone besides (``test_the_search_is_priced_as_on_a_still``).
BOUNDS = {"crop_faces": 3.5, "smart_crop": 2.0, "resize": 2.0}


def panned(path: Path, rng: random.Random) -> tuple[Path, int, int]:
    """Frames of a photo of a face, panned two pixels a frame."""
    count, width, height = rng.randint(14, 24), rng.randint(380, 480), rng.randint(340, 440)
    side = max(width, height) + 2 * count
    photo = PIL.Image.open(ASTRONAUT).convert("RGB").resize((side, side))
    shown = [photo.crop((2 * k, 2 * k, 2 * k + width, 2 * k + height)) for k in range(count)]
    shown[0].save(path, save_all=True, append_images=shown[1:], duration=80, loop=0)
    return path, width, height


@pytest.mark.parametrize("fmt", ["gif", "webp"])
def test_a_search_kept_for_every_frame_is_priced_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    rng = random.Random(f"{SEED}-{fmt}")
    source, width, height = panned(tmp_path / f"a.{fmt}", rng)
    for segments in (
        ["crop_faces"],
        [f"smart_crop=width:{rng.randint(150, 250)},height:{rng.randint(150, 250)}"],
        [f"resize=width:{width // 2},height:{height // 2},fit:crop,align:faces"],
    ):
        out = tmp_path / f"out.{fmt}"
        seconds, spent = estimated_and_spent(
            source, segments, out, LIMITS, monkeypatch, f"image/{fmt}"
        )
        print(f"{fmt} {width}x{height} {segments}: estimated {seconds:.2f}, took {spent:.2f}")
        bound = BOUNDS[segments[0].partition("=")[0]]
        assert seconds < bound * spent + SLACK, (segments, seconds, spent)
        assert spent < 2 * seconds + SLACK, (segments, seconds, spent)


@pytest.mark.parametrize("fmt", ["gif", "webp"])
def test_the_search_is_priced_as_on_a_still(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    """What crop_faces adds to a crop of the whole frame, on 14-24 frames, is within three
    times what it adds on the first frame alone (charged on every frame: 14-24 times)."""
    rng = random.Random(f"{SEED}-{fmt}-once")
    source, width, height = panned(tmp_path / f"a.{fmt}", rng)
    still = tmp_path / f"still.{fmt}"
    PIL.Image.open(source).convert("RGB").save(still)
    added, mime = [], f"image/{fmt}"
    for image in (source, still):
        crop_faces, crop = (
            estimated_and_spent(image, [steps], tmp_path / f"o.{fmt}", LIMITS, monkeypatch, mime)[0]
            for steps in ("crop_faces", f"crop=dim:[0,0,{width},{height}]")
        )
        added.append(crop_faces - crop)
    assert added[1] > 0, added
    assert added[0] < 3 * added[1], added
