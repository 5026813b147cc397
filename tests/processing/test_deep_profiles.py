"""A 16-bit RGB source's profile, applied where the result does not keep it, gives the
colours the profile says (``profiles.applied``; docs/decisions.md, "Profiles and bit
depths").

LittleCMS made a 16-bit transform a table it interpolates: a Display P3 colour just
outside sRGB came out 13 levels off, a ProPhoto one 25, about 2% of random colours more
than 3. Each case is a generated 16-bit picture (RGB or RGBA; PNG or TIFF; Display P3,
Adobe RGB or ProPhoto) of random colours, darks, colours on the gamut's edge (a channel
at 0 or full) and darks on it; the result without its profile is compared with the
profile's curve and primaries computed in floats: within 3 levels, where the old
transform was 9 to 25 off on the random colours and the edge. The darks of a gamma
curve are LittleCMS' own (its 16-bit curve tables: up to 3 levels on ProPhoto's, in
its float transform too).
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
import pyvips

from stowage.processing import chain, profiles
from stowage.processing.vips import VipsEngine
from tests.processing.rgbprofiles import linear, rgb_profile, srgb_encoded, to_srgb
from tests.processing.test_engine import LIMITS

SEEDS = range(5506, 5510)
SIDE = 48
NAMES = ("p3", "adobe", "prophoto")


def picture(rng: np.random.Generator, bands: int) -> np.ndarray:
    """Four strips: random colours, darks, a channel at 0 or full, and darks with one."""
    strip = (SIDE // 4, SIDE, bands)
    darks = rng.integers(0, 3000, strip)
    edge, dark_edge = rng.integers(0, 65536, strip), darks.copy()
    for held in (edge, dark_edge):  # one of the colour channels, at 0 or full
        channel = rng.integers(0, 3, (*strip[:2], 1))
        np.put_along_axis(held, channel, rng.choice((0, 65535), (*strip[:2], 1)), axis=2)
    levels = np.concatenate([rng.integers(0, 65536, strip), darks, edge, dark_edge])
    if bands == 4:
        levels[..., 3] = rng.integers(0, 65536, (SIDE, SIDE))
    return levels.astype(np.uint16)


def shown(levels: np.ndarray, name: str, data: bytes) -> np.ndarray:
    """What ``levels`` show in sRGB's 0..1 levels: the profile computed in floats."""
    light = linear(name, levels[..., :3] / 65535) @ to_srgb(data).T
    return srgb_encoded(light)


def tagged(levels: np.ndarray, data: bytes) -> pyvips.Image:
    image = pyvips.Image.new_from_array(levels).copy(interpretation="rgb16")
    image.set_type(pyvips.GValue.blob_type, "icc-profile-data", data)
    return image


def cases() -> list[tuple[int, str, int, str]]:
    drawn = []
    for seed in SEEDS:
        rng = random.Random(seed)
        for _ in range(3):
            drawn.append((seed, rng.choice(NAMES), rng.choice((3, 4)), rng.choice(("png", "tif"))))
    return drawn


@pytest.mark.parametrize(("seed", "name", "bands", "container"), cases())
def test_a_16_bit_profile_is_applied_as_its_primaries_and_curve_say(
    tmp_path: Path, seed: int, name: str, bands: int, container: str
) -> None:
    rng = np.random.default_rng(seed * 10 + bands)
    data = rgb_profile(name)
    levels = picture(rng, bands)
    want = shown(levels, name, data)
    applied = profiles.applied(tagged(levels, data))
    assert (applied.format, applied.interpretation, applied.bands) == ("ushort", "rgb16", bands)
    assert not applied.get_typeof("icc-profile-data")
    got = np.asarray(applied.numpy(), dtype=float).reshape(SIDE, SIDE, bands)
    error = np.abs(got[..., :3] / 65535 - want) * 255
    assert error.max() <= 3.5 and error.mean() <= 0.35, (name, error.max(), error.mean())
    if bands == 4:  # the alpha is no colour: kept as it is
        assert (got[..., 3] == levels[..., 3]).all()
    source = tmp_path / f"source.{container}"
    tagged(levels, data).write_to_file(str(source))
    parsed = chain.parse(["no_metadata"])
    dest = tmp_path / "made.png"
    VipsEngine(threads_per_job=1).render(
        source, parsed, chain.output_for(parsed, "image/png"), dest, LIMITS
    )
    made = pyvips.Image.new_from_file(str(dest))
    assert not made.get_typeof("icc-profile-data")
    saved = np.asarray(made.numpy(), dtype=float).reshape(SIDE, SIDE, -1)[..., :3]
    assert np.abs(saved / (65535 if made.format == "ushort" else 255) - want).max() * 255 <= 4
