"""Every result is held to ``processing_max_output_bytes``, not only an image libvips
saves: a text answer (``ascii``, ``minify_css``), a PDF of several files (``pdfcreate``)
and a source answered as it is (``quality`` on a PNG).

Before (a probe with the limit at 60,000 bytes): ``quality=value:80`` on a 361 KB PNG
answered and cached all of it, ``pdfcreate`` 722 KB, ``ascii=colored:true`` 137 KB,
``minify_css`` 65 KB, each with 200."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import pyvips

from tests.api.harness import Harness
from tests.api.test_transform import stored

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")
CAP = 20_000


def noise(width: int, height: int, seed: int, suffix: str) -> bytes:
    pixels = np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)
    data: bytes = pyvips.Image.new_from_array(pixels).write_to_buffer(suffix)
    return data


def css(rules: int, seed: int) -> bytes:
    rng = random.Random(seed)
    return "".join(
        f".c{rng.randrange(10**6)} {{ color : #{rng.randrange(16**6):06x} ; }}\n"
        for _ in range(rules)
    ).encode()


def png(rng: random.Random, seed: int) -> tuple[bytes, str]:
    return noise(rng.randint(120, 250), rng.randint(100, 200), seed, ".png"), "png"


def text(rng: random.Random, seed: int) -> tuple[bytes, str]:
    return css(rng.randint(1000, 2000), seed), "css"


Case = tuple[str, Callable[[random.Random, int], tuple[bytes, str]], str]
CASES: list[Case] = [
    ("quality", png, "quality=value:80"),  # a PNG answered as it is
    ("ascii", png, "ascii=colored:true,size:100"),
    ("minify_css", text, "minify_css"),
]


async def over_cap(harness: Harness, path: str) -> None:
    resp = await harness.cdn.get(path)
    body = await resp.read()
    assert resp.status == 422, (path, resp.status, len(body))
    assert json.loads(body)["error"]["code"] == "IMAGE_TOO_LARGE", body[:200]


def cached_sizes(harness: Harness) -> list[int]:
    root = Path(harness.settings.data_dir) / "derivatives"
    return [p.stat().st_size for p in root.rglob("*") if p.is_file()]


@pytest.mark.settings(processing_max_output_bytes=CAP)
async def test_every_kind_of_result_is_held_to_the_output_byte_limit(harness: Harness) -> None:
    rng = random.Random(5137)
    for case in range(6):
        name, make, task = CASES[case % len(CASES)]
        data, suffix = make(rng, case)
        handle = await stored(harness, data, f"{name}{case}.{suffix}")
        await over_cap(harness, f"/{task}/{handle}")
        # the same kind of answer under the limit is made as before
        small = await stored(harness, noise(24, 16, case, ".png"), f"small{case}.png")
        if name == "minify_css":
            small = await stored(harness, css(10, case), f"small{case}.css")
        task = "ascii=size:10" if name == "ascii" else task  # 10 columns: a few hundred bytes
        resp = await harness.cdn.get(f"/{task}/{small}")
        assert resp.status == 200, (name, await resp.text())
    files = [await stored(harness, noise(150, 120, n, ".jpg"), f"p{n}.jpg") for n in range(3)]
    await over_cap(harness, f"/pdfcreate/[{','.join(files)}]")
    assert all(size <= CAP for size in cached_sizes(harness))
