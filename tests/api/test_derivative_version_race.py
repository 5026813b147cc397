"""A derivative is the version its key names (generated inputs, seed 9597). The row was
read, then the source opened: an overwrite between the two rendered the new picture
under the old version's key, so its ETag named the old version (with ``cache=false``,
probes saw one tag answered with both pictures). The overwrite is made here at that
very point, deterministically."""

from __future__ import annotations

import base64
import random
from typing import Any

import pytest

from stowage.processing.service import Processor
from tests.api.harness import Harness
from tests.api.test_transform import decoded
from tests.api.test_transform_sources import colour, plain


@pytest.mark.parametrize("cache", ["", "cache=false/"])
async def test_a_source_overwritten_before_it_is_read_renders_under_its_new_version(
    harness: Harness, monkeypatch: pytest.MonkeyPatch, cache: str
) -> None:
    rnd = random.Random(9597)
    old, new = ([rnd.randrange(256) for _ in range(3)] for _ in range(2))
    handle = (await harness.store(plain(64, 48, old), filename="a.png"))["handle"]
    auth = {"Authorization": "Basic " + base64.b64encode(b"app:open-secret").decode()}
    key = {"key": harness.open_app.api_key}
    others = Processor._others
    pending = [plain(64, 48, new)]

    async def overwritten_first(self: Processor, *args: Any, **kwargs: Any) -> Any:
        if pending:  # after the row's read, before the source is opened
            put = await harness.api.post(
                f"/api/file/{handle}", params=key, data=pending.pop(), headers=auth
            )
            assert put.status == 200, await put.text()
        return await others(self, *args, **kwargs)

    monkeypatch.setattr(Processor, "_others", overwritten_first)
    raced = await harness.cdn.get(f"/{cache}resize=width:20/{handle}")
    assert raced.status == 200, await raced.text()
    image = decoded(await raced.read())
    assert colour(image, 10, 7) == tuple(new)
    after = await harness.cdn.get(f"/resize=width:20/{handle}")  # the new version's own
    assert colour(decoded(await after.read()), 10, 7) == tuple(new)
    assert raced.headers["ETag"] == after.headers["ETag"]
