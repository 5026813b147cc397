"""An animated GIF flipped, cut, turned by right angles or framed and saved as GIF again
keeps each frame's colours (a frame adds one), and its save is priced as that
(``saverates.gif_frames_rate``; by content: tests/processing/test_cost_gif_content.py).

Before: such a save was priced as a full-colour photo's frames or noise's (0.8-1.5 s a
megapixel) for 0.46-0.57 s of work (in the rates' state, cpuspeed.py), and a 60-frame
480x360 GIF flipped was refused (estimated 9 s, at most 8) for 2.7 s of work. A wide
frame (``border``) was priced as the picture: estimates 3-6 times the CPU time."""

from __future__ import annotations

import random
import time
from pathlib import Path

import numpy as np
import PIL.Image
import pytest

from stowage.config import Settings
from stowage.processing import chain, cost, saverates
from stowage.processing.base import Limits
from stowage.processing.vips import VipsEngine
from tests.processing import cpuspeed
from tests.processing.test_cost import LIMITS
from tests.processing.test_faces import ASTRONAUT

SLACK = 0.3  # seconds: a job's fixed costs
BOUND = 2.0  # the estimate within this factor of the CPU time, both ways
SEED = 5470


def animation(path: Path, count: int, size: tuple[int, int], rng: random.Random) -> Path:
    """Frames of a photo panned, or of noise rolled: one palette of 256 colours for all
    (Pillow writes them without quantising again, in a fraction of libvips' time)."""
    width, height = size
    if rng.random() < 0.5:
        photo = PIL.Image.open(ASTRONAUT).convert("RGB").resize((640, 640))
        step = (640 - max(width, height)) // count
        shown = [
            photo.crop((step * k, step * k, step * k + width, step * k + height))
            for k in range(count)
        ]
    else:
        base = np.random.default_rng(rng.randrange(2**32)).integers(0, 256, (height, width, 3))
        rolled = [np.roll(base, 5 * k, axis=1).astype(np.uint8) for k in range(count)]
        shown = [PIL.Image.fromarray(frame) for frame in rolled]
    palette = shown[0].quantize(256)
    frames = [frame.quantize(palette=palette, dither=PIL.Image.Dither.NONE) for frame in shown]
    frames[0].save(path, save_all=True, append_images=frames[1:], duration=80, loop=0)
    return path


def moves(rng: random.Random) -> list[str]:
    choices = [
        "flip",
        "flop",
        f"rotate=deg:{rng.choice([90, 180, 270])}",
        f"crop=dim:[{rng.randint(0, 40)},{rng.randint(0, 40)},300,240]",
        f"border=width:{rng.randint(5, 200)},color:{rng.randrange(16**6):06x}",
    ]
    return rng.sample(choices, rng.randint(1, 2))


def estimated_and_spent(
    source: Path,
    segments: list[str],
    dest: Path,
    limits: Limits,
    monkeypatch: pytest.MonkeyPatch,
    mimetype: str = "image/gif",
) -> tuple[float, float]:
    """The engine's own estimate (the last it holds to the limits), and the render's CPU
    time in the state the rates describe, for an encoder's work (cpuspeed.py: the save is
    most of these chains' time); measured again, the speed with it, when the two are not
    within ``BOUND`` of each other (cpuspeed.py: a run's CPU time moves by itself)."""
    checked: list[float] = []
    check = cost.check
    monkeypatch.setattr(cost, "check", lambda s, lim: (checked.append(s), check(s, lim)))
    parsed = chain.parse(segments)
    output = chain.output_for(parsed, mimetype)

    def spent_at(fresh: bool) -> float:
        started = time.process_time()
        VipsEngine(threads_per_job=1).render(source, parsed, output, dest, limits)
        return (time.process_time() - started) / cpuspeed.speed("encode", fresh)

    def fits(spent: float) -> bool:
        return checked[-1] < BOUND * spent + SLACK and spent < BOUND * checked[-1] + SLACK

    spent = cpuspeed.measured_again(spent_at, fits)
    return checked[-1], spent


def test_a_gif_whose_frames_only_move_is_priced_near_its_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(SEED)
    for case in range(4):
        size = rng.randint(360, 480), rng.randint(270, 360)
        source = animation(tmp_path / f"{case}.gif", rng.randint(20, 30), size, rng)
        segments = moves(rng)
        out = tmp_path / f"{case}-out.gif"
        seconds, spent = estimated_and_spent(source, segments, out, LIMITS, monkeypatch)
        print(f"{source.name} {size} {segments}: estimated {seconds:.2f}, took {spent:.2f}")
        assert seconds < BOUND * spent + SLACK, (segments, seconds, spent)
        assert spent < BOUND * seconds + SLACK, (segments, seconds, spent)


def test_a_sixty_frame_gif_flipped_is_admitted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under the default limits, whatever its frames show."""
    limits = Limits(10**9, 10**10, 10_000, 120, max_cost=Settings().processing_max_job_cost)
    rng = random.Random(SEED + 1)
    source = animation(tmp_path / "sixty.gif", 60, (480, 360), rng)
    seconds, _ = estimated_and_spent(source, ["flip"], tmp_path / "out.gif", limits, monkeypatch)
    assert seconds < limits.max_cost


def test_only_moves_maps_and_frames_of_a_gif_keep_its_palettes() -> None:
    """A resample, a free angle, a turn by the EXIF tag make colours (priced as made in
    an animation's frames, as before in a still's); a PNG has no palette a frame (its
    save is priced as before); a frame is priced flat; the rate grows with how densely
    the source's frames are coded."""
    kept = chain.parse(["flip", "rotate=deg:270", "crop=dim:[0,0,9,9]", "sepia"]).tasks
    densest = saverates.KEPT[0] + saverates.KEPT[1]
    assert saverates.gif_frames_rate("gif", "gifload", kept, (9, 9), 1.4, 1) == densest
    assert saverates.gif_frames_rate("gif", "gifload", (), (9, 9), None, 5) == densest
    flat = saverates.gif_frames_rate("gif", "gifload", kept, (9, 9), 0.02, 5)
    assert flat is not None and flat < densest / 5
    for made in ("resize=width:99", "rotate=deg:45", "rotate=deg:exif", "blur", "crop_faces=w:9"):
        tasks = [*kept, *chain.parse([made]).tasks]
        assert saverates.gif_frames_rate("gif", "gifload", tasks, (9, 9), 1.4, 1) is None
        made_rate = saverates.gif_frames_rate("gif", "gifload", tasks, (9, 9), 0.8, 2)
        made_most = saverates.MADE[0] + saverates.MADE[1]
        if made == "rotate=deg:45":  # its corners are the background's one colour
            assert made_rate is not None and saverates.FLAT["gif"] < made_rate < made_most
        else:
            assert made_rate == made_most
    assert saverates.gif_frames_rate("gif", "pngload", kept, (9, 9), 1.4, 5) is None
    assert saverates.gif_frames_rate("webp", "gifload", kept, (9, 9), 1.4, 5) is None
    framed = chain.parse(["border=width:10", "flip"]).tasks  # 100 of 900 pixels inside
    rate = saverates.gif_frames_rate("gif", "gifload", framed, (10, 10), 0.8, 5)
    assert rate == pytest.approx(densest / 9 + saverates.FLAT["gif"] * 8 / 9)
