"""AVIF's save time grows with the quality asked (saverates.AVIF_QUALITY): the estimate
follows it, so that a chain at quality 90-100 is priced near what it takes.

Before: every quality was priced at the default's rate; a 12 MP photo to AVIF at quality
100 was estimated at 6 s (a big job, admitted) and took 10.3 s of one core, past the 8 s
any job may cost."""

from __future__ import annotations

import itertools
import random
import time
from pathlib import Path

import pyvips

from bench import images
from stowage.config import Settings
from stowage.processing import chain, cost, detail, frames, saverates
from tests.processing.test_cost import LIMITS
from tests.processing.test_cost_saves import noise, photo


def estimated(source: Path, quality: int | None) -> float:
    asked = "output=format:avif" + (f",quality:{quality}" if quality is not None else "")
    parsed = chain.parse([asked])
    output = chain.output_for(parsed, "image/png")
    opened = frames.open_source(str(source), parsed, output, LIMITS, "sequential")
    return cost.estimate(
        opened, parsed, opened.image.width, "avif", detail=lambda: detail.measured(opened)
    )


def spent(image: pyvips.Image, quality: int) -> float:
    """The best of two saves' CPU time: a busy machine only adds to one."""
    times = []
    for _ in range(2):
        started = time.process_time()
        image.heifsave_buffer(Q=quality, compression="av1", effort=2)
        times.append(time.process_time() - started)
    return min(times)


def test_the_estimate_grows_with_the_quality_as_the_save_time_does(tmp_path: Path) -> None:
    """Generated content and qualities (half of them 90-100, where the time doubles): the
    estimate's growth over quality 50 is at least 0.6 of the save's own growth."""
    rng = random.Random(5160)
    threads = pyvips.concurrency_get()
    pyvips.concurrency_set(1)  # as a job runs
    try:
        for case in range(6):
            width, height = rng.randint(400, 560), rng.randint(300, 420)
            quality = rng.choice([rng.randint(51, 89), rng.randint(90, 100)])
            if rng.random() < 0.5:
                source = noise(tmp_path / f"{case}.png", width, height, 5160 + case)
            else:
                source = photo(tmp_path / f"{case}.jpg", width, height)
            image = pyvips.Image.new_from_file(str(source)).copy_memory()
            measured = spent(image, quality) / spent(image, 50)
            growth = estimated(source, quality) / estimated(source, 50)
            print(f"{source.name} {width}x{height} q{quality}: {measured:.2f} vs {growth:.2f}")
            assert growth >= 0.6 * measured, (source.name, quality, measured, growth)
            assert growth <= 2.5 * measured, (source.name, quality, measured, growth)
    finally:
        pyvips.concurrency_set(threads)


def test_the_factor_is_one_at_the_default_and_below_and_grows_with_the_quality() -> None:
    asked = [chain.parse([f"quality=value:{q}"]) for q in range(1, 101)]
    factors = [saverates.quality_factor("avif", parsed) for parsed in asked]
    assert factors[:50] == [1.0] * 50
    assert all(b >= a for a, b in itertools.pairwise(factors))
    assert factors[99] == saverates.AVIF_QUALITY[-1][1]
    assert saverates.quality_factor("avif", chain.parse(["output=format:avif"])) == 1.0
    for fmt in ("webp", "jpeg", "png", "gif"):  # their rates do not depend on it here
        assert saverates.quality_factor(fmt, chain.parse(["quality=value:100"])) == 1.0


def test_a_twelve_megapixel_photo_at_quality_100_is_refused_and_at_the_default_admitted(
    tmp_path: Path,
) -> None:
    limit = Settings().processing_max_job_cost
    source = photo(tmp_path / "p.jpg", *images.TWELVE_MP)
    assert estimated(source, None) < limit
    assert estimated(source, 60) < limit
    assert estimated(source, 100) > limit
