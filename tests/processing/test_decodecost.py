"""The work between a source's file and the first task is priced (processing/decodecost.py):
a progressive JPEG's decode, a dropped ICC profile's transform, 16-bit samples.

Before: a progressive JPEG cost a baseline one's decode (a 7000x7000 one estimated 1.24 s
for 2.92 s of CPU), and a dropped profile's transform and a 16-bit PNG's extra decode
were not priced at all (a 12 MP Display P3 PNG with ``no_metadata`` 0.24 -> 0.39 s of
CPU, the same estimate). Each case is held to the bounds of the other cost tests: the
estimate at least half its CPU time (``test_cost_holds``), at most three times and
``SLACK`` (``test_cost_saves``); a profile's or 16 bits' share, against the same picture
without it, to at least half the CPU it adds (``test_read_samples_cost``)."""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from pathlib import Path

import pytest
import pyvips

from bench import images
from stowage.processing import chain, cost
from stowage.processing.vips import VipsEngine
from tests.processing import cpuspeed
from tests.processing.test_cost import LIMITS

SLACK = 0.3  # seconds: a job's fixed costs
TIMER = 0.01  # seconds: what two CPU measures of the same run differ by on a busy machine


def _photo(rng: random.Random, width: int, height: int, grain: float) -> pyvips.Image:
    """bench/images.py's textured photo with ``grain`` (a sigma of levels) over it."""
    noise = pyvips.Image.gaussnoise(width, height, sigma=grain, seed=rng.randrange(1 << 20))
    return (images._base(width, height) + noise).cast("uchar").copy(interpretation="srgb")


def _run(
    source: Path,
    segments: list[str],
    dest: Path,
    monkeypatch: pytest.MonkeyPatch,
    times: int,
    speed: float,
    pillow: bool = False,
) -> tuple[float, float]:
    """The estimate (the largest the engine checked) and the least CPU of ``times``
    renders, in the state the rates describe (``speed``: ``cpuspeed.speed``).
    ``pillow``: Pillow's path for a JPEG's thumbnail (a profile kept would take it,
    dropped not: off to compare the two)."""
    found: list[float] = []
    monkeypatch.setattr(cost, "check", lambda seconds, limits: found.append(seconds))
    parsed = chain.parse(segments)
    output = chain.output_for(parsed, "image/jpeg")

    def run() -> None:
        VipsEngine(threads_per_job=1, pillow_jpeg=pillow).render(
            source, parsed, output, dest, LIMITS
        )

    spent = cpuspeed.least(run, times=times) / speed
    return max(found), spent


def _held(seconds: float, spent: float, case: object) -> list[object]:
    """[``case``] when its estimate is not within the bounds, else []."""
    print(f"{case}: estimated {seconds:.3f} s, took {spent:.3f}")
    held = seconds > LIMITS.max_cost or spent / 2 <= seconds < 3 * spent + SLACK
    return [] if held else [(case, seconds, spent)]


def _judged(
    source: Path,
    segments: list[str],
    named: object,
    monkeypatch: pytest.MonkeyPatch,
    speed: float,
    plain: Path | None = None,
) -> list[object]:
    """[the case] when its estimate is not within the bounds at ``speed``; with ``plain``
    (the same picture without the profile or the 16 bits), also when the share priced
    is under half the CPU the source adds. Pillow's path for a JPEG's thumbnail without
    ``plain``, as a progressive JPEG takes it; with it, as a dropped profile does not."""
    dest = source.with_name("o")
    pillow = plain is None
    seconds, spent = _run(source, segments, dest, monkeypatch, 2, speed, pillow)
    grew: list[object] = []
    if plain is not None:
        kept = [s for s in segments if s != "no_metadata"]
        base = _run(plain, kept, dest, monkeypatch, 2, speed)
        priced, added = seconds - base[0], spent - base[1]
        print(f"  priced {priced:.3f} s more, took {added:.3f} more")
        grew = [] if priced >= added / 2 - TIMER else [(named, priced, added)]
    return _held(seconds, spent, named) or grew


def _twice(judged: Callable[[float], list[object]]) -> list[object]:
    """``judged``'s failures at the machine's speed, and if any, again at its speed
    measured again (tests/processing/cpuspeed.py: a run's CPU time moves by itself)."""
    return judged(cpuspeed.speed()) and judged(cpuspeed.speed(fresh=True))


def _chains(rng: random.Random, width: int, count: int, small: bool) -> list[list[str]]:
    """``count`` chains of the usual kinds, each another: a thumbnail (Pillow's path for
    a JPEG to JPEG or WebP), one cut to a box, a resize then a sharpen; unless ``small``
    (a result the decode dominates), a blur, a flip, nothing but the format."""
    side = rng.randrange(150, 400 if small else width // 2)
    kinds = [
        [f"resize=width:{side}"],
        [f"resize=width:{side},height:{side},fit:crop"],
        [f"resize=width:{side}", f"sharpen=amount:{rng.randint(1, 8)}"],
    ]
    kinds += [] if small else [[f"blur=amount:{rng.randint(1, 5)}"], ["flip"], []]
    return rng.sample(kinds, count)


def test_a_progressive_jpeg_is_priced_by_its_scans(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Grainy progressive JPEGs of high quality (a scan of film, a noisy night shot):
    their decode was priced at a baseline JPEG's rate, 2-3 times under what it takes."""
    rng = random.Random(5330)
    failed: list[object] = []
    for case, tasks in enumerate(_chains(rng, 2000, 3, small=True)):
        width, height = rng.randrange(1600, 2200), rng.randrange(1400, 2000)
        source = tmp_path / f"s{case}.jpg"
        picture = _photo(rng, width, height, rng.uniform(70, 110))
        picture.jpegsave(str(source), Q=rng.randint(93, 98), interlace=True)
        segments = [*tasks, f"output=format:{rng.choice(['jpg', 'webp'])}"]
        named = (width, height, segments)
        failed += _twice(functools.partial(_judged, source, segments, named, monkeypatch))
    assert not failed, failed


def _write(picture: pyvips.Image, path: Path) -> None:
    """A PNG at zlib's fastest level: made in a fraction of the time, inflated as fast."""
    picture.write_to_file(f"{path}[compression=1]" if path.suffix == ".png" else str(path))


def _p3(picture: pyvips.Image, path: Path) -> None:
    _write(picture.icc_export(output_profile="p3"), path)


def _deep(picture: pyvips.Image, path: Path, profiled: bool = False) -> None:
    deep = (picture.cast("float") * 257).cast("ushort").copy(interpretation="rgb16")
    if profiled:  # these levels, read as Display P3's
        data = picture.icc_export(output_profile="p3").get("icc-profile-data")
        deep.set_type(pyvips.GValue.blob_type, "icc-profile-data", data)
    _write(deep, path)


@pytest.mark.parametrize(
    ("seed", "kind"), [(5331, "profile"), (5332, "deep"), (5510, "deep profile")]
)
def test_a_dropped_profile_and_16_bits_are_priced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, kind: str
) -> None:
    """A Display P3 picture whose profile the result drops (``no_metadata``) against the
    same picture kept; a 16-bit one against its 8 bits; a 16-bit Display P3 one dropped
    (applied through floats) against the same 16 bits without a profile: the estimate
    grows by at least half the CPU time the work adds."""
    rng = random.Random(seed)
    failed: list[object] = []
    for case, tasks in enumerate(_chains(rng, 2000, 3, small=False)):
        width, height = rng.randrange(2000, 2400), rng.randrange(1500, 1800)
        fmt = rng.choice(["png", "png", "tif"] if "deep" in kind else ["png", "jpg"])
        picture = _photo(rng, width, height, rng.uniform(0, 10))
        plain, source = tmp_path / f"p{case}.{fmt}", tmp_path / f"s{case}.{fmt}"
        segments = [*tasks, "output=format:jpg"]  # a PNG's or WebP's save: noise
        if kind == "profile":
            _p3(picture, source)
            plain = source  # the profile kept, carried by the result: not applied
            segments = ["no_metadata", *segments]
        elif kind == "deep profile":
            _deep(picture, plain)
            _deep(picture, source, profiled=True)
            segments = ["no_metadata", *segments]
        else:
            _write(picture, plain)
            _deep(picture, source)
        named = (kind, fmt, width, height, segments)
        judged = functools.partial(_judged, source, segments, named, monkeypatch, plain=plain)
        failed += _twice(judged)
    assert not failed, failed
