"""The sizes the File API's metadata and the ``metadata``/``imagesize`` tasks answer:
read from the header (nothing decoded, nothing priced), and the same size the
transformations draw. Inputs generated from seeded random sizes (probe seeds 5140-5149)."""

from __future__ import annotations

import json
import random

import pytest
import pyvips

from tests.api.harness import Harness
from tests.api.test_transform import get, stored

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")

#: libvips saver suffixes and options: still, lossless, animated (a strip of frames).
SAVERS = [
    (".jpg", {}),
    (".png", {}),
    (".webp", {}),
    (".webp", {"lossless": True}),
    (".gif", {}),
    (".tif", {}),
    (".avif", {}),
]


def generated(
    rng: random.Random, suffix: str, options: dict[str, object]
) -> tuple[bytes, int, int]:
    width, height, frames = rng.randint(1, 300), rng.randint(1, 300), rng.choice([1, 1, 3])
    if suffix not in (".gif", ".webp"):  # no frames: a strip would be one tall image
        frames = 1
    xy = pyvips.Image.xyz(width, height * frames)
    image = (xy[0] * 3 % 256).bandjoin([xy[1] * 5 % 256, rng.randint(0, 255)]).cast("uchar")
    if frames > 1:
        image = image.copy()
        image.set_type(pyvips.GValue.gint_type, "page-height", height)
    data: bytes = image.write_to_buffer(suffix, **options)
    return data, width, height


@pytest.mark.settings(processing_max_job_cost=0.0001)
async def test_metadata_alone_is_read_from_the_header_and_not_priced(harness: Harness) -> None:
    """A 100 MP WebP's ``metadata`` (and ``output=format:png/imagesize``: tasks that only
    say how to save change no size) was priced as its decode (14 s) and refused, while its
    ``imagesize`` was answered from the header: here with a cost limit no decode fits."""
    rng = random.Random(5143)
    for suffix, options in SAVERS:
        data, width, height = generated(rng, suffix, options)
        handle = await stored(harness, data, name=f"s{suffix}")
        for chain in (
            "metadata",
            "metadata=p:[width,height]",
            "imagesize",
            "output=format:png/imagesize",
            "no_metadata/quality=value:50/metadata=p:[width,height]",
            "output=page:1/imagesize",
        ):
            _, body = await get(harness, f"/{chain}/{handle}")
            answer = json.loads(body)  # metadata alone adds the file's own fields
            assert (answer["width"], answer["height"]) == (width, height), (suffix, chain)
        _, body = await get(harness, f"/metadata=p:[height]/{handle}")
        assert json.loads(body) == {"height": height}
        _, body = await get(harness, f"/resize=w:2/metadata/{handle}", status=422)
        assert json.loads(body)["error"]["code"] == "PROCESSING_TOO_COSTLY"


async def test_an_svgs_metadata_size_is_the_one_it_is_drawn_at(harness: Harness) -> None:
    """An SVG's metadata had no width or height while ``imagesize`` told them: its root's
    ``width``, ``height`` (any unit librsvg takes) and ``viewBox`` say them."""
    rng = random.Random(5144)
    for _ in range(6):
        width, height = rng.randint(1, 900), rng.randint(1, 900)
        root = rng.choice(
            [f'width="{width}" height="{height}px"', f'viewBox="0 0 {width} {height}"',
             f'width="{width}pt" height="100%" viewBox="0,0,{width},{height}"',
             f'width="{width / 72:.4f}in" height="{height / 12}em"']
        )  # fmt: skip
        svg = f'<svg xmlns="http://www.w3.org/2000/svg" {root}><circle r="5"/></svg>'
        handle = await stored(harness, svg.encode(), name="drawing.svg")
        _, body = await get(harness, f"/imagesize/{handle}")
        assert json.loads(body) == {"width": width, "height": height}, root
        resp = await harness.api.get(
            f"/api/file/{handle}/metadata", params={"width": "true", "height": "true"}
        )
        assert await resp.json() == {"width": width, "height": height}, root
