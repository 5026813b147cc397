"""A GIF result's transparent areas stay transparent when the result is read again, by
libvips and by Pillow: each frame's alpha is the alpha of the still result of the same
chain on that frame (GIF alpha is on or off: the still's alpha thresholded at 128).

libvips' GIF saver gave an opaque frame followed by a transparent one the disposal
"restore to background" and no transparent index; a chain that made new colours in the
opaque frame (blur, rotate, resize) filled the palette, and the next frame's transparent
pixels decoded as the background colour, opaque (processing/gifblocks.py)."""

from __future__ import annotations

import io
import random
from pathlib import Path

import numpy as np
import pytest
import pyvips
from PIL import Image, ImageDraw

from stowage.processing import chain, gifblocks
from stowage.processing.vips import VipsEngine
from tests.processing.test_frames import LIMITS

#: GIF sources, and a lossless WebP one (transparent WebP frames went the same way).
SEEDS = [(seed, "gif") for seed in range(5061, 5066)] + [(5069, "webp")]
CHAINS = [
    ["blur=amount:3"],
    ["rotate=deg:33"],
    ["rotate=deg:33,background:red"],
    ["resize=width:{up}"],
    ["sharpen=amount:8", "blur=amount:2"],
    ["resize=width:{up}", "sharpen=amount:5"],
    ["blur=amount:1", "rotate=deg:351"],
]


def generated(seed: int, path: Path) -> Path:
    """Frames of random size and colours, opaque and transparent mixed (at least one
    transparent frame after an opaque one), rectangles drawn on each; saved by Pillow
    with the disposal "restore to background", as the probe's sources were."""
    rnd = random.Random(seed)
    count, width, height = rnd.randint(3, 7), rnd.randint(24, 90), rnd.randint(24, 90)
    clear = [rnd.random() < 0.5 for _ in range(count)]
    clear[0], clear[1] = False, True
    frames = []
    for index in range(count):
        colour = tuple(rnd.randrange(256) for _ in range(3))
        frame = Image.new("RGBA", (width, height), (*colour, 0 if clear[index] else 255))
        draw = ImageDraw.Draw(frame)
        for _ in range(4):
            x, y = rnd.randrange(width), rnd.randrange(height)
            box = [
                x,
                y,
                x + rnd.randrange(2, width // 2 + 3),
                y + rnd.randrange(2, height // 2 + 3),
            ]
            draw.rectangle(box, fill=(*(rnd.randrange(256) for _ in range(3)), 255))
        frames.append(frame)
    delays = [rnd.choice([20, 50, 100]) for _ in frames]
    if path.suffix == ".webp":
        frames[0].save(
            path, "WEBP", save_all=True, append_images=frames[1:], duration=delays, lossless=True
        )
        return path
    frames[0].save(
        path, "GIF", save_all=True, append_images=frames[1:], duration=delays, loop=0,
        disposal=2, optimize=False,
    )  # fmt: skip
    return path


def rendered(source: Path, segments: list[str], dest: Path, mimetype: str) -> Path:
    parsed = chain.parse(segments)
    output = chain.output_for(parsed, mimetype)
    VipsEngine(threads_per_job=1).render(source, parsed, output, dest, LIMITS)
    return dest


def alphas_vips(path: Path) -> list[np.ndarray]:
    options = {"n": -1} if path.suffix in (".gif", ".webp") else {}
    strip = pyvips.Image.new_from_file(str(path), **options)
    height = strip.get("page-height") if strip.get_typeof("page-height") else strip.height
    if strip.bands < 4:
        strip = strip.bandjoin(255)
    shape = (strip.height, strip.width, strip.bands)
    array = np.ndarray(buffer=strip.write_to_memory(), dtype=np.uint8, shape=shape)
    return [array[i : i + height, :, 3] for i in range(0, strip.height, height)]


def alphas_pillow(path: Path) -> list[np.ndarray]:
    found = []
    with Image.open(io.BytesIO(path.read_bytes())) as image:
        for index in range(getattr(image, "n_frames", 1)):
            image.seek(index)
            found.append(np.asarray(image.convert("RGBA"))[..., 3].copy())
    return found


def stills(source: Path, folder: Path) -> list[Path]:
    """Each frame of the source as libvips decodes it, as a PNG."""
    strip = pyvips.Image.new_from_file(str(source), n=-1)
    height = strip.get("page-height")
    paths = []
    for index in range(strip.height // height):
        path = folder / f"still-{index}.png"
        strip.extract_area(0, index * height, strip.width, height).pngsave(str(path))
        paths.append(path)
    return paths


@pytest.mark.parametrize(("seed", "kind"), SEEDS)
def test_every_frame_keeps_its_alpha_when_read_again(tmp_path: Path, seed: int, kind: str) -> None:
    source = generated(seed, tmp_path / f"source.{kind}")
    width = Image.open(source).size[0]
    frames = stills(source, tmp_path)
    for template in CHAINS:
        segments = [s.format(up=width * 2) for s in template]
        result = rendered(source, [*segments, "output=format:gif"], tmp_path / "out.gif", "")
        by_vips, by_pillow = alphas_vips(result), alphas_pillow(result)
        assert len(by_vips) == len(by_pillow) == len(frames), segments
        for index, still in enumerate(frames):
            alone = rendered(still, [*segments, "output=format:png"], tmp_path / "o.png", "")
            want = alphas_vips(alone)[0] >= 128
            for reader, got in (("libvips", by_vips[index]), ("Pillow", by_pillow[index])):
                assert got.shape == want.shape, (segments, index, reader)
                wrong = float(((got >= 128) != want).mean())
                # Palette quantisation and dithering move a few edge pixels at most; an
                # opaque background where the still is clear is most of the frame.
                assert wrong < 0.02, (seed, segments, index, reader, wrong)


@pytest.mark.parametrize("seed", range(5066, 5069))
def test_clearing_leaves_every_pixel_as_it_was(tmp_path: Path, seed: int) -> None:
    """The transparent index given is one no pixel of the frame uses: the frame's own
    pixels decode the same; tables of every size (2 to 256 colours) are handled."""
    rnd = random.Random(seed)
    for colours in (2, 3, 4, 16, 64, 129, 255):
        width, height = rnd.randint(8, 40), rnd.randint(8, 40)
        opaque = Image.new("RGB", (width, height))
        opaque.putdata([(rnd.randrange(colours) * 7 % 256, 0, 0) for _ in range(width * height)])
        opaque = opaque.quantize(colors=colours)
        path = tmp_path / f"{colours}.gif"
        second = opaque.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
        opaque.save(path, "GIF", save_all=True, append_images=[second], disposal=2)
        data = path.read_bytes()
        blocks = gifblocks.read(data)
        assert blocks is not None
        first = blocks.frames[0].control
        assert first is not None
        forced = bytearray(data)
        forced[first] = (forced[first] & ~1) | (2 << 2)  # restore to background, opaque
        cleared = gifblocks.clear_disposals(bytes(forced))
        assert cleared != bytes(forced), colours
        before, after = first_frames(bytes(forced)), first_frames(cleared)
        for one, other in zip(before, after, strict=True):
            assert one.shape == other.shape and (one == other).all(), colours


def first_frames(data: bytes) -> list[np.ndarray]:
    """The first frame as Pillow and as libvips decode it."""
    pillow = np.asarray(Image.open(io.BytesIO(data)).convert("RGBA"))
    vips = pyvips.Image.new_from_buffer(data, "", page=0)
    vips = vips if vips.bands == 4 else vips.bandjoin(255)
    shape = (vips.height, vips.width, 4)
    return [pillow, np.ndarray(buffer=vips.write_to_memory(), dtype=np.uint8, shape=shape)]
