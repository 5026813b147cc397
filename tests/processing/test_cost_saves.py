"""Saves whose time depends on the content (processing/cost.py ``SAVE_NOISE``, detail.py):
noise saved as AVIF or GIF is estimated near its CPU time, photos stay admitted; an
uncompressed TIFF too large for ``max_output_bytes`` is refused from the estimate.

Before: a 4000x3000 PNG of noise to AVIF was estimated at 6 s (a photo's rate), admitted,
and ran 32 s to its deadline; a 640x480 JPEG resized to 10000x10000 as TIFF held a big
job's slot 10-22 s before the save found its 300 MB over the limit."""

from __future__ import annotations

import dataclasses
import random
import time
from pathlib import Path

import numpy as np
import pyvips

from bench import images
from stowage import errors
from stowage.config import Settings
from stowage.processing import chain, cost, detail, frames
from stowage.processing.vips import VipsEngine
from tests.processing import cpuspeed
from tests.processing.test_cost import LIMITS

SLACK = 0.3  # seconds: a job's fixed costs


def noise(path: Path, width: int, height: int, seed: int) -> Path:
    pixels = np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)
    pyvips.Image.new_from_array(pixels).copy(interpretation="srgb").pngsave(
        str(path), compression=1
    )
    return path


def photo(path: Path, width: int, height: int) -> Path:
    """bench/images.py's textured photo (smooth fields and fine grain), as a JPEG."""
    images._base(width, height).cast("uchar").copy(interpretation="srgb").jpegsave(str(path), Q=85)
    return path


def estimated_and_spent(source: Path, segments: list[str], dest: Path) -> tuple[float, float]:
    """The estimate, and the CPU time in the rates' state: measured again (``cpuspeed``)
    when the two are more than three times apart."""
    parsed = chain.parse(segments)
    output = chain.output_for(parsed, "image/png")
    opened = frames.open_source(str(source), parsed, output, LIMITS, "sequential")
    seconds = cost.estimate(
        opened, parsed, opened.image.width, output.format, detail=lambda: detail.measured(opened)
    )

    def spent_at(fresh: bool) -> float:
        started = time.process_time()
        VipsEngine(threads_per_job=1).render(source, parsed, output, dest, LIMITS)
        # in the state the rates describe: the machine's speed drifts about twice (cpuspeed.py)
        return (time.process_time() - started) / cpuspeed.speed(fresh=fresh)

    fits = lambda spent: spent < 3 * seconds + SLACK and seconds < 3 * spent + SLACK  # noqa: E731
    return seconds, cpuspeed.measured_again(spent_at, fits)


def test_noise_and_photos_saved_as_avif_or_gif_are_estimated_near_their_time(
    tmp_path: Path,
) -> None:
    """Noise is the encoders' worst content; the rate of a photo (kept so that a 12 MP
    photo is admitted) was 2-4 times below noise's time (more at quality 100)."""
    rng = random.Random(2929)
    for case in range(4):
        fmt = rng.choice(["avif", "avif", "gif"])
        width, height = rng.randint(800, 1000), rng.randint(750, 900)
        quality = rng.choice([50, 75, 90, 100])
        segments = [f"output=format:{fmt}" + (f",quality:{quality}" if fmt == "avif" else "")]
        for kind in ("noise", "photo"):
            source = tmp_path / f"{case}-{kind}"
            if kind == "noise":
                noise(source.with_suffix(".png"), width, height, case)
                source = source.with_suffix(".png")
            else:
                source = photo(source.with_suffix(".jpg"), width, height)
                segments = [f"output=format:{fmt}"]  # a photo at its default quality
            seconds, spent = estimated_and_spent(source, segments, tmp_path / f"{case}.o")
            print(f"{kind} {width}x{height} {segments}: estimated {seconds:.2f}, took {spent:.2f}")
            assert spent < 3 * seconds + SLACK, (kind, width, height, segments, seconds, spent)
            assert seconds < 3 * spent + SLACK, (kind, width, height, segments, seconds, spent)


def test_a_twelve_megapixel_photo_is_admitted_and_noise_is_not(tmp_path: Path) -> None:
    """The documented promise (a camera's 12 MP photo to AVIF or WebP, as auto_image
    asks) holds; noise of that size to AVIF or GIF is refused in milliseconds, not run to its
    deadline."""
    limit = Settings().processing_max_job_cost
    sources = (
        photo(tmp_path / "p.jpg", *images.TWELVE_MP),
        noise(tmp_path / "n.png", *images.TWELVE_MP, 2930),
    )
    for source in sources:
        for fmt in ("avif", "webp", "gif", "png"):
            parsed = chain.parse([f"output=format:{fmt}"])
            output = chain.output_for(parsed, "image/png")
            opened = frames.open_source(str(source), parsed, output, LIMITS, "sequential")
            seconds = cost.estimate(
                opened, parsed, opened.image.width, fmt, detail=lambda o=opened: detail.measured(o)
            )
            # GIF's photo rate is a photo's measured time: 12 MP of it is refused too
            refused = fmt == "gif" or (source.suffix == ".png" and fmt == "avif")
            assert (seconds > limit) is refused, (source.name, fmt, seconds)


def test_an_uncompressed_tiff_over_the_byte_limit_is_refused_before_any_work(
    tmp_path: Path,
) -> None:
    """width x height x bands bytes at least (one band for a grey result): over
    ``max_output_bytes``, refused by the estimate, before anything is decoded or saved."""
    rng = random.Random(2931)
    for case in range(12):
        width, height = rng.randint(2, 700), rng.randint(2, 700)
        source = photo(tmp_path / f"s{case}.jpg", width, height)
        box = rng.randint(100, 3000)
        grey = rng.random() < 0.3
        segments = [f"resize=width:{box},height:{box},fit:scale", "output=format:tiff"]
        segments = ["monochrome", *segments] if grey else segments
        cap = rng.randint(10_000, 3 * box * box * 2)
        limits = dataclasses.replace(LIMITS, max_output_bytes=cap)
        parsed = chain.parse(segments)
        output = chain.output_for(parsed, "image/jpeg")
        dest = tmp_path / f"o{case}.tiff"
        least = box * box * (1 if grey else 3)
        try:
            VipsEngine(threads_per_job=1).render(source, parsed, output, dest, limits)
        except errors.ImageTooLarge as exc:
            assert least > cap, (segments, cap, str(exc))
            assert "uncompressed" in str(exc), str(exc)  # the estimate's, not the save's
            assert not dest.exists()
            continue
        assert least <= cap, (segments, cap)
        assert dest.stat().st_size <= cap
        made = pyvips.Image.new_from_file(str(dest))
        assert (made.width, made.height) == (box, box)


def test_detail_is_measured_over_the_whole_picture_in_any_format(tmp_path: Path) -> None:
    """Noise under a smooth band of rows was measured as a photo (only the first 32 rows
    were read), and a WebP, AVIF or GIF source was not measured at all: a 12 MP AVIF of
    such noise was admitted at a photo's price and ran to its deadline."""
    rng = np.random.default_rng(2990)
    for case in range(8):
        width, height = int(rng.integers(64, 700)), int(rng.integers(64, 500))
        smooth = int(rng.integers(0, height // 3))
        pixels = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
        pixels[:smooth] = np.linspace(0, 255, width, dtype=np.uint8)[None, :, None]
        fmt = ("png", "webp", "tif", "gif")[case % 4]
        options = {"webp": {"lossless": True}}.get(fmt, {})
        for kind, image in (
            ("noise", pyvips.Image.new_from_array(pixels)),
            ("photo", images._base(width, height).cast("uchar")),
        ):
            path = tmp_path / f"{case}-{kind}.{fmt}"
            image.copy(interpretation="srgb").write_to_file(str(path), **options)
            parsed = chain.parse(["output=format:avif"])
            output = chain.output_for(parsed, "image/png")
            opened = frames.open_source(str(path), parsed, output, LIMITS, "sequential")
            found = detail.measured(opened)
            assert (found > 0.8) if kind == "noise" else (found < 0.2), (kind, fmt, found)


def test_the_bands_a_chain_adds_count_in_an_uncompressed_tiff(tmp_path: Path) -> None:
    """CMYK (four bands) and the alpha that rounded corners, a circle or a transparent
    background leave count in the least size of an uncompressed TIFF: a 10000x10000 grey
    PNG as CMYK (400 MB) was refused only after 6.3 s of work, counted as one band."""
    rng = random.Random(2933)
    extras = [["rounded_corners"], ["circle"], ["torn_edges=background:none"], ["sepia"], []]
    for case in range(10):
        grey = rng.random() < 0.6
        source = tmp_path / f"s{case}.png"
        image = images._base(rng.randint(20, 300), rng.randint(20, 300)).cast("uchar")
        (image[0] if grey else image).pngsave(str(source))
        box = rng.randint(200, 1500)
        space = rng.choice(["cmyk", "rgb"])
        segments = [f"resize=width:{box},height:{box},fit:scale", *rng.choice(extras)]
        segments.append(f"output=format:tiff,colorspace:{space}")
        parsed = chain.parse(segments)
        output = chain.output_for(parsed, "image/png")
        dest = tmp_path / f"o{case}.tiff"
        VipsEngine(threads_per_job=1).render(source, parsed, output, dest, LIMITS)
        bands = pyvips.Image.new_from_file(str(dest)).bands  # what the chain really makes
        cap = box * box * bands - 1  # one byte short of the pixels alone
        limits = dataclasses.replace(LIMITS, max_output_bytes=cap)
        try:
            VipsEngine(threads_per_job=1).render(source, parsed, output, dest, limits)
        except errors.ImageTooLarge as exc:
            assert "uncompressed" in str(exc), (segments, grey, str(exc))  # before any work
            continue
        raise AssertionError(f"{segments} on {'grey' if grey else 'colour'} was not refused")
