"""A release whose fix changes what a URL renders bumps ``cache.RENDERING``: derivatives
made before are not served again, they are made anew on their next request, and the
old ones go with the file's next version (processing/cache.py)."""

from __future__ import annotations

import asyncio

import pytest

from stowage.processing import cache
from tests.api.harness import Harness
from tests.api.test_file_ops import basic
from tests.api.test_transform import get, picture, stored
from tests.api.test_transform_shared import derivatives


async def test_a_derivative_of_an_older_rendering_is_made_anew(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    handle = await stored(harness, picture(400, 300))
    url = f"/flip/resize=width:100/{handle}"
    first, body = await get(harness, url)
    before = await derivatives(harness)
    assert before is not None and len(before) == 1  # the default store lists its keys
    monkeypatch.setattr(cache, "RENDERING", cache.RENDERING + 1)

    second, again = await get(harness, url)
    assert again == body  # this fix changes nothing here; the key is new all the same
    assert second.headers["ETag"] != first.headers["ETag"]  # a kept copy is sent again
    made = await derivatives(harness)
    assert made is not None and len(made) == 2 and set(before) < set(made)
    assert f"-r{cache.RENDERING}-" in (set(made) - set(before)).pop()

    resp = await harness.api.post(
        f"/api/file/{handle}",
        data=picture(200, 300),
        headers=basic("app", harness.open_app.secret),
        params={"key": harness.open_app.api_key},
    )
    assert resp.status == 200, await resp.text()
    await get(harness, url)
    for _ in range(100):  # the purge runs in the background
        now = await derivatives(harness)
        if now is not None and len(now) == 1:
            break
        await asyncio.sleep(0.05)
    assert now is not None and len(now) == 1 and not set(now) & set(made)


async def test_prune_after_an_upgrade_removes_the_older_rendering(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``stowage derivatives prune`` through the command line: a dry run counts, a run
    removes; the derivative of the running release is kept."""
    handle = await stored(harness, picture(400, 300))
    url = f"/flip/resize=width:100/{handle}"
    await get(harness, url)
    older = await derivatives(harness)
    monkeypatch.setattr(cache, "RENDERING", cache.RENDERING + 1)  # the upgrade
    await get(harness, url)
    both = await derivatives(harness)
    assert older is not None and both is not None and len(both) == 2

    code, out = await harness.cli("derivatives", "prune", "--dry-run")
    assert code == 0 and "2 derivatives checked, 1 unreachable (dry run" in out, out
    assert await derivatives(harness) == both
    code, out = await harness.cli("derivatives", "prune")
    assert code == 0 and "2 derivatives checked, 1 unreachable, removed" in out, out
    assert await derivatives(harness) == sorted(set(both) - set(older))
    code, out = await harness.cli("derivatives", "prune")
    assert "1 derivatives checked, 0 unreachable" in out, out
