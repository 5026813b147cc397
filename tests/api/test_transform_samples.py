"""Sources of unusual sample formats through the CDN origin (the job processes decode
them): a picture stored as a 32-bit, signed or float TIFF, or as a palette PNG of greys,
gives what its 8-bit version gives (tests/processing/test_sample_formats.py runs every
combination against the engine), and a TIFF no loader reads is a JSON 422."""

from __future__ import annotations

import numpy as np
import pytest
import pyvips

from tests.api.harness import Harness
from tests.api.test_transform import decoded, get, stored

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")
SEED = 5188
WIDTH, HEIGHT = 40, 30
#: (numpy sample type, bands, container): each read another way before.
SOURCES = [
    ("uint32", 1, ".tif"),
    ("int16", 3, ".tif"),
    ("float32", 1, ".tif"),
    ("uint8", 1, ".png"),
]
CHAINS = ["resize=width:20/output=format:png", "flip/output=format:png", "sepia/output=format:png"]


def picture(bands: int) -> np.ndarray:
    small = np.random.default_rng(SEED + bands).random((HEIGHT // 5, WIDTH // 5, bands))
    image = pyvips.Image.new_from_array(small).resize(5, kernel="linear")
    values = np.asarray(image.numpy(), dtype=float).reshape(image.height, image.width, -1)
    return np.clip(values[:HEIGHT, :WIDTH], 0, 1)


def encoded(values: np.ndarray, sample: str, suffix: str) -> bytes:
    if sample == "float32":  # linear light
        linear = np.where(values <= 0.04045, values / 12.92, ((values + 0.055) / 1.055) ** 2.4)
        image = pyvips.Image.new_from_array(linear.astype(np.float32))
    else:
        kind = np.dtype(sample)
        image = pyvips.Image.new_from_array(np.rint(values * np.iinfo(kind).max).astype(kind))
    if suffix == ".png":  # a palette of greys
        grey = image.copy(interpretation="b-w")
        image = grey.bandjoin([grey, grey]).copy(interpretation="srgb")
        return bytes(image.write_to_buffer(".png", palette=True, dither=0, bitdepth=8))
    return bytes(image.write_to_buffer(suffix))


def ideal(values: np.ndarray, suffix: str, data: bytes) -> bytes:
    if suffix == ".png":  # the palette's own levels
        image = pyvips.Image.new_from_buffer(data, "")[0]
    else:
        image = pyvips.Image.new_from_array(np.rint(values * 255).astype(np.uint8))
    space = "b-w" if image.bands == 1 else "srgb"
    return bytes(image.copy(interpretation=space).write_to_buffer(".png"))


@pytest.mark.parametrize(("sample", "bands", "suffix"), SOURCES)
async def test_a_picture_in_any_sample_format_gives_its_8_bit_result(
    harness: Harness, sample: str, bands: int, suffix: str
) -> None:
    values = picture(bands)
    data = encoded(values, sample, suffix)
    handle = await stored(harness, data, name=f"s{suffix}")
    reference = await stored(harness, ideal(values, suffix, data), name="ideal.png")
    for tasks in CHAINS:
        _, body = await get(harness, f"/{tasks}/{handle}")
        _, want_body = await get(harness, f"/{tasks}/{reference}")
        got, want = decoded(body), decoded(want_body)
        assert (got.bands, got.interpretation) == (want.bands, want.interpretation), tasks
        difference = np.abs(got.numpy().astype(int) - want.numpy().astype(int))
        assert difference.max() <= 6 and difference.mean() <= 1.0, (tasks, difference.max())


async def test_a_tiff_of_64_bit_floats_is_a_json_422(harness: Harness) -> None:
    image = pyvips.Image.new_from_array(np.linspace(0, 1, 64).reshape(8, 8)).cast("double")
    handle = await stored(harness, bytes(image.write_to_buffer(".tif")), name="d.tif")
    resp, body = await get(harness, f"/resize=width:4/{handle}", status=422)
    assert resp.headers["Content-Type"].startswith("application/json")
    assert b'"INVALID_IMAGE"' in body
