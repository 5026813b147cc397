"""A GIF frame without a Graphic Control Extension has no delay (0, by the GIF
specification): its result, GIF or WebP, has the delays of the same GIF whose frame has
an explicit delay of 0 (libvips' loader reports 100 ms for it; docs/decisions.md)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import pyvips
from PIL import Image

from stowage.processing import gifblocks
from tests.processing.test_gif_alpha import rendered

CHAINS = [["flip"], ["resize=width:10"], ["sharpen=amount:4", "flop"], []]


def generated(seed: int, folder: Path) -> tuple[Path, Path, list[int | None]]:
    """An opaque GIF of random frames and delays, some frames' Graphic Control Extension
    taken out (``without``) or given a delay of 0 (``explicit``); the delays by frame,
    None where there is none."""
    rnd = random.Random(seed)
    count, width, height = rnd.randint(3, 8), rnd.randint(8, 60), rnd.randint(8, 60)
    frames = [Image.new("RGB", (width, height), tuple(rnd.randrange(256) for _ in range(3)))]
    while len(frames) < count:  # neighbours equal would be joined by Pillow
        colour = tuple(rnd.randrange(256) for _ in range(3))
        frames.append(Image.new("RGB", (width, height), colour))
    delays = [rnd.choice([10, 20, 50, 100, 230, 1000]) for _ in frames]
    source = folder / "source.gif"
    frames[0].save(
        source, "GIF", save_all=True, append_images=frames[1:], duration=delays, loop=0,
        disposal=1, optimize=False,
    )  # fmt: skip
    data = source.read_bytes()
    blocks = gifblocks.read(data)
    assert blocks is not None
    controls = [f.control for f in blocks.frames]
    assert None not in controls
    missing = {i for i in range(count) if rnd.random() < 0.4} or {rnd.randrange(count)}
    explicit, without = bytearray(data), bytearray(data)
    for index in sorted(missing, reverse=True):  # from the end: earlier offsets hold
        control = controls[index]
        assert control is not None
        explicit[control : control + 3] = bytes(3)  # no disposal, no transparency, 0 ms
        del without[control - 3 : control + 5]  # 21 F9 04, 4 bytes, the terminator
    (folder / "explicit.gif").write_bytes(explicit)
    (folder / "without.gif").write_bytes(without)
    expected = [None if i in missing else d for i, d in enumerate(delays)]
    return folder / "explicit.gif", folder / "without.gif", expected


def delays_of(path: Path) -> list[int]:
    """A GIF's delays from its blocks (libvips reads 100 for a frame with none), a WebP's
    as libvips reads them."""
    if path.suffix == ".gif":
        found = gifblocks.delays(path)
        assert found is not None
        return [d or 0 for d in found]
    image = pyvips.Image.new_from_file(str(path), n=-1)
    return [int(d) for d in image.get("delay")]


@pytest.mark.parametrize("seed", range(5061, 5066))
def test_a_frame_without_control_extension_keeps_no_delay(tmp_path: Path, seed: int) -> None:
    explicit, without, expected = generated(seed, tmp_path)
    assert gifblocks.delays(without) == expected
    for segments in CHAINS:
        for save in ("output=format:gif", "output=format:webp"):
            suffix = save.rsplit(":", 1)[1]
            got = rendered(without, [*segments, save], tmp_path / f"w.{suffix}", "image/gif")
            want = rendered(explicit, [*segments, save], tmp_path / f"e.{suffix}", "image/gif")
            assert delays_of(got) == delays_of(want), (seed, segments, save, expected)
            if suffix == "gif":  # a GIF result keeps 0 where there was none
                assert delays_of(got) == [d or 0 for d in expected], (seed, segments)
