"""``smart_crop`` with ``mode:face`` or ``auto`` looks for faces in the picture at the
finder's size, as ``resize=...,fit:crop,align:faces`` does. It looked in its cover, the
picture at the target's size, where faces had shrunk under the finder's smallest: a
150x150 cut of a 1000x700 group photo with faces of 88-134 px found none, and cut where
libvips' attention measure pointed. Generated group photos, sizes and cuts (seeds
5611-5618)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import pyvips

from stowage.processing import faces
from tests.processing.test_engine import render
from tests.processing.test_faces_turned import upright_photo


@pytest.mark.parametrize("seed", range(5611, 5619))
def test_smart_crop_cuts_on_faces_that_its_cover_shrinks_under_the_finders_smallest(
    seed: int, tmp_path: Path
) -> None:
    rng = random.Random(seed)
    photo = upright_photo(rng.randrange(10**6)).resize(rng.uniform(0.7, 2.5))
    assert len(faces.detect(photo)) == 3
    source = tmp_path / "photo.png"
    photo.pngsave(str(source), compression=1)
    w, h = rng.randint(40, 200), rng.randint(40, 200)
    mode = rng.choice(["face", "auto"])
    cut = render(
        tmp_path, source, f"smart_crop=width:{w},height:{h},mode:{mode}", "output=format:png"
    )
    smart = pyvips.Image.new_from_file(str(cut)).copy_memory()
    on_faces = render(
        tmp_path, source, f"resize=width:{w},height:{h},fit:crop,align:faces", "output=format:png"
    )
    aligned = pyvips.Image.new_from_file(str(on_faces))
    assert (smart.width, smart.height) == (w, h)
    assert (smart.cast("float") - aligned).abs().avg() < 0.5, (photo.width, photo.height, w, h)
