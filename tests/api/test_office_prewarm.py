"""``office_prewarm`` (issue 26): each server process starts one LibreOffice converter in
the background at startup, so that its first document does not wait for it; startup and
readiness never wait for it, and nothing starts when LibreOffice is missing or
``office_converters`` is 0."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from stowage.config import Settings
from stowage.processing import office
from tests.api.harness import Harness
from tests.api.test_transform import get, stored
from tests.processing import officedocs

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


def counted_starts(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The time of each converter start of this process (LibreOffice launched)."""
    starts: list[float] = []
    start = office._Converter.start

    async def counting(*args: Any) -> office._Converter:
        starts.append(time.monotonic())
        return await start(*args)

    monkeypatch.setattr(office._Converter, "start", counting)
    return starts


@pytest.mark.needs("soffice", by="scripts/setup.d/79-office.sh")
@pytest.mark.settings(office_prewarm=True, office_converters=1)
async def test_the_first_document_finds_a_converter_started_ahead(harness: Harness) -> None:
    converters = harness.parts.processor.office
    # Startup did not wait: the converter is still starting when the node is ready.
    assert not converters._all
    resp = await harness.api.get("/readyz")
    assert resp.status == 200
    deadline = time.monotonic() + 60
    while not converters._all and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    assert len(converters._all) == 1
    (ahead,) = converters._all
    handle = await stored(harness, officedocs.docx(["first"]), "a.docx")
    _, body = await get(harness, f"/output=format:pdf/{handle}")
    assert body.startswith(b"%PDF-")
    assert converters._all == {ahead} and converters._idle == [ahead]  # it did the work


async def _warmed(converters: office.Converters) -> None:
    converters.prewarm()
    if converters._warming is not None:
        await converters._warming


async def test_nothing_starts_without_libreoffice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    starts = counted_starts(monkeypatch)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no soffice on the PATH
    converters = office.converters_for(Settings(data_dir=tmp_path))
    assert not converters.available()
    began = time.monotonic()
    await _warmed(converters)
    assert time.monotonic() - began < 1.0 and starts == [] and not converters._all
    await converters.close()


async def test_nothing_starts_without_converters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    starts = counted_starts(monkeypatch)
    converters = office.converters_for(Settings(data_dir=tmp_path, office_converters=0))
    await _warmed(converters)
    assert converters._warming is None and starts == [] and not converters._all


@pytest.mark.needs("soffice", by="scripts/setup.d/79-office.sh")
@pytest.mark.parametrize("turns", [0, 1, 2, 3, 4, 6, 9, 14])
async def test_closing_while_a_converter_starts_kills_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, turns: int
) -> None:
    """Closed ``turns`` turns of the event loop after the start began: while the
    sandbox's processes are made, their pipes connected, or LibreOffice loads. Once, a
    close at one of those points waited for ever, LibreOffice left running and its folder
    kept (``sandbox.spawn``)."""
    starts = counted_starts(monkeypatch)
    converters = office.converters_for(Settings(data_dir=tmp_path))
    converters.prewarm()  # returns at once: the start is in the background
    assert not converters._all
    while not starts:
        await asyncio.sleep(0.01)
    for _ in range(turns):
        await asyncio.sleep(0)
    await asyncio.wait_for(converters.close(), 30)
    assert not converters._all and not list((tmp_path / "office").glob("*-*"))
