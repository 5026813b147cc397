"""An animation's loop count and frame delays survive every chain into a WebP or a GIF,
up to the most each format can say. A GIF's NETSCAPE count N repeats it N times (N + 1
plays; 0 forever); a WebP's 16-bit ``ANIM`` count is the plays (0 forever). A GIF
repeated 65535 times became a WebP that played forever (65536 wrapped to 0), and when
its chain made frames equal (``blackwhite``, a coarse ``pixelate``) the job failed:
``422 INVALID_IMAGE`` for a good file. Likewise a WebP frame longer than a GIF's 16 bits
of hundredths (655.35 s) wrapped in its GIF (700 s played 44.64 s, 655.36 s none), and
its odd multiples of 5 ms were rounded half to even (25 ms to 20, 35 to 40). Found by
probing animations with generated loop counts and durations (seed 5124). Counts and
delays are read from the files' own bytes, not through libvips."""

from __future__ import annotations

import io
import random
from pathlib import Path

import pytest
from PIL import Image

from stowage.processing import chain
from stowage.processing.base import Limits
from stowage.processing.vips import VipsEngine

LIMITS = Limits(10**8, 10**9, 10_000, 60, max_cost=50.0)
CHAINS = [
    ["flip", "output=format:webp"],
    ["blackwhite=threshold:100", "output=format:webp"],
    ["pixelate=amount:100", "output=format:webp"],
    ["resize=width:5", "output=format:webp"],
    ["flop"],
    ["blackwhite=threshold:100"],
]


def gif(path: Path, pick: random.Random, repeats: int | None) -> int:
    """A GIF of a few frames, some equal, repeated ``repeats`` times (None: no NETSCAPE
    block, played once); its frame count as saved (Pillow joins equal neighbours)."""
    count = pick.randint(2, 5)
    size = (pick.randint(4, 30), pick.randint(4, 30))
    colours = [tuple(pick.randrange(256) for _ in range(3)) for _ in range(count)]
    colours = [colours[0] if pick.random() < 0.3 else c for c in colours]
    frames = [Image.new("RGB", size, c) for c in colours]
    delays = [pick.choice([20, 50, 100, 300]) for _ in frames]
    extra = {} if repeats is None else {"loop": repeats}
    frames[0].save(path, save_all=True, append_images=frames[1:], duration=delays, **extra)
    return int(getattr(Image.open(path), "n_frames", 1))


def netscape(data: bytes) -> int | None:
    at = data.find(b"NETSCAPE2.0")
    return None if at < 0 else int.from_bytes(data[at + 13 : at + 15], "little")


def webp_chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    found, at = [], 12
    while at + 8 <= len(data):
        size = int.from_bytes(data[at + 4 : at + 8], "little")
        found.append((data[at : at + 4], data[at + 8 : at + 8 + size]))
        at += 8 + size + (size & 1)
    return found


@pytest.mark.parametrize("seed", range(5124, 5128))
def test_the_loop_count_is_kept_as_far_as_the_format_holds_it(tmp_path: Path, seed: int) -> None:
    pick = random.Random(seed)
    for trial in range(7):
        repeats = pick.choice([None, 0, 1, pick.randint(2, 65532), 65533, 65534, 65535, 65535])
        segments = pick.choice(CHAINS)
        if trial == 0:  # the count past WebP's, on frames the chain makes equal
            repeats, segments = 65535, ["blackwhite=threshold:100", "output=format:webp"]
        source = tmp_path / f"in{trial}.gif"
        count = gif(source, pick, repeats)
        if count < 2:  # a still: no loop count to keep
            continue
        parsed = chain.parse(segments)
        output = chain.output_for(parsed, "image/gif")
        dest = tmp_path / f"out{trial}.{output.extension}"
        VipsEngine().render(source, parsed, output, dest, LIMITS)
        data = dest.read_bytes()
        where = (seed, trial, repeats, segments)
        if output.format == "gif":
            assert netscape(data) == repeats, where
            assert getattr(Image.open(io.BytesIO(data)), "n_frames", 1) == count, where
            continue
        chunks = webp_chunks(data)
        anim = [payload for name, payload in chunks if name == b"ANIM"]
        assert len(anim) == 1, where
        plays = 1 if repeats is None else 0 if repeats == 0 else min(repeats + 1, 65535)
        assert int.from_bytes(anim[0][4:6], "little") == plays, where
        assert sum(name == b"ANMF" for name, _ in chunks) == count, where


def webp(path: Path, pick: random.Random, durations: list[int]) -> None:
    size = (pick.randint(4, 20), pick.randint(4, 20))
    frames = [
        Image.new("RGB", size, (40 * k % 256, pick.randrange(256), 9))
        for k in range(len(durations))
    ]
    frames[0].save(
        path, save_all=True, append_images=frames[1:], duration=durations, loop=0, lossless=True
    )


def gif_delays(data: bytes) -> list[int]:
    """Each frame's delay in ms from its Graphic Control Extension (hundredths x 10)."""
    found, at = [], data.find(b"\x21\xf9\x04")
    while at >= 0:
        found.append(int.from_bytes(data[at + 4 : at + 6], "little") * 10)
        at = data.find(b"\x21\xf9\x04", at + 8)
    return found


@pytest.mark.parametrize("seed", range(5124, 5128))
def test_a_gif_frame_keeps_its_delay_as_far_as_a_gif_holds_it(tmp_path: Path, seed: int) -> None:
    pick = random.Random(seed)
    for trial in range(5):
        durations = [
            pick.choice(
                [
                    pick.randint(0, 2000),
                    pick.randrange(5, 1000, 10),  # an odd multiple of 5 ms
                    655_350,
                    655_355,
                    pick.randint(655_351, 16_777_215),
                ]
            )
            for _ in range(pick.randint(2, 5))
        ]
        source = tmp_path / f"in{trial}.webp"
        webp(source, pick, durations)
        segments = pick.choice([["output=format:gif"], ["flip", "output=format:gif"]])
        parsed = chain.parse(segments)
        output = chain.output_for(parsed, "image/webp")
        dest = tmp_path / f"out{trial}.gif"
        VipsEngine().render(source, parsed, output, dest, LIMITS)
        want = [min(655_350, (d + 5) // 10 * 10) for d in durations]
        assert gif_delays(dest.read_bytes()) == want, (seed, trial, durations, segments)
