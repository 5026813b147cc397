"""A download from a store asks it once (issue 17): the GET's own headers say the length
and ETag, so no HEAD goes first; a Range, a HEAD and a conditional GET still stat first.
The answers are the same either way (the ETag of a GET is the ETag of a HEAD)."""

from __future__ import annotations

from typing import Any

import pytest

from stowage.registry.base import App
from stowage.storage.base import ObjectInfo, Provider
from tests.api.harness import Harness
from tests.api.test_providers_api import _store, provider_app, provider_setup  # noqa: F401
from tests.providers.test_read_one import ONE_REQUEST


async def test_a_download_sends_one_request_to_the_store(
    harness: Harness,
    provider_app: tuple[App, str, Provider],  # noqa: F811 - the fixture
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app, api_name, _ = provider_app
    data = bytes(range(256)) * 40
    handle = (await _store(harness, app, api_name, data))["handle"]
    served = harness.service.providers.provider_for(app, api_name)  # the service's own
    stats: list[str] = []
    # On the class: through nginx, any of the in-process nodes may answer.
    kind = type(served)
    real_stat = kind.stat

    async def counted(self: Provider, container: str, key: str) -> ObjectInfo:
        stats.append(key)
        return await real_stat(self, container, key)  # type: ignore[arg-type]

    monkeypatch.setattr(kind, "stat", counted)
    whole = 0 if served.location in ONE_REQUEST else 1
    path, params = f"/api/file/{handle}", {"key": app.api_key}

    got = await harness.api.get(path, params=params)
    assert got.status == 200 and await got.read() == data
    assert got.headers["Content-Length"] == str(len(data))
    etag = got.headers["ETag"]
    assert len(stats) == whole

    head = await harness.api.head(path, params=params)
    assert head.status == 200 and head.headers["ETag"] == etag
    assert head.headers["Content-Length"] == str(len(data))
    assert len(stats) == whole + 1

    ranged = await harness.api.get(path, params=params, headers={"Range": "bytes=100-199"})
    assert ranged.status == 206 and await ranged.read() == data[100:200]
    assert ranged.headers["ETag"] == etag
    assert len(stats) == 2 * whole + 1  # a range of a row's file: one request too

    again = await harness.api.get(path, params=params, headers={"If-None-Match": etag})
    assert again.status == 304
    assert len(stats) <= 2 * whole + 2  # judged by the row's content tag: no extra request
    other: dict[str, Any] = {"If-None-Match": '"not-it"'}
    fresh = await harness.api.get(path, params=params, headers=other)
    assert fresh.status == 200 and await fresh.read() == data
