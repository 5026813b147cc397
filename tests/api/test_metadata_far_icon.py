"""An ICO whose shown entry's header lies past the first MiB (the entries before it fill
it, or its directory says so) has its metadata width and height, on the local disk and in
every remote store, as ``imagesize`` has them: the File API read the first MiB only and
answered none. The directory is read, then the entry's header where it lies (a seek, a
ranged read); nothing decoded. Sizes and layouts from seeded draws."""

from __future__ import annotations

import json
import random

from tests.api.harness import Harness
from tests.api.shared_store import settings, shared  # noqa: F401 - the fixtures
from tests.api.test_transform import get, stored
from tests.processing import bmpfiles


async def test_an_icons_entry_past_the_first_mib_is_read(harness: Harness) -> None:
    rng = random.Random(5277)
    for png in (False, True):
        claimed = (rng.randrange(1, 5000), rng.randrange(1, 5000))
        entries = rng.choice([1, rng.randrange(2, 300), rng.randrange(3000, 20_000)])
        pad = rng.randrange(1_050_000, 2_500_000)
        data = bmpfiles.far_ico(rng, claimed, entries, pad, png)
        handle = await stored(harness, data, name="far.ico")
        resp = await harness.api.get(
            f"/api/file/{handle}/metadata", params={"width": "true", "height": "true"}
        )
        assert await resp.json() == {"width": claimed[0], "height": claimed[1]}, (png, entries)
        _, body = await get(harness, f"/imagesize/{handle}")
        assert json.loads(body) == {"width": claimed[0], "height": claimed[1]}
