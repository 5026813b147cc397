"""A percent-encoded quote, comma or bracket inside a listed URL (``%22``, ``%2C``,
``%5B``, ``%5D``) is that URL's: each URL of a list reaches its origin byte for byte as
the same URL alone does, whether the list's items are quoted or not, and whether the
client sent the quotes around them as ``"`` or ``%22`` (a browser does). A ``%22`` was
read as a quote before the list was split: the URL was cut there, or its neighbour
swallowed."""

from __future__ import annotations

import random

import pytest

from stowage.core.urlguard import canonical_url
from tests.api.harness import Harness
from tests.api.test_transform_url_bytes import Origin, asked_for, origin

__all__ = ["origin"]  # the fixture

ESCAPES = ["%22", "%2C", "%5B", "%5D", "%22%22", "%5B%22", "%22%5D", "%2C%22"]


def generated(rng: random.Random, n: int) -> list[str]:
    """Paths with escapes of the list's own characters anywhere: first, last, doubled,
    in the path and in a query string."""
    paths = []
    for i in range(n):
        parts = [rng.choice([*ESCAPES, "a", "b9"]) for _ in range(rng.randint(1, 5))]
        name = "".join(parts)
        query = rng.choice(["", f"?v={rng.choice(ESCAPES)}", f"?q={rng.choice(ESCAPES)}x&b=1"])
        ending = rng.choice(["", rng.choice(ESCAPES)])  # a %5D before the query too
        paths.append(f"/d{i}/{name}.png{ending}{query}")
    return paths


@pytest.mark.parametrize("seed", [5054, 5055, 5056])
async def test_escapes_of_quotes_commas_and_brackets_stay_in_a_listed_url(
    harness: Harness, origin: Origin, seed: int
) -> None:
    key, rng = harness.open_app.api_key, random.Random(seed)
    for _ in range(4):
        paths = generated(rng, rng.randint(1, 3))
        urls = [origin.base + p for p in paths]
        # As the fetcher asks for a URL (canonical_url: yarl's normal form, ``%2C`` in a
        # path is ``,``), the same alone and listed; the control: alone, each is.
        asked = [canonical_url(u).removeprefix(origin.base) for u in urls]
        for url, expected in zip(urls, asked, strict=True):
            assert await asked_for(harness, origin, f"/{key}/resize=w:10/{url}", 1) == [expected]
        assert all(a.count("%22") == p.count("%22") for a, p in zip(asked, paths, strict=True))
        for quoted in (False, True):
            listed = rng.choice([",", ", "]).join(f'"{u}"' if quoted else u for u in urls)
            for tasks in ("animate=delay:50", "zip", "pdfcreate"):
                path = f"/{key}/{tasks}/[{listed}]"
                found = await asked_for(harness, origin, path, len(urls))
                assert sorted(found) == sorted(asked), (path, found)
