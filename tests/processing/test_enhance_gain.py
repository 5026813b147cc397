"""``enhance``'s stretch multiplies contrast by at most ``MAX_GAIN`` (effects_restore.py):
a flat or near-flat image stays near its colour, a low-contrast one gains contrast, and
one whose range is wide enough is still stretched to black and white. Unbounded, the
spread of a flat pale colour's channels was stretched to the whole range:
(162,185,146) became (78,255,0)."""

from __future__ import annotations

import numpy as np
import pytest
import pyvips

from stowage.processing import effects_restore
from stowage.processing.base import Task

SEEDS = range(5041, 5050)
#: Presets whose other steps keep a colour but for their saturation (fix_tint balances a
#: cast to grey, fix_dark lifts shadows by gamma: both change a flat colour by design).
KEEPING = ("auto", "beautify", "fix_noise")


def enhanced(pixels: np.ndarray, preset: str) -> np.ndarray:
    image = pyvips.Image.new_from_array(pixels.astype(np.uint8)).copy(interpretation="srgb")
    made = effects_restore.enhance(image, Task("enhance", (("preset", preset),)))
    return np.asarray(made.numpy(), dtype=np.float64).reshape(pixels.shape)


def flat(rng: np.random.Generator, noise: float) -> np.ndarray:
    width, height = (int(v) for v in rng.integers(40, 200, 2))
    colour = rng.integers(20, 236, 3)
    grain = rng.normal(0, noise, (height, width, 3))
    return np.clip(colour + grain, 0, 255).round()


def saturated(pixels: np.ndarray, factor: float) -> np.ndarray:
    """``pixels`` with their chroma times ``factor`` in LCh, as the presets saturate."""
    image = pyvips.Image.new_from_array(pixels.astype(np.uint8)).copy(interpretation="srgb")
    if factor != 1.0:
        lch = image.colourspace("lch") * [1, factor, 1]
        image = lch.colourspace("srgb").cast("uchar")
    return np.asarray(image.numpy(), dtype=np.float64).reshape(pixels.shape)


@pytest.mark.parametrize("preset", [*KEEPING, "vivid", "outdoor", "fireworks"])
def test_a_flat_colour_is_only_saturated(preset: str) -> None:
    """The stretch leaves a flat colour as it is: what changes is the preset's chroma."""
    factor = effects_restore.PRESETS[preset].saturation
    for seed in SEEDS:
        pixels = flat(np.random.default_rng(seed), 0)
        made, wanted = enhanced(pixels, preset), saturated(pixels, factor)
        assert np.abs(made - wanted).max() <= 1, (preset, seed, pixels[0, 0], made[0, 0])


def test_a_near_flat_image_keeps_its_mean_colour_and_doubles_its_contrast() -> None:
    """The stretch alone (a preset of no other step): grain on a colour, of any colour."""
    for seed in SEEDS:
        pixels = flat(np.random.default_rng(seed), 3)
        image = pyvips.Image.new_from_array(pixels.astype(np.uint8)).copy(interpretation="srgb")
        made = effects_restore._stretch(image, None, effects_restore.Preset())
        made = np.asarray(made.cast("uchar").numpy(), dtype=np.float64).reshape(pixels.shape)
        means, made_means = pixels.mean(axis=(0, 1)), made.mean(axis=(0, 1))
        assert np.abs(made_means - means).max() <= 2, (seed, means, made_means)
        ratio = made.std(axis=(0, 1)) / pixels.std(axis=(0, 1))
        assert (ratio > 1.8).all() and (ratio < 2.2).all(), (seed, ratio)


def test_a_low_contrast_gradient_gains_contrast() -> None:
    for seed in SEEDS:
        rng = np.random.default_rng(seed)
        width, height = (int(v) for v in rng.integers(64, 256, 2))
        span, start = int(rng.integers(30, 120)), int(rng.integers(0, 130))
        ramp = start + np.linspace(0, span, width)[None, :, None] * np.ones((height, 1, 3))
        tint = rng.integers(-10, 10, 3)
        pixels = np.clip(ramp + tint, 0, 255).round()
        made = enhanced(pixels, "fix_noise")  # the stretch alone (and a median)
        before = np.ptp(pixels[..., 1])
        after = np.ptp(made[..., 1])
        assert after >= 1.9 * before, (seed, before, after)  # doubled, nothing clipped


def test_a_wide_range_is_still_stretched_to_black_and_white() -> None:
    for seed in SEEDS:
        rng = np.random.default_rng(seed)
        span = int(rng.integers(140, 250))
        start = int(rng.integers(0, 256 - span))
        ramp = start + np.linspace(0, span, 256)[None, :, None] * np.ones((64, 1, 3))
        made = enhanced(ramp.round(), "fix_noise")
        assert made.min() <= 2 and made.max() >= 253, (seed, span, made.min(), made.max())
