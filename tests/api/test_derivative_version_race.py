"""A derivative is the version its key names (generated inputs, seed 9597). The row was
read, then the source opened: an overwrite between the two rendered the new picture
under the old version's key, so its ETag named the old version (with ``cache=false``,
probes saw one tag answered with both pictures). The overwrite is made here at that
very point, deterministically, on this node's disk and on every store (whose object is
read whole and held to the row's SHA-256)."""

from __future__ import annotations

import base64
import random
from typing import Any

import pytest

from stowage.processing.service import Processor
from stowage.registry.base import App
from stowage.storage.base import Provider
from tests.api.harness import Harness
from tests.api.test_providers_api import provider_app, provider_setup  # noqa: F401 - fixtures
from tests.api.test_transform import decoded
from tests.api.test_transform_sources import colour, plain


async def _raced(
    harness: Harness, monkeypatch: pytest.MonkeyPatch, app: App, api_name: str, cache: str
) -> None:
    rnd = random.Random(9597)
    old, new = ([rnd.randrange(256) for _ in range(3)] for _ in range(2))
    key = {"key": app.api_key}
    stored = await harness.api.post(
        f"/api/store/{api_name}", params={**key, "filename": "a.png"}, data=plain(64, 48, old)
    )
    assert stored.status == 200, await stored.text()
    handle = (await stored.json())["handle"]
    auth = {"Authorization": "Basic " + base64.b64encode(f"app:{app.secret}".encode()).decode()}
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
    assert colour(decoded(await raced.read()), 10, 7) == tuple(new)
    after = await harness.cdn.get(f"/resize=width:20/{handle}")  # the new version's own
    assert colour(decoded(await after.read()), 10, 7) == tuple(new)
    assert raced.headers["ETag"] == after.headers["ETag"]


@pytest.mark.parametrize("cache", ["", "cache=false/"])
async def test_a_source_overwritten_before_it_is_read_renders_under_its_new_version(
    harness: Harness, monkeypatch: pytest.MonkeyPatch, cache: str
) -> None:
    await _raced(harness, monkeypatch, harness.open_app, "S3", cache)


async def test_a_stores_source_overwritten_before_it_is_read_renders_its_new_version(
    harness: Harness,
    monkeypatch: pytest.MonkeyPatch,
    provider_app: tuple[App, str, Provider],  # noqa: F811 - the imported fixture
) -> None:
    app, api_name, _ = provider_app
    await _raced(harness, monkeypatch, app, api_name, "")
