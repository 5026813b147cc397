"""Storing under a given handle (core/keephandle.py): the handle rules of core/names.py,
the check before the commit, and nothing left behind by a refused or failed write."""

from __future__ import annotations

import hashlib
import string
from collections.abc import AsyncIterator

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from stowage import errors
from stowage.core import keephandle, names
from stowage.core.keephandle import Given
from tests.api.harness import Harness, harness, settings

__all__ = ["harness", "settings"]
HANDLE = "AbCdEfGhIjKlMnOpQr_-"


async def chunks(*parts: bytes) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


def objects(h: Harness) -> list[str]:
    root = h.object_path(h.open_app, "x").parent
    return sorted(p.name for p in root.iterdir()) if root.exists() else []


async def test_a_file_keeps_its_handle_name_type_and_upload_time(harness: Harness) -> None:
    svc = harness.service
    data = b"kept under its own handle"
    meta = Given(HANDLE, "report.pdf", "application/pdf", uploaded=1_500_000_000_123.5)
    record = await keephandle.store_under(
        svc.registry, svc.providers, harness.open_app, "S3", meta, chunks(data[:5], data[5:])
    )
    assert record == await svc.registry.get(HANDLE)
    assert (record.filename, record.mimetype, record.uploaded) == (
        "report.pdf",
        "application/pdf",
        1_500_000_000_123.5,
    )
    assert (record.size, record.sha256) == (len(data), hashlib.sha256(data).hexdigest())
    response = await harness.cdn.get(f"/{HANDLE}")
    assert await response.read() == data
    with pytest.raises(errors.KeyInUse):  # the handle is taken: never a second row
        await keephandle.store_under(
            svc.registry, svc.providers, harness.open_app, "S3", meta, chunks(b"other")
        )
    assert await (await harness.cdn.get(f"/{HANDLE}")).read() == data


async def test_a_failed_check_leaves_no_row_and_no_object(harness: Harness) -> None:
    svc = harness.service
    before = objects(harness)

    def refuse(size: int, sha256: str) -> None:
        raise errors.UpstreamError(f"{size} is not what was promised")

    with pytest.raises(errors.UpstreamError):
        await keephandle.store_under(
            svc.registry,
            svc.providers,
            harness.open_app,
            "S3",
            Given(HANDLE, "a.txt", "text/plain", 1.0),
            chunks(b"abc"),
            refuse,
        )
    assert await svc.registry.get(HANDLE) is None
    assert objects(harness) == before
    # The handle is free again: the refused write reserved nothing that stays.
    await keephandle.store_under(
        svc.registry,
        svc.providers,
        harness.open_app,
        "S3",
        Given(HANDLE, "a.txt", "", 1.0),
        chunks(b"abc"),
    )
    assert (await svc.registry.get(HANDLE)) is not None


@hsettings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(string.printable + "é/", max_size=24))
def test_only_what_names_takes_for_a_handle_is_taken(value: str) -> None:
    if names.is_handle(value):
        assert keephandle.checked_handle(value) == value
    else:
        with pytest.raises(errors.InvalidParameter):
            keephandle.checked_handle(value)


async def test_replace_under_keeps_the_old_version_when_the_check_fails(
    harness: Harness,
) -> None:
    svc = harness.service
    app = harness.open_app
    meta = Given(HANDLE, "v.txt", "text/plain", 5.0)
    await keephandle.store_under(svc.registry, svc.providers, app, "S3", meta, chunks(b"one"))

    def refuse(size: int, sha256: str) -> None:
        raise errors.UpstreamError("no")

    with pytest.raises(errors.UpstreamError):
        await keephandle.replace_under(svc.registry, svc.providers, app, meta, chunks(b"x"), refuse)
    assert await (await harness.cdn.get(f"/{HANDLE}")).read() == b"one"
    renamed = Given(HANDLE, "w.txt", "text/plain", 7.0)
    record = await keephandle.replace_under(
        svc.registry, svc.providers, app, renamed, chunks(b"two")
    )
    assert (record.filename, record.uploaded, record.version) == ("w.txt", 7.0, 2)
    assert await (await harness.cdn.get(f"/{HANDLE}")).read() == b"two"
