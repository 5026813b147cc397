"""A progressive JPEG (``pjpg``), one with optimised tables (``compress``), and a TIFF
with ``compress`` (deflate) cost more to save than a baseline JPEG or an uncompressed
TIFF, a JPEG more again from quality 90 (4:4:4): the estimate follows them
(``saverates.JPEG_CODING``, ``DEFLATED_TIFF``).

Before: every JPEG save was priced at the baseline's rate, whatever its coding and
quality, and every TIFF as uncompressed; ``pjpg=quality:100`` of 12 MP of noise took
0.97 s of one core, estimated at 0.3 (found by a direct sweep of generated chains,
2026-12-07)."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest
import pyvips

from stowage.processing import chain, saverates
from tests.processing.test_cost_effects import estimated_and_spent
from tests.processing.test_cost_saves import noise, photo

CODINGS = {
    "baseline": "output=format:jpg,quality:{q}",
    "pjpg": "pjpg=quality:{q}",
    "compress": "output=format:jpg,quality:{q},compress:true",
    "both": "pjpg=quality:{q}/compress",
    "tiff": "output=format:tiff,compress:true",  # no quality: the same at every band
}
SLACK = 0.01  # seconds: what a job's time may vary by, beside these saves of 0.02-0.1 s


def test_the_rates_of_each_coding_follow_the_save_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each coding, content and quality band, at generated sizes and qualities, with the
    content measured whatever the save's size (as it is from ``MEASURE_ABOVE``'s, 0.3 s
    at a photo's rate: 6 to 30 MP for these codings): ``judge``'s bounds (noise to a
    progressive JPEG at quality 90-100 took three times its estimate before, a deflated
    TIFF twice)."""
    monkeypatch.setattr(saverates, "MEASURE_ABOVE", 0.0)
    rng = random.Random(5551)
    kinds = itertools.product(CODINGS, ("noise", "photo"), ((40, 89), (90, 99), (100, 100)))
    for case, (coding, kind, band) in enumerate(kinds):
        width, height = rng.randint(1200, 1700), rng.randint(900, 1200)
        quality = rng.randint(*band)
        segments = CODINGS[coding].format(q=quality).split("/")
        if kind == "noise":
            source = noise(tmp_path / f"{case}.png", width, height, 5551 + case)
        else:
            source = photo(tmp_path / f"{case}.jpg", width, height)
        judge(source, segments, f"{kind} {width}x{height}", monkeypatch)


def test_cmyk_results_and_sources_are_priced_with_their_transforms(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A result saved in CMYK (``colorspace:cmyk``, or ``input`` of a CMYK source) is
    made CMYK first and its four bands are saved whole; a CMYK source is made sRGB before
    its tasks. Neither was priced: a 12 MP CMYK JPEG to
    ``output=format:pjpg,colorspace:input`` took 3.8 times its estimate, one flipped 1.7."""
    monkeypatch.setattr(saverates, "MEASURE_ABOVE", 0.0)
    rng = random.Random(5552)
    saves = [CODINGS[c] + ",colorspace:{s}" for c in ("baseline", "compress", "tiff")]
    saves += ["output=format:pjpg,quality:{q},colorspace:{s}", "flip/output=format:png"]
    for case, (save, kind) in enumerate(itertools.product(saves, ("noise", "photo"))):
        width, height = rng.randint(1000, 1500), rng.randint(800, 1100)
        quality = rng.choice([rng.randint(40, 89), rng.randint(90, 100)])
        from_cmyk = save.startswith("flip") or rng.random() < 0.5
        segments = save.format(q=quality, s="input" if from_cmyk else "cmyk").split("/")
        if kind == "noise":
            source = noise(tmp_path / f"{case}.png", width, height, 5552 + case)
        else:
            source = photo(tmp_path / f"{case}.jpg", width, height)
        if from_cmyk:
            image = pyvips.Image.new_from_file(str(source)).icc_transform("cmyk", embedded=False)
            image.jpegsave(str(tmp_path / f"{case}-cmyk.jpg"), Q=92)
            source.unlink()
            source = tmp_path / f"{case}-cmyk.jpg"
        label = f"{kind} {width}x{height}{' CMYK' if from_cmyk else ''}"
        judge(source, segments, label, monkeypatch)


def judge(source: Path, segments: list[str], label: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The job takes under 1.4 times its estimate and is estimated under three times
    what it takes (both give or take what a job's time varies by); removes ``source``.
    Its time is mostly libjpeg-turbo's (or zlib's and LittleCMS's, which ran beside it
    on the machines seen): normalised by that save's speed, not the blur's."""
    dest = source.with_name("o")
    seconds, spent = estimated_and_spent(source, segments, dest, monkeypatch, kind="jpeg")
    print(f"{label} {segments}: estimated {seconds:.3f}, took {spent:.3f}")
    assert spent < 1.4 * seconds + SLACK, (label, segments, seconds, spent)
    assert seconds < 3 * spent + 3 * SLACK, (label, segments, seconds, spent)
    source.unlink()


def test_a_baseline_jpeg_keeps_its_rates_and_the_codings_grow_with_the_quality() -> None:
    def factors(*segments: str) -> tuple[float, float]:
        parsed = chain.parse(list(segments))
        return saverates.quality_factor("jpeg", parsed), saverates.noise_factor("jpeg", parsed)

    progressive, optimized = (
        saverates.JPEG_CODING["progressive"],
        saverates.JPEG_CODING["optimized"],
    )
    for quality in (1, 50, 89, 90, 100):
        assert factors(f"output=format:jpg,quality:{quality}") == (1.0, 1.0)
    assert factors("pjpg") == factors("pjpg=quality:89") == progressive[0]
    assert factors("pjpg=quality:90") == factors("pjpg=quality:99") == progressive[1]
    assert factors("pjpg=quality:100") == progressive[2]
    assert factors("compress") == optimized[0]
    assert factors("output=quality:95", "compress") == optimized[1]
    assert factors("output=format:pjpg,quality:95", "compress") == factors("pjpg=quality:95")
    assert factors("pjpg", "output=quality:input") == factors("pjpg")  # the default's until read
    assert factors("pjpg", "output=format:jpg") == (1.0, 1.0)  # the last output's format
    for coding in (progressive, optimized):  # each band's dearer than the one below
        assert all(a[0] <= b[0] and a[1] <= b[1] for a, b in itertools.pairwise(coding))
    cmyk = saverates.JPEG_CMYK_CODING
    assert (
        saverates.jpeg_factors(chain.parse(["output=quality:80"]), cmyk=True) == cmyk["baseline"][0]
    )
    assert (
        saverates.jpeg_factors(chain.parse(["pjpg=quality:100"]), cmyk=True)
        == cmyk["progressive"][2]
    )
    asked = chain.parse(["output=format:jpg,colorspace:input"])
    assert asked.makes_cmyk("jpeg", True) and not asked.makes_cmyk("jpeg", False)
    assert not asked.makes_cmyk("png", True)  # PNG holds no CMYK: RGB
    parsed = chain.parse(["pjpg=quality:100"])
    for fmt in ("webp", "png", "avif", "gif", "tiff"):
        assert saverates.noise_factor(fmt, parsed) == 1.0
    tiff = saverates.quality_factor("tiff", chain.parse(["output=format:tiff,compress:true"]))
    assert tiff == saverates.DEFLATED_TIFF
    assert saverates.quality_factor("tiff", chain.parse(["output=format:tiff"])) == 1.0
