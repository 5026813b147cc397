"""``shadow``'s canvas holds the whole blurred shadow for any blur, fractional ones
included: it grows by ``ceil(2 x blur)`` (effects.shadow_geometry, as
docs/transformations.md says), at least what libvips' Gaussian mask reaches; the
canvas' outer row and column on the shadow's side are clear, and the shadow reaches
near them (the margin is not much wider than the shadow)."""

from __future__ import annotations

import math
import random

import numpy as np
import pyvips

from stowage.processing import effects
from stowage.processing.base import Task

SEEDS = range(5041, 5050)


def test_the_canvas_holds_the_whole_shadow() -> None:
    for seed in SEEDS:
        pick = random.Random(seed)
        width, height = pick.randint(10, 120), pick.randint(10, 120)
        blur = round(pick.uniform(0.3, 20), pick.choice([0, 1, 2]))
        vector = (pick.randint(0, 30), pick.randint(0, 30))
        image = (pyvips.Image.black(width, height, bands=3) + 200).cast("uchar")
        options = (("background", "transparent"), ("blur", blur), ("opacity", 100))
        task = Task("shadow", (*options, ("vector", vector)))
        out = effects.shadow(image.copy(interpretation="srgb"), task)
        pad = math.ceil(2 * blur)
        (vx, vy), m = vector, pad  # docs/transformations.md's formula
        wide = max(width, vx + width + m) - min(0, vx - m)
        assert (out.width, out.height) == (wide, max(height, vy + height + m) - min(0, vy - m))
        reach = (pyvips.Image.gaussmat(blur, 0.2).width - 1) // 2  # libvips' blur mask
        assert reach <= pad, (seed, blur)
        alpha = np.asarray(out[3].numpy())
        assert alpha[-1].max() == 0 and alpha[:, -1].max() == 0, (seed, blur)  # nothing cut
        if reach > 0:
            row = alpha[:, out.width // 2]
            last = int(np.nonzero(row)[0].max())  # the shadow's lowest row
            assert out.height - 1 - last <= pad - reach + 2, (seed, blur, last)
