"""The File API on every storage provider, checked in the provider directly."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from stowage import errors
from stowage.registry.base import App
from stowage.storage.base import Provider, WriteOptions, exists
from tests.api.harness import Harness
from tests.api.test_file_ops import basic
from tests.providers.test_contract import chunks_of


@pytest.fixture
def provider_setup(
    request: pytest.FixtureRequest, provider_name: str
) -> tuple[str, dict[str, Any], Provider]:
    # Sync on purpose: the server fixtures behind these may run their own event loop.
    provider: Provider = request.getfixturevalue(f"provider_{provider_name}")
    api_name, config = request.getfixturevalue(f"storage_config_{provider_name}")
    return api_name, config, provider


@pytest.fixture
async def provider_app(
    harness: Harness, provider_setup: tuple[str, dict[str, Any], Provider], provider_name: str
) -> tuple[App, str, Provider]:
    api_name, config, provider = provider_setup
    app = App(
        api_key=f"prov{provider_name.replace('_', '')}".ljust(20, "0")[:20],
        secret="provider-secret",
        storage={api_name: config},
    )
    await harness.service.registry.create_app(app)
    return app, api_name, provider


async def _store(
    harness: Harness, app: App, api_name: str, data: bytes, **q: Any
) -> dict[str, Any]:
    resp = await harness.api.post(
        f"/api/store/{api_name}", params={"key": app.api_key, **q}, data=data
    )
    body: dict[str, Any] = await resp.json()
    assert resp.status == 200, body
    return body


async def test_store_download_overwrite_delete(
    harness: Harness, provider_app: tuple[App, str, Provider]
) -> None:
    app, api_name, provider = provider_app
    data = bytes(range(256)) * 400
    stored = await _store(harness, app, api_name, data, filename="p.bin")
    handle, container, key = stored["handle"], stored["container"], stored["key"]
    assert await _read(provider, container, key) == data

    whole = await harness.api.get(f"/api/file/{handle}")
    assert await whole.read() == data
    part = await harness.api.get(f"/api/file/{handle}", headers={"Range": "bytes=10-19"})
    assert part.status == 206 and await part.read() == data[10:20]
    cdn = await harness.cdn.get(f"/{handle}")
    assert await cdn.read() == data

    meta = await (
        await harness.api.get(
            f"/api/file/{handle}/metadata",
            params={"sha256": "true", "location": "true", "size": "true", "path": "true"},
        )
    ).json()
    assert meta["sha256"] == hashlib.sha256(data).hexdigest()
    assert meta["size"] == len(data)
    assert meta["location"] == provider.location
    assert meta["path"] == key

    over = await harness.api.post(
        f"/api/file/{handle}", data=b"replaced", headers=basic("app", app.secret)
    )
    assert (await over.json())["size"] == 8
    assert await _read(provider, container, key) == b"replaced"

    gone = await harness.api.delete(f"/api/file/{handle}", headers=basic("app", app.secret))
    assert (await gone.json())["storage"] == "deleted"
    assert not await exists(provider, container, key)
    assert (await harness.api.get(f"/api/file/{handle}")).status == 404


async def test_skip_storage_keeps_the_object(
    harness: Harness, provider_app: tuple[App, str, Provider]
) -> None:
    app, api_name, provider = provider_app
    stored = await _store(harness, app, api_name, b"keep me")
    resp = await harness.api.delete(
        f"/api/file/{stored['handle']}",
        params={"skip_storage": "true"},
        headers=basic("app", app.secret),
    )
    assert (await resp.json())["storage"] == "kept"
    assert await _read(provider, stored["container"], stored["key"]) == b"keep me"
    await provider.delete(stored["container"], stored["key"])


async def test_link_to_existing_object_keeps_it_on_delete(
    harness: Harness, provider_app: tuple[App, str, Provider]
) -> None:
    app, api_name, provider = provider_app
    key = f"linked/{app.api_key}-existing.txt"
    await provider.write(
        provider.default_container, key, chunks_of(b"user owned"), WriteOptions("text/plain")
    )
    link = await _store(harness, app, api_name, b"", path=key, link="true")
    handle = link["handle"]
    assert (await (await harness.api.get(f"/api/file/{handle}")).read()) == b"user owned"
    meta = await (
        await harness.api.get(f"/api/file/{handle}/metadata", params={"cloud": "true"})
    ).json()
    assert meta == {"cloud": True}
    resp = await harness.api.delete(f"/api/file/{handle}", headers=basic("app", app.secret))
    assert (await resp.json())["storage"] == "kept"
    assert await _read(provider, provider.default_container, key) == b"user owned"
    await provider.delete(provider.default_container, key)


async def test_container_parameter_follows_the_provider(
    harness: Harness, provider_app: tuple[App, str, Provider]
) -> None:
    app, api_name, provider = provider_app
    params = {"key": app.api_key, "container": "some-other-container"}
    resp = await harness.api.post(f"/api/store/{api_name}", params=params, data=b"x")
    if not provider.supports_containers:
        assert resp.status == 400
        assert (await resp.json())["error"]["code"] == "INVALID_PARAMETER"
    else:
        assert resp.status in (200, 404, 502, 503), await resp.text()
        if resp.status != 200:
            body = await resp.json()
            assert body["error"]["code"].startswith("STORAGE_")
    assert not [
        r
        for r in await harness.service.registry.list_files(app.api_key)
        if r.container == "some-other-container" and resp.status != 200
    ]


async def _read(provider: Provider, container: str, key: str) -> bytes:
    out = bytearray()
    try:
        async for chunk in provider.open(container, key):
            out += chunk
    except errors.StorageNotFound:
        raise AssertionError(f"{key} is missing in {provider.location}") from None
    return bytes(out)


async def test_copy_between_providers(
    harness: Harness,
    provider_setup: tuple[str, dict[str, Any], Provider],
    provider_name: str,
    tmp_path: Any,
) -> None:
    api_name, config, provider = provider_setup
    storage: dict[str, dict[str, Any]] = {api_name: config}
    source_name = api_name
    if api_name != "S3":  # copy from local disk into this provider
        storage["S3"] = {"type": "local", "root": str(tmp_path / "copy-source")}
        source_name = "S3"
    app = App(
        api_key=f"copy{provider_name.replace('_', '')}".ljust(20, "0")[:20],
        secret="copy-secret",
        storage=storage,
    )
    await harness.service.registry.create_app(app)
    data = bytes(range(256)) * 100
    original = await _store(harness, app, source_name, data, filename="orig.bin")
    resp = await harness.api.post(
        f"/api/store/{api_name}/{original['handle']}", params={"key": app.api_key}
    )
    copy = await resp.json()
    assert resp.status == 200, copy
    assert copy["handle"] != original["handle"] and copy["filename"] == "orig.bin"
    assert await _read(provider, copy["container"], copy["key"]) == data
    meta = await (
        await harness.api.get(f"/api/file/{copy['handle']}/metadata", params={"location": "true"})
    ).json()
    assert meta["location"] == provider.location
    assert await (await harness.api.get(f"/api/file/{original['handle']}")).read() == data


async def test_width_and_height_from_the_first_bytes_on_every_provider(
    harness: Harness, provider_app: tuple[App, str, Provider]
) -> None:
    """A store that is no local disk is asked for the image's first bytes only."""
    import io

    from PIL import Image

    app, api_name, _ = provider_app
    out = io.BytesIO()
    Image.new("RGB", (345, 67), "green").save(out, "JPEG")
    stored = await _store(harness, app, api_name, out.getvalue(), filename="p.jpg")
    resp = await harness.api.get(
        f"/api/file/{stored['handle']}/metadata", params={"width": "true", "height": "true"}
    )
    assert await resp.json() == {"width": 345, "height": 67}
