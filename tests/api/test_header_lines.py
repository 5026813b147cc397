"""A list header sent on several field lines is one list (RFC 9110 5.3): Accept for
``auto_image``, If-None-Match and If-Match, on derivatives and stored files alike. Only
the first line was read: a second Accept line naming WebP, or the file's tag on a second
If-None-Match line, was ignored. Generated lists split at random commas (seed 5161); the
same edge behaviour is in tests/edge/test_if_none_match.py and test_accept_every_url.py.
nginx in front refuses a second If-None-Match or If-Match line (400, its "duplicate
header line"): there only Accept is joined."""

from __future__ import annotations

import itertools
import random

import pytest
from multidict import CIMultiDict

from tests.api.balanced import through_nginx
from tests.api.harness import Harness
from tests.api.test_transform import get, picture, stored

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")
ITEMS = (
    "image/avif",
    "image/webp",
    "image/png",
    "image/*;q=0.8",
    "*/*;q=0.5",
    "text/html",
    "image/avif;q=0",
    "image/webp;q=0",
    "application/json",
    "image/apng",
)


def lines(items: list[str], rng: random.Random) -> list[str]:
    """``items`` as 1-3 field lines, split at random commas."""
    cuts = sorted(rng.sample(range(1, len(items)), min(len(items) - 1, rng.randint(1, 2))))
    bounds = [0, *cuts, len(items)]
    return [",".join(items[a:b]) for a, b in itertools.pairwise(bounds)]


def headers(name: str, values: list[str]) -> CIMultiDict[str]:
    return CIMultiDict((name, value) for value in values)


async def test_accept_on_several_lines_negotiates_as_on_one(harness: Harness) -> None:
    handle = await stored(harness, picture(40, 30, ".png"), name="p.png")
    rng = random.Random(5161)
    split_differs = 0
    for _ in range(30):
        items = rng.sample(ITEMS, rng.randint(2, 6))
        split = lines(items, rng)
        url = f"/auto_image/resize=width:20/{handle}"
        one, _ = await get(harness, url, headers={"Accept": ",".join(items)})
        first, _ = await get(harness, url, headers={"Accept": split[0]})
        many, _ = await get(harness, url, headers=headers("Accept", split))
        assert many.headers["Content-Type"] == one.headers["Content-Type"], split
        assert many.headers["Vary"] == "Accept"
        split_differs += first.headers["Content-Type"] != one.headers["Content-Type"]
    assert split_differs >= 5  # the cases tell a first-line reading apart


def tags(rng: random.Random, count: int) -> list[str]:
    return [f'"{rng.getrandbits(64):016x}"' for _ in range(count)]


@pytest.mark.parametrize("kind", ["derivative", "file", "api"])
async def test_if_none_match_and_if_match_on_several_lines(harness: Harness, kind: str) -> None:
    handle = await stored(harness, picture(40, 30, ".png"), name="p.png")
    path = {"derivative": f"/flip/{handle}", "file": f"/{handle}"}.get(kind)

    async def ask(name: str, values: list[str]) -> int:
        if path is None:
            resp = await harness.api.get(f"/api/file/{handle}", headers=headers(name, values))
        else:
            resp = await harness.cdn.get(path, headers=headers(name, values))
        await resp.read()
        return resp.status

    if path is None:
        resp = await harness.api.get(f"/api/file/{handle}")
    else:
        resp, _ = await get(harness, path)
    await resp.read()
    tag = resp.headers["ETag"]
    rng = random.Random(5162)
    for _ in range(8):
        others = tags(rng, rng.randint(1, 4))
        listed = [*others, tag]
        rng.shuffle(listed)
        listed.remove(tag)
        listed.append(tag)  # the file's own tag on the last line
        split = lines(listed, rng) if len(listed) > 1 else listed
        assert len(split) >= 2
        if through_nginx():  # nginx refuses a second If-None-Match or If-Match line itself
            assert await ask("If-None-Match", split) == 400, split
            assert await ask("If-Match", split) == 400, split
            continue
        assert await ask("If-None-Match", split) == 304, split
        assert await ask("If-None-Match", lines(others, rng) if len(others) > 1 else others) == 200
        assert await ask("If-Match", split) == 200, split
        assert await ask("If-Match", lines(others, rng) if len(others) > 1 else others) == 412
