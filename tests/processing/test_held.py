"""Rotations by other than a right angle are computed once into memory (``ops.held``):
left lazy, a resize after one asked libvips for it again and again. What is held stays
within the output limit and, all holds of a job together, within its total pixels."""

from __future__ import annotations

import ctypes
import dataclasses
import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import pyvips

from stowage.processing import chain, frames, ops
from stowage.processing.base import Limits
from stowage.processing.vips import VipsEngine

LIMITS = Limits(10**9, 10**10, 10_000, 120, max_frames=10**5, max_total_pixels=10**10)


def test_holds_stay_within_the_output_limit_and_the_jobs_pixels() -> None:
    small, wide = pyvips.Image.black(10, 10), pyvips.Image.black(200, 1)
    with ops.engine_limits(100, hold_pixels=150):
        assert ops.held(small) is not small  # computed, in memory
        assert ops.held(small) is small  # 100 of 150 pixels are held: lazy
        assert ops.held(wide) is wide  # past the output limit: the engine refuses it
    assert ops.held(small) is small  # outside a job nothing is held


def cpu_of(source: Path, segments: list[str], dest: Path) -> float:
    parsed = chain.parse(segments)
    output = chain.output_for(parsed, "image/jpeg")
    started = time.process_time()
    VipsEngine(threads_per_job=1).render(source, parsed, output, dest, LIMITS)
    return time.process_time() - started


def test_a_resize_after_a_tilt_does_not_compute_it_again(tmp_path: Path) -> None:
    grey = pyvips.Image.gaussnoise(250, 190, sigma=50, mean=128).resize(8).cast("uchar")
    photo = tmp_path / "photo.jpg"
    grey.bandjoin([grey, grey]).jpegsave(str(photo))
    tilted = cpu_of(photo, ["polaroid=rotate:252"], tmp_path / "a.jpg")
    shrunk = cpu_of(photo, ["polaroid=rotate:252", "resize=height:184"], tmp_path / "b.jpg")
    # Lazy, the shrunk one took 2.7 times the tilted one's CPU (0.91 s against 0.34 s).
    assert shrunk < 1.5 * tilted, (tilted, shrunk)


def _foreign_flags() -> Callable[[str, Path], int]:
    """libvips' ``vips_foreign_flags`` (pyvips does not bind it), from the library
    pyvips loaded (named ``libvips``, not pyvips' own ``_libvips`` module)."""
    maps = Path("/proc/self/maps").read_text()
    found = sorted(set(re.findall(r"(/\S*/libvips[-.]\S*\.so\S*)", maps)))
    assert len(found) == 1, f"one libvips mapped, not {found}"
    flags = ctypes.CDLL(found[0]).vips_foreign_flags
    flags.argtypes, flags.restype = [ctypes.c_char_p, ctypes.c_char_p], ctypes.c_int
    return lambda loader, path: int(flags(loader.encode(), str(path).encode()))


SAVES = {"jpegload": "jpg", "pngload": "png", "webpload": "webp", "gifload": "gif"}
SAVES["heifload"] = "avif"


@pytest.mark.parametrize("loader", sorted(frames.WHOLE_ON_RANDOM))
def test_loaders_held_as_decoded_cannot_read_a_part(tmp_path: Path, loader: str) -> None:
    """A loader counted as decoding the whole image on random access has no
    ``VIPS_FOREIGN_PARTIAL`` flag: one that had would read the file again at every
    box, and its image would be left lazy where a task asked it held."""
    path = tmp_path / f"a.{SAVES[loader]}"
    pyvips.Image.black(64, 48, bands=3).cast("uchar").write_to_file(str(path))
    assert pyvips.Image.new_from_file(str(path)).get("vips-loader") == loader
    assert _foreign_flags()(loader, path) & 1 == 0  # VIPS_FOREIGN_PARTIAL


def test_the_flags_tell_a_loader_that_reads_a_part(tmp_path: Path) -> None:
    tiled = tmp_path / "tiled.tif"
    pyvips.Image.black(64, 48).tiffsave(str(tiled), tile=True)
    assert _foreign_flags()("tiffload", tiled) & 1


def test_the_decoded_source_is_held_as_it_is(tmp_path: Path) -> None:
    """The source decoded whole for random access is not copied again (a 12-megapixel
    JPEG was held twice: tests/processing/test_effects.py measures the memory); its
    pixels are taken from the job's budget all the same, as the estimate takes them."""
    path = tmp_path / "a.png"
    pyvips.Image.black(10, 10, bands=3).cast("uchar").pngsave(str(path))
    source = pyvips.Image.new_from_file(str(path), access="random")
    opened = frames.Opened(source, str(path), 1, 10, 1)
    assert frames.decoded(opened, "random") is source
    assert frames.decoded(opened, "sequential") is None
    assert frames.decoded(dataclasses.replace(opened, read=True), "random") is None
    other = source.invert()
    with ops.engine_limits(100, hold_pixels=150):
        ops.DECODED.set(source)
        assert ops.held(source) is source  # not copied
        assert ops.held(other) is other  # 100 of 150 pixels taken by the source: lazy
    assert ops.DECODED.get() is None  # the job's limits reset it
    with ops.engine_limits(100, hold_pixels=150):
        assert ops.held(other) is not other  # any other image is copied into memory
