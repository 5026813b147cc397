"""Pixel helpers every operations module shares: 8-bit sRGB, alpha, flattening, colors
as band values, and shapes as alpha masks. The operations themselves live in the theme
modules (``geometry``, ``colour``, ``filters``, ``shapes``...), each beside its tasks'
declarations; ``catalogue`` gathers them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any

import pyvips

from stowage.processing import profiles
from stowage.processing.base import Task
from stowage.processing.holding import HoldBudget
from stowage.processing.params import rgba

#: The largest side a result may have; the engine sets it from ``Limits`` per job
#: (``with engine_limits(n, pixels):``). The default is the setting's default.
OUTPUT_LIMIT: ContextVar[int] = ContextVar("stowage_output_limit", default=10_000)


#: Pixels a job may still hold in memory (``held``): the engine sets it per job from
#: ``Limits.max_total_pixels`` (one budget, which each frame's holds draw from). The cost
#: estimate asks a budget of its own the same questions (``holding.plan``).
HOLD_BUDGET: ContextVar[HoldBudget | None] = ContextVar("stowage_hold_budget", default=None)
#: The job's source as its loader decoded it whole for random access (``frames.decoded``):
#: already in memory, so ``held`` copies nothing (a copy held a 12-megapixel JPEG twice).
DECODED: ContextVar[pyvips.Image | None] = ContextVar("stowage_decoded", default=None)


@contextlib.contextmanager
def engine_limits(side: int, hold_pixels: int = 0) -> Iterator[None]:
    tokens = OUTPUT_LIMIT.set(side), HOLD_BUDGET.set(HoldBudget(hold_pixels, side))
    decoded = DECODED.set(None)
    try:
        yield
    finally:
        OUTPUT_LIMIT.reset(tokens[0])
        HOLD_BUDGET.reset(tokens[1])
        DECODED.reset(decoded)


def held(image: pyvips.Image) -> pyvips.Image:
    """``image`` computed once, into memory, when within the output limit (beyond it,
    left lazy: the engine refuses it before computing anything). For a rotation by other
    than a right angle: what comes after it (a resize above all) asked libvips for it
    again and again, recomputing every step before it (an upscale rotated, then shrunk:
    40 s of CPU; sepia then a 30-degree turn estimated at 13 s for 0.15 s of work). Held,
    a rotation costs its pixels once. The job's holds together stay within its total
    pixel limit (an animation's frames each hold theirs); beyond, left lazy, which the
    cost estimate prices (``holding``). The source its loader decoded whole is held
    already: its pixels are taken from the budget all the same (they are in memory, and
    the estimate's plan takes them), never copied."""
    budget = HOLD_BUDGET.get()
    if budget is None or not budget.take(image.width, image.height):
        return image
    return in_memory(image)


def in_memory(image: pyvips.Image) -> pyvips.Image:
    """``image`` computed into memory, for a task that reads it more than once (a face
    finder, then the drawing): the source its loader decoded whole is that already (a
    copy held a 24-megapixel JPEG twice, 69 MB more)."""
    return image if image is DECODED.get() else image.copy_memory()


def scaled(image: pyvips.Image, width: int, height: int, size: str = "both") -> pyvips.Image:
    """``image`` scaled to ``width`` x ``height`` (libvips' ``size`` mode), never turned by
    its EXIF orientation: libvips' ``thumbnail_image`` turns an image upright by default,
    and the service keeps the pixels as stored (``rotate=deg:exif`` turns them). A
    ``smart_crop`` after a ``flip`` turned a photo tagged orientation 6 and squeezed it
    into the untagged size. Every scaling goes through here (``test_structure``). 16
    bits are made 8 first, rounded (``eight_bits``): libvips' scaling shifts them."""
    return eight_bits(image).thumbnail_image(width, height=height, size=size, no_rotate=True)


#: 16-bit spaces and their 8-bit ones (the levels the same, the samples scaled).
_EIGHT_BITS = {"rgb16": "srgb", "grey16": "b-w"}


def srgb(image: pyvips.Image) -> pyvips.Image:
    """Every task works on 8-bit sRGB (or grey), with or without alpha: a 16-bit grey
    source is 8-bit grey, as libvips' thumbnail (a first ``resize``) makes it, whatever
    the chain (a flip made it sRGB, a resize kept it grey). 16 bits become 8 rounded,
    ``round(v / 257)``: libvips' own conversion shifts (``v >> 8``), a truncation,
    0.4 levels low on average in the darks and 0.4 high in the lights."""
    image = eight_bits(image)
    if image.interpretation == "grey16":
        image = image.colourspace("b-w")
    elif image.interpretation not in ("srgb", "b-w"):
        image = image.colourspace("srgb")
    if image.format != "uchar":
        image = image.cast("uchar")
    return image


def eight_bits(image: pyvips.Image) -> pyvips.Image:
    """A 16-bit sRGB or grey ``image`` as 8 bits, ``round(v / 257)``; any other as it is."""
    if image.format != "ushort" or image.interpretation not in _EIGHT_BITS:
        return image
    eight = _EIGHT_BITS[image.interpretation]
    return image.linear(1 / 257, 0.5).cast("uchar").copy(interpretation=eight)


def flatten(image: pyvips.Image, colour: str) -> pyvips.Image:
    """``image`` on an opaque ``colour`` (its alpha ignored): no alpha left."""
    if not image.hasalpha():
        return image
    image = drawable(image, colour)
    return image.flatten(background=bands(image, colour)[: image.bands - 1]).cast("uchar")


def over(image: pyvips.Image, colour: str) -> pyvips.Image:
    """``image`` over a background ``colour``: an opaque one flattens (no alpha left),
    ``transparent`` leaves the image as it is, a partly transparent one is composited
    under it and the alpha kept (``circle=background:0000FF80`` lost its alpha: the
    colour's was ignored). A grey image under a colour that is not grey becomes sRGB."""
    if not image.hasalpha():
        return image
    alpha = rgba(colour)[3]
    if alpha == 255:
        return flatten(image, colour)
    if alpha == 0:
        return image
    image = drawable(image, colour)
    *ink, weight = bands(image, colour)
    return _over_ink(image, ink, weight / 255)


def outside(image: pyvips.Image, cover: pyvips.Image, colour: str) -> pyvips.Image:
    """``colour`` drawn under ``image`` (with alpha) only where ``cover`` (0-255: how much
    of a pixel the picture reaches) does not: the corners a turn opens. The picture's
    own transparent pixels stay transparent."""
    if rgba(colour)[3] == 0:
        return image
    image = drawable(image, colour)
    *ink, weight = bands(image, colour)
    return _over_ink(image, ink, (255 - cover) * (weight / 255 / 255))


def _over_ink(image: pyvips.Image, ink: list[float], share: Any) -> pyvips.Image:
    """``image`` composited over ``ink`` of opacity ``share`` (0-1, a number or an image)."""
    front, shown = split_alpha(image)
    assert shown is not None
    front_share = shown / 255
    back_share = (1 - front_share) * share
    total = front_share + back_share  # 0 only where neither is there (libvips: x/0 is 0)
    mixed = (front * front_share + back_share * ink) / total
    return (
        mixed.bandjoin(total * 255)
        .linear(1, 0.5)
        .cast("uchar")
        .copy(interpretation=image.interpretation)
    )


def drawable(image: pyvips.Image, *colours: str) -> pyvips.Image:
    """``image`` ready to have ``colours`` drawn on it: a grey image becomes sRGB when one
    of them is not grey (red drawn on a grey JPEG came out grey 54), and gains an alpha
    channel when one is partly transparent. A grey colour on a grey image stays grey."""
    tones = [rgba(colour) for colour in colours]
    if image.bands < 3 and any(not r == g == b for r, g, b, _ in tones):
        grey, alpha = split_alpha(image)
        image = join_alpha(grey.bandjoin([grey, grey]), alpha).copy(interpretation="srgb")
    if any(a < 255 for *_, a in tones):
        image = with_alpha(image)
    return image


def with_alpha(image: pyvips.Image) -> pyvips.Image:
    return image if image.hasalpha() else image.bandjoin(255)


def premultiplied(image: pyvips.Image, op: Callable[[pyvips.Image], pyvips.Image]) -> pyvips.Image:
    """``op`` (a blur, a resample, block averages: anything that mixes neighbours) on
    ``image`` with each colour weighted by its alpha. On straight alpha it mixes in the
    colour of transparent pixels, which no one sees: a blur of a blue disc on
    transparent red came out edged with red (``tests/processing/test_hidden_colours``)."""
    if not image.hasalpha():
        return op(image)
    # Back to the image's format (rounded) before ``op``: libvips' filters run on 8-bit
    # bands many times faster than on floats or 16 bits (a blur of sigma 20: 0.86 s
    # against 8.5 s on 9 megapixels). The price is 8-bit weighted colours: a colour shown
    # at alpha a comes back within 255 / a / 2 levels, half a level once weighted.
    weighted = image.premultiply().linear(1, 0.5).cast(image.format)
    return op(weighted).unpremultiply().linear(1, 0.5).cast(image.format)


def mixed(weight: pyvips.Image, front: pyvips.Image, back: pyvips.Image) -> pyvips.Image:
    """``front`` over ``back`` by ``weight`` (0-255 a pixel), with each colour weighted
    by its alpha: mixed as straight colours, a pixel between a transparent one and an
    opaque one took the colour hidden under alpha 0 (``partial_blur``'s feathered edge
    on a PNG with red under its transparent pixels came out reddish)."""
    if not front.hasalpha():
        return weight.ifthenelse(front, back, blend=True)
    both = weight.ifthenelse(front.premultiply(), back.premultiply(), blend=True)
    return (
        both.unpremultiply()
        .linear(1, 0.5)
        .cast(front.format)
        .copy(interpretation=front.interpretation)
    )


def bands(image: pyvips.Image, colour: str) -> list[float]:
    """``colour`` as ``image``'s band values (in its kept profile's space, if any)."""
    r, g, b, a = rgba(colour)
    r, g, b = profiles.ink(image, (r, g, b))
    grey = r if r == g == b else 0.2126 * r + 0.7152 * g + 0.0722 * b
    base: list[float] = [r, g, b] if image.bands >= 3 else [grey]
    return [*base, a] if image.hasalpha() else base


def split_alpha(image: pyvips.Image) -> tuple[pyvips.Image, pyvips.Image | None]:
    if image.hasalpha():
        return image.extract_band(0, n=image.bands - 1), image[image.bands - 1]
    return image, None


def join_alpha(image: pyvips.Image, alpha: pyvips.Image | None) -> pyvips.Image:
    return image if alpha is None else image.bandjoin(alpha)


def masked(image: pyvips.Image, mask: pyvips.Image, task: Task) -> pyvips.Image:
    """``image`` shown where ``mask`` is set, transparent (or ``background``) elsewhere."""
    colour, alpha = split_alpha(image)
    shape = mask.cast("uchar")  # relational results are 0/255 already
    alpha = shape if alpha is None else (alpha * (shape / 255)).cast("uchar")
    shaped = colour.bandjoin(alpha)
    background = task.get("background")
    return shaped if background is None else over(shaped, str(background))


#: Block sides, coarse to fine, whose visible colours fill the fully transparent pixels
#: before a lossy save (``hidden_filled``).
FILL_BLOCKS = (64, 16, 4)
FILL_CACHE = 4  # strips of the largest block's height kept (``hidden_filled``)


def _block_means(image: pyvips.Image) -> list[pyvips.Image]:
    """For each side of ``FILL_BLOCKS``, in its order, the alpha-weighted mean colour of
    each block at every pixel, then the mean alpha (0: nothing visible in the block). The
    larger blocks are made from the 4x4 ones (whole blocks: a mean of means is the mean),
    so the input is read once, not once a side from the top."""
    width, height, n = image.width, image.height, image.bands - 1
    alpha = image[n].cast("float")
    weighted = (image.extract_band(0, n=n).cast("float") * alpha).bandjoin(alpha)
    largest = FILL_BLOCKS[0]
    sums = weighted.embed(0, 0, -(-width // largest) * largest, -(-height // largest) * largest)
    means, done = [], 1
    for side in FILL_BLOCKS[::-1]:
        sums, done = sums.shrink(side // done, side // done), side
        mean = (sums.extract_band(0, n=n) / sums[n]).bandjoin(sums[n])  # libvips: x / 0 is 0
        means.append(mean.zoom(side, side).extract_area(0, 0, width, height))
    return means[::-1]  # made fine to coarse, each from the one before


def hidden_filled(image: pyvips.Image) -> pyvips.Image:
    """``image`` with each fully transparent pixel given the alpha-weighted mean colour of
    the visible pixels of its 4x4 block (else its 16x16, else its 64x64 block; else
    black). A lossy encoder (WebP's 4:2:0 colour, AV1's blocks) mixes a pixel with its
    neighbours, so what transparent pixels held showed on the visible edge: two images
    differing only there gave different WebPs (a blue square on transparent red came out
    edged in purple), and black, which AVIF's save put there, darkened the edge. Filled
    from the visible pixels alone, the result depends on what is shown only."""
    if not image.hasalpha():
        return image
    # The input is read twice, a largest block's height apart at most (the blocks' sums,
    # then the pick by its alpha): a source opened in sequence refuses a read from
    # further back than its buffer ("out of order read", a 422 on large images). A cache
    # of a few strips keeps those rows (two were enough, measured at 1-8 threads).
    image = image.tilecache(
        tile_width=image.width,
        tile_height=FILL_BLOCKS[0],
        max_tiles=FILL_CACHE,
        access="sequential",
        threaded=True,
    ).copy()
    # libvips' shrink puts a line cache of its own behind a source read in sequence,
    # which read hundreds of rows ahead of the cache above (3200 of 8000 measured).
    image.remove("vips-sequential")
    n = image.bands - 1
    fill = pyvips.Image.black(image.width, image.height, bands=n)
    for mean in _block_means(image):  # a finer block's colour where it has one
        fill = (mean[n] > 0).ifthenelse(mean.extract_band(0, n=n), fill)
    filled = fill.rint().bandjoin(0).cast(image.format)
    return (image[n] == 0).ifthenelse(filled, image).copy(interpretation=image.interpretation)
