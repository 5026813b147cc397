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
    return max(width, min(limit, round(width * factor))), max(
        height, min(limit, round(height * factor))
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
    median = image.rank(size, size, size * size // 2)
    return ((image + median) / 2).cast(image.format) if level == "low" else median


def upscale(image: pyvips.Image, task: Task) -> pyvips.Image:
    colour, alpha = split_alpha(srgb(image))
    colour = denoised(colour, str(task.get("noise", "none")))
    if task.get("upscale", True) is not False:
        width, height = upscaled_size(image.width, image.height, OUTPUT_LIMIT.get())
        hscale, vscale = width / image.width, height / image.height
        colour = colour.resize(hscale, vscale=vscale, kernel="lanczos3")
        if alpha is not None:
            alpha = alpha.resize(hscale, vscale=vscale, kernel="lanczos3")
    # a 3x3 sharpen (identity plus a share of the Laplacian): libvips' unsharp mask
    # works in LabS and took 5 of 6 seconds of a 12-megapixel upscale
    kernel = ARTWORK if task.get("style", "photo") == "artwork" else PHOTO
    return _join(colour.conv(kernel, precision="integer"), alpha)


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


def _stretch(colour: pyvips.Image, preset: Preset) -> pyvips.Image:
    """Maps the ``low``/``high`` percentiles, measured on a thumbnail, to 0 and 255 (one
    range for all channels, so that hues stay). ``per_channel`` first balances the
    channels' means to their grey (the grey-world white balance)."""
    sample = ops.scaled(colour, STATS_SIDE, STATS_SIDE).copy_memory()
    if preset.per_channel and sample.bands >= 3:
        means = [max(1.0, sample[b].avg()) for b in range(sample.bands)]
        gains = [sum(means) / len(means) / m for m in means]
        sample = (sample * gains).minpair(255).cast("uchar")
        colour = (colour * gains).minpair(255)
    low = min(sample[b].percent(preset.low) for b in range(sample.bands))
    # libvips' percent() overshoots to 256 near 100: the top is measured from the other end
    high = max(255 - sample[b].invert().percent(100 - preset.high) for b in range(sample.bands))
    scale = 255 / max(1, high - low)
    return colour.linear(scale, -low * scale).maxpair(0).minpair(255)


def enhance(image: pyvips.Image, task: Task) -> pyvips.Image:
    preset = PRESETS[str(task.get("preset", "auto"))]
    image = srgb(image)
    colour, alpha = split_alpha(image)
    colour = denoised(colour, preset.noise)
    colour = _stretch(colour, preset)
    if preset.gamma != 1.0:
        colour = (colour / 255) ** preset.gamma * 255
    if preset.smooth > 0:
        colour = colour * (1 - preset.smooth) + colour.gaussblur(2) * preset.smooth
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
        doc="contrast stretch, gamma, white balance and saturation by preset",
    ),
)
