"""upscale and enhance, which the hosted service runs as machine-learned models, made with
classical methods: Lanczos enlargement, median denoising and a 3x3 sharpen for
upscale; percentile contrast stretch, gamma, white balance and saturation per preset for
enhance. The geometry is the hosted service's: upscale doubles each side (held to the
output-dimension limit), enhance keeps the size.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyvips

from stowage.processing import ops, params
from stowage.processing.base import Task
from stowage.processing.filters import blurred
from stowage.processing.ops import OUTPUT_LIMIT, join_alpha, split_alpha, srgb
from stowage.processing.table import Param, TaskSpec

STATS_SIDE = 256
# sharpening kernels (sum 1): photo mild (a quarter of the Laplacian), artwork stronger
PHOTO = pyvips.Image.new_from_array([[0, -1, 0], [-1, 8, -1], [0, -1, 0]], scale=4)
ARTWORK = pyvips.Image.new_from_array(
    [[0, -1, 0], [-1, 6, -1], [0, -1, 0]], scale=2
)  # enhance measures the image on a thumbnail this big


def upscaled_size(width: int, height: int, limit: int) -> tuple[int, int]:
    """Twice each side, or as near as the limit allows with the aspect ratio kept; never
    smaller than the image."""
    factor = max(1.0, min(2.0, limit / width, limit / height))
    return max(width, min(limit, params.half_up(width * factor))), max(
        height, min(limit, params.half_up(height * factor))
    )


def upscale_size(task: Task, width: int, height: int) -> tuple[int, int]:
    if task.get("upscale", True) is False:
        return width, height
    return upscaled_size(width, height, OUTPUT_LIMIT.get())


def _join(image: pyvips.Image, alpha: pyvips.Image | None) -> pyvips.Image:
    return join_alpha(image.cast("uchar"), None if alpha is None else alpha.cast("uchar"))


def denoised(image: pyvips.Image, level: str) -> pyvips.Image:
    """A median filter (edges kept, speckle gone): 3x3 half-strength for ``low``, 3x3
    for ``medium``, 5x5 for ``high``."""
    if level == "none" or min(image.width, image.height) < 5:
        return image
    size = 5 if level == "high" else 3

    def median(colours: pyvips.Image) -> pyvips.Image:
        middle = colours.rank(size, size, size * size // 2)
        return (colours + middle) / 2 if level == "low" else middle

    return ops.premultiplied(image, median)  # back in the image's format


def upscale(image: pyvips.Image, task: Task) -> pyvips.Image:
    image = denoised(srgb(image), str(task.get("noise", "none")))
    width, height = upscale_size(task, image.width, image.height)
    # a 3x3 sharpen (identity plus a share of the Laplacian): libvips' unsharp mask
    # works in LabS and took 5 of 6 seconds of a 12-megapixel upscale
    kernel = ARTWORK if task.get("style", "photo") == "artwork" else PHOTO

    def made(weighted: pyvips.Image) -> pyvips.Image:
        if (width, height) != (weighted.width, weighted.height):
            weighted = weighted.resize(
                width / weighted.width, vscale=height / weighted.height, kernel="lanczos3"
            )
        colour, alpha = split_alpha(weighted)  # the alpha's edges stay as they are
        return _join(colour.conv(kernel, precision="integer"), alpha)

    # Enlarged and sharpened weighted by alpha: the sharpen on straight colours drew the
    # colour under transparent pixels into the picture's edge (upscale=upscale:false on a
    # disc over hidden red, tests/processing/test_hidden_colours).
    return ops.premultiplied(image, made)


@dataclass(frozen=True)
class Preset:
    low: float = 0.5  # percent of pixels that become black ...
    high: float = 99.5  # ... and white after the stretch
    saturation: float = 1.0  # chroma factor
    gamma: float = 1.0  # below 1 lifts the shadows
    per_channel: bool = False  # balance the channels first: removes a color cast
    smooth: float = 0.0  # share of a soft blur mixed in (skin)
    noise: str = "none"


PRESETS = {
    "auto": Preset(saturation=1.1),
    "vivid": Preset(low=1, high=99, saturation=1.4),
    "beautify": Preset(saturation=1.05, smooth=0.35),
    "beautify_plus": Preset(low=1, high=99, saturation=1.15, smooth=0.55),
    "fix_dark": Preset(saturation=1.1, gamma=0.6),
    "fix_noise": Preset(noise="medium"),
    "fix_tint": Preset(per_channel=True),
    "outdoor": Preset(low=1, saturation=1.25),
    "fireworks": Preset(low=5, high=99.8, saturation=1.3),
}


#: The most the stretch multiplies contrast by. Unbounded, a flat pale colour's channel
#: spread was its range: (162,185,146) became (78,255,0).
MAX_GAIN = 2.0


def _stretch(colour: pyvips.Image, alpha: pyvips.Image | None, preset: Preset) -> pyvips.Image:
    """Maps the ``low``/``high`` percentiles, measured on a thumbnail, to 0 and 255 (one
    range for all channels, so that hues stay). When every channel spans under 255 /
    ``MAX_GAIN`` levels (a flat or low-contrast image, of any colour: the channels'
    spread is colour, not contrast), each channel's distance from its mean is multiplied
    by ``MAX_GAIN`` instead, the mean colour kept where the channel's range fits in 0-255
    so (a flat colour stays itself; at a range of 255 / ``MAX_GAIN`` both are the same
    map for a grey image).
    ``per_channel`` first balances the channels' means to their grey (the grey-world
    white balance). Only pixels that show are measured: transparent ones hold colours no
    one sees."""
    sample, seen = _sample(colour, alpha)
    if preset.per_channel and sample.bands >= 3:
        means = [max(1.0, seen.mean(sample[b])) for b in range(sample.bands)]
        gains = [sum(means) / len(means) / m for m in means]
        sample = (sample * gains).minpair(255).cast("uchar")
        colour = (colour * gains).minpair(255)
    lows = [seen.percent(sample[b], preset.low) for b in range(sample.bands)]
    # the top is measured from the other end (libvips' percent() overshoots near 100)
    highs = [255 - seen.percent(sample[b].invert(), 100 - preset.high) for b in range(sample.bands)]
    if max(h - lo for lo, h in zip(lows, highs, strict=True)) * MAX_GAIN < 255:
        # every channel narrow: each one's spread about its mean times MAX_GAIN, within 0-255
        offsets = []
        for b, (lo, h) in enumerate(zip(lows, highs, strict=True)):
            kept = seen.mean(sample[b]) * (1 - MAX_GAIN)  # the mean colour stays
            offsets.append(min(max(kept, -lo * MAX_GAIN), 255 - h * MAX_GAIN))
        return colour.linear(MAX_GAIN, offsets).maxpair(0).minpair(255)
    low, high = min(lows), max(highs)
    scale = 255 / max(1, high - low)
    return colour.linear(scale, -low * scale).maxpair(0).minpair(255)


def _sample(colour: pyvips.Image, alpha: pyvips.Image | None) -> tuple[pyvips.Image, Seen]:
    small = ops.scaled(join_alpha(colour, alpha), STATS_SIDE, STATS_SIDE).copy_memory()
    small_colour, small_alpha = split_alpha(small)
    return small_colour, Seen(None if small_alpha is None else small_alpha > 0)


@dataclass(frozen=True)
class Seen:
    """Statistics of a band over the pixels that show (``mask`` 255), or all of them."""

    mask: pyvips.Image | None

    def mean(self, band: pyvips.Image) -> float:
        if self.mask is None:
            return float(band.avg())
        shown = self.mask.avg() / 255
        return float((band * (self.mask / 255)).avg() / shown) if shown else 0.0

    def percent(self, band: pyvips.Image, percent: float) -> int:
        """libvips' ``percent()``: one more than the first value at or below which
        ``percent`` of the pixels lie."""
        if self.mask is None:
            return int(band.percent(percent))
        counts = self.mask.ifthenelse(band, 0).hist_find().tolist()[0]
        counts[0] -= round((1 - self.mask.avg() / 255) * band.width * band.height)
        wanted, running = sum(counts) * percent / 100, 0
        for value, count in enumerate(counts):
            running += count
            if running >= wanted:
                return value + 1
        return len(counts)


def enhance(image: pyvips.Image, task: Task) -> pyvips.Image:
    preset = PRESETS[str(task.get("preset", "auto"))]
    image = denoised(srgb(image), preset.noise)
    colour, alpha = split_alpha(image)
    colour = _stretch(colour, alpha, preset)
    if preset.gamma != 1.0:
        colour = (colour / 255) ** preset.gamma * 255
    if preset.smooth > 0:
        soft = split_alpha(blurred(join_alpha(colour, alpha), 2))[0]
        colour = colour * (1 - preset.smooth) + soft * preset.smooth
    if preset.saturation != 1.0 and colour.bands >= 3:
        lch = colour.copy(interpretation="srgb").colourspace("lch")
        colour = (lch * [1, preset.saturation, 1]).colourspace("srgb")
    return _join(colour.cast("uchar").copy(interpretation=image.interpretation), alpha)


TASKS: tuple[TaskSpec, ...] = (
    TaskSpec(
        "upscale",
        (
            Param("upscale", params.boolean, short=("u",), default=True),
            Param(
                "noise",
                params.choice("none", "low", "medium", "high"),
                short=("n",),
                default="none",
            ),
            Param("style", params.choice("artwork", "photo"), short=("s",), default="photo"),
        ),
        op=upscale,
        size=upscale_size,
        doc="twice the width and height (Lanczos, then an unsharp mask; noise: a median)",
    ),
    TaskSpec(
        "enhance",
        (Param("preset", params.choice(*PRESETS), default="auto"),),
        op=enhance,
        random_access=True,  # the image is measured first, then changed
        measures=True,
        doc="contrast stretch, gamma, white balance and saturation by preset",
    ),
)
