"""The processing benchmark's parts (bench/processing.py, issue 15), for real: Thumbor
starts with two processes and serves a 300-px-wide WebP of a generated 12-megapixel JPEG
from disk, and stops without leaving a process behind; the probe tells whether Stowage
transforms images, and says why not when it does not."""

from __future__ import annotations

import json
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from bench import images, processing  # noqa: E402
from bench.servers import Stowage  # noqa: E402
from bench.thumbor import Thumbor, _is_thumbor  # noqa: E402


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return images.sources(tmp_path_factory.mktemp("sources"), 2)


@pytest.fixture
def thumbor(tmp_path: Path, sources: list[Path]) -> Iterator[Thumbor]:
    server = Thumbor(tmp_path / "thumbor")
    server.images.mkdir(parents=True)
    for path in sources:
        (server.images / path.name).hardlink_to(path)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def test_sources_are_distinct_12_megapixel_jpegs(sources: list[Path]) -> None:
    first, second = (path.read_bytes() for path in sources)
    assert first != second
    assert images.geometry(first) == (4000, 3000, "jpegload_buffer")
    assert 1_000_000 < len(first) < 6_000_000  # a camera's size, not a flat image


def test_thumbor_resizes_to_a_webp_from_disk_with_two_processes(
    thumbor: Thumbor, sources: list[Path]
) -> None:
    forked = thumbor.pids()[1:]
    assert len(forked) == 2 and all(_is_thumbor(pid) for pid in forked)
    for path in sources:
        with urllib.request.urlopen(thumbor.resize_url(path.name), timeout=60) as resp:
            assert resp.headers["Content-Type"] == "image/webp"
            assert images.geometry(resp.read()) == (300, 225, "webpload_buffer")
    processing.check_thumbor(thumbor, sources[0].name)
    thumbor.stop()
    assert not any(_is_thumbor(pid) for pid in thumbor.pids()[:1] + forked)


def test_probe_tells_whether_stowage_transforms(tmp_path: Path, sources: list[Path]) -> None:
    stowage = Stowage(tmp_path, workers=1)
    key, _ = stowage.create_app()
    stowage.start()
    try:
        url = f"{stowage.url}/api/store/S3?key={key}&filename=src.jpg"
        request = urllib.request.Request(url, data=sources[0].read_bytes(), method="POST")
        with urllib.request.urlopen(request, timeout=60) as resp:
            handle = json.loads(resp.read())["handle"]
        engine = processing.probe(stowage, handle)
    finally:
        stowage.stop()
    assert engine.present, engine  # or every Stowage row of scenario 11 would be empty


def test_floor_does_the_cold_work_alone_with_both_libraries(sources: list[Path]) -> None:
    for make in (processing._vips_thumbnail, processing._pillow_thumbnail):
        assert images.geometry(make(sources[0])) == (300, 225, "webpload_buffer")
    row = processing.floor(sources, 36.0)
    assert row.stowage is not None and row.stowage > 0 and row.reference
    assert len(row.extra["runs"]["libvips"]) == len(row.extra["runs"]["pillow"]) == 2
    assert row.extra["needed_for_1.5x_ms"] == 24.0
    assert "needs <= 24.0 ms" in row.scenario
    best = min(row.stowage, row.reference)
    assert row.extra["best_reachable_x_thumbor_cpu"] == pytest.approx(36.0 / best)


def test_thumbors_smart_crop_looks_for_faces_as_stowages_does(thumbor: Thumbor) -> None:
    """The per-task row "smart crop" compares like with like: Thumbor's ``/smart/`` runs its
    face detector (then its feature detector), as smart_crop looks for faces, then the
    most interesting part. Without detectors Thumbor's smart crop is a centre crop."""
    from skimage import data

    astronaut = Path(data.__file__).parent / "astronaut.png"
    (thumbor.images / "astronaut.png").hardlink_to(astronaut)
    meta = f"{thumbor.url}/unsafe/meta/100x100/smart/astronaut.png"
    with urllib.request.urlopen(meta, timeout=60) as resp:
        found = json.loads(resp.read())["thumbor"]["focal_points"]
    assert any(point["origin"] == "Face Detection" for point in found), found
