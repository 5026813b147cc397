"""Checklist 46 on the Azure and GCS servers (the S3 cases are in test_storage_faults.py).

Azurite and gcp-storage-emulator run for real; the service reaches them through the TCP
fault proxy, which resets the connection, stops forwarding (a stalled server) or refuses
it (a server that is down) in the middle of a 12 MiB store, inside the first staged block
or resumable-upload chunk (the proxy counts bytes per connection, and each block or chunk
is a request of its own). Each case checks that the client gets
502/503/504 in the one error shape, that no object is visible in the store and no handle
or pending row is left, and that the same store succeeds once the server is reachable.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from stowage.registry.base import App
from stowage.storage import azure, gcs
from stowage.storage.base import Lists
from tests.api.harness import Harness
from tests.api.test_file_ops import basic
from tests.reliability.checks import TOTALS, assert_clean, assert_intact, expect_error, fault
from tests.reliability.faultproxy import FaultProxy
from tests.servers.fx_azure import ACCOUNT, azure_config
from tests.servers.fx_gcs import gcs_config

MiB = 1024 * 1024
AUTH = basic("app", "open-secret")
BACKEND_DOWN = (502, 503, 504)
# Short timeouts and no retries: a stalled server is given up in a few seconds. Not
# shorter: the retry stores 8 MiB pieces through the same app, and on a slow machine the
# emulators (gcp-storage-emulator is pure Python) take seconds over one.
FAST = {"timeout": 6, "read_timeout": 6, "retries": 0}


def _target_port(endpoint: str) -> int:
    return int(endpoint.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])


def _config(name: str, endpoint: str, through: str | None = None) -> dict[str, Any]:
    """The app's storage config reaching the real server, or the proxy in front of it."""
    if name == "azure":
        base = through + f"/{ACCOUNT}" if through else endpoint
        return azure_config(base, **FAST)
    return gcs_config(through or endpoint, **FAST)


@pytest.fixture(params=["azure", "gcs"])
def backend(request: pytest.FixtureRequest) -> tuple[str, str]:
    name: str = request.param
    endpoint: str = request.getfixturevalue(f"{name}_endpoint")
    return name, endpoint


@pytest.fixture
async def proxy(backend: tuple[str, str]) -> AsyncIterator[FaultProxy]:
    async with FaultProxy(_target_port(backend[1])) as running:
        yield running


async def _app(harness: Harness, backend: tuple[str, str], proxy: FaultProxy, tag: str) -> App:
    name, endpoint = backend
    app = App(
        api_key=f"{name}{tag}".ljust(20, "0")[:20],
        secret="open-secret",
        storage={name: _config(name, endpoint, proxy.url)},
    )
    await harness.service.registry.create_app(app)
    return app


async def _visible_keys(backend: tuple[str, str], prefix: str, tmp_path: Path) -> list[str]:
    """What a reader of the real store sees under ``prefix``, not going through the proxy."""
    name, endpoint = backend
    module = azure if name == "azure" else gcs
    provider = module.from_config(_config(name, endpoint), tmp_path)
    assert isinstance(provider, Lists)
    try:
        return [key async for key in provider.keys(provider.default_container, prefix)]
    finally:
        await provider.close()


@pytest.mark.parametrize(
    ("mode", "after", "direction"),
    [
        ("reset", 3 * MiB, "up"),  # cut in the middle of the first block or chunk
        ("stall", 3 * MiB, "up"),  # stops taking bytes mid-transfer
        ("down", 0, "up"),  # not there at all
        ("reset", 200, "down"),  # cut while answering
    ],
)
async def test_backend_fault_mid_store_leaves_nothing_and_retry_is_safe(
    harness: Harness,
    backend: tuple[str, str],
    proxy: FaultProxy,
    tmp_path: Path,
    mode: str,
    after: int,
    direction: str,
) -> None:
    app = await _app(harness, backend, proxy, f"{mode}{direction}")
    prefix = f"fault-{mode}-{direction}/"
    params = {"key": app.api_key, "path": prefix + "big.bin"}
    data = bytes(range(256)) * (12 * MiB // 256)  # two blocks / chunks of 8 MiB
    proxy.mode, proxy.after, proxy.direction = mode, after, direction
    resp = await harness.api.post(f"/api/store/{backend[0]}", params=params, data=data)
    fault(max(1, proxy.faults))
    await expect_error(resp, BACKEND_DOWN)
    assert proxy.faults >= 1, "the fault never fired: the test proved nothing"
    # The emulator serves one request at a time: a stalled request it still holds would
    # block the next, which a real server would not.
    await proxy.release()
    visible = await _visible_keys(backend, prefix, tmp_path)
    TOTALS.partial_files_seen += len(visible)
    assert visible == []
    await assert_clean(harness.service)

    retry = await harness.api.post(f"/api/store/{backend[0]}", params=params, data=data)
    assert retry.status == 200, await retry.text()
    got = await harness.api.get(f"/api/file/{(await retry.json())['handle']}")
    assert_intact(await got.read(), data)


@pytest.mark.parametrize("mode", ["reset", "stall"])
async def test_backend_fault_mid_overwrite_keeps_the_old_object(
    harness: Harness, backend: tuple[str, str], proxy: FaultProxy, tmp_path: Path, mode: str
) -> None:
    app = await _app(harness, backend, proxy, f"ow{mode}")
    old = b"old" * 1000
    stored = await harness.api.post(
        f"/api/store/{backend[0]}",
        params={"key": app.api_key, "path": f"ow-{mode}/keep.bin"},
        data=old,
    )
    assert stored.status == 200, await stored.text()
    handle = (await stored.json())["handle"]
    proxy.mode, proxy.after, proxy.direction = mode, 3 * MiB, "up"
    resp = await harness.api.post(
        f"/api/file/{handle}",
        params={"key": app.api_key},
        data=b"n" * (12 * MiB),
        headers=AUTH,
    )
    fault()
    await expect_error(resp, BACKEND_DOWN)
    assert proxy.faults >= 1
    await proxy.release()
    got = await harness.api.get(f"/api/file/{handle}", params={"key": app.api_key})
    assert_intact(await got.read(), old)
    assert await _visible_keys(backend, f"ow-{mode}/", tmp_path) == [f"ow-{mode}/keep.bin"]
    await assert_clean(harness.service)
