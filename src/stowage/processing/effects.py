"""Frame and light effects of the task table: vignette, torn_edges, shadow, polaroid,
oil_paint. Each is an operation ``(pyvips.Image, Task) -> pyvips.Image`` (lazy, computed
by the pipeline when the result is saved) and its ``TaskSpec``.

Masks are computed per pixel from coordinates (``xyz``) rather than drawn into a
buffer, so they stream with the image and never hold a copy of it. Where the hosted
service blends into a ``background``, an opaque color flattens the result onto it and
``transparent`` leaves an alpha channel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import pyvips

from stowage.processing import params
from stowage.processing.base import Task, Value
from stowage.processing.geometry import rotated_size, turned
from stowage.processing.ops import bands, drawable, held, over, premultiplied, srgb, with_alpha
from stowage.processing.table import Param, TaskSpec

COLOR = params.color


@dataclass(frozen=True)
class Pair:
    """Two whole numbers ``[a,b]``, each from ``low`` to ``high`` (a class, like params'
    checks, so that tests and docs can read the range)."""

    low: int
    high: int

    def __call__(self, value: Value) -> Value:
        if not isinstance(value, tuple) or len(value) != 2:
            raise ValueError(f"must be [a,b], each a whole number from {self.low} to {self.high}")
        return tuple(params.integer(self.low, self.high)(v) for v in value)


def whole(task: Task, name: str, default: int) -> int:
    """A checked option as a whole number (the check guarantees the type)."""
    value = task.get(name, default)
    return int(value) if isinstance(value, int | float) else default


def real(task: Task, name: str, default: float) -> float:
    value = task.get(name, default)
    return float(value) if isinstance(value, int | float) else default


def whole_pair(task: Task, name: str, default: tuple[int, int]) -> tuple[int, int]:
    value = task.get(name, default)
    if isinstance(value, tuple) and len(value) == 2:
        first, second = value
        if isinstance(first, int) and isinstance(second, int):
            return first, second
    return default


def ground(image: pyvips.Image, *colours: str) -> pyvips.Image:
    """``image`` in 8 bits with an alpha band, ready to have ``colours`` drawn on it: a
    grey source stays grey (one band and alpha) unless one of the colours is not a grey
    (``ops.drawable``). Made sRGB whatever the colours, a grey PNG came out of a white
    vignette or torn edges as RGB: three times the bytes for the same greys."""
    return with_alpha(drawable(srgb(image), *colours))


def fill(image: pyvips.Image, name: str, width: int, height: int) -> pyvips.Image:
    """A ``width`` x ``height`` plane of one color with alpha, in ``image``'s bands (grey
    and alpha for a grey ``image``, RGBA for an sRGB one), built lazily."""
    plane = pyvips.Image.black(width, height, bands=image.bands) + bands(image, name)
    return plane.cast("uchar").copy(interpretation=image.interpretation)


def _centre_distance(width: int, height: int) -> pyvips.Image:
    """0 at the centre, 1 at the corners: the elliptical radius the vignette falls off on."""
    xy = pyvips.Image.xyz(width, height) + 0.5
    nx = (xy[0] - width / 2) / (width / 2)
    ny = (xy[1] - height / 2) / (height / 2)
    return ((nx * nx + ny * ny) / 2) ** 0.5


def vignette(image: pyvips.Image, task: Task) -> pyvips.Image:
    amount = real(task, "amount", 20) / 100
    inner = 0.5  # the middle half of the diagonal is left as it is
    past = (_centre_distance(image.width, image.height) - inner).maxpair(0) / (1 - inner)
    if task.get("blurmode", "gaussian") == "linear":
        fade = past.minpair(1)
    else:  # a smooth gaussian shoulder: near 0 just past the inner radius, ~1 at corners
        fade = 1 - (-4 * past * past).exp()
    background = str(task.get("background", "white"))
    image = ground(image, background)
    alpha = image[image.bands - 1] * (1 - fade * amount)
    faded = image.extract_band(0, n=image.bands - 1).bandjoin(alpha.cast("uchar"))
    return over(faded, background)


def _ragged(length: int, low: int, high: int, phase: float) -> pyvips.Image:
    """How deep the tear reaches at each of ``length`` positions along an edge: from
    ``low`` to ``high`` pixels, as a sum of waves (deterministic: one URL, one result).
    One row, computed once into memory (4 bytes a position)."""
    along = pyvips.Image.xyz(length, 1)[0]
    wave = high * 4.0  # pixels per long wave: tears about as wide as they are deep
    total = (
        (along * (360 / wave) + phase).sin() * 0.5
        + (along * (360 / max(wave / 3.7, 2)) + phase * 2.3).sin() * 0.3
        + (along * (360 / 2.9) + phase * 5.1).sin() * 0.2
    )
    return ((total + 1) / 2 * (high - low) + low).cast("float").copy_memory()


def torn_edges(image: pyvips.Image, task: Task) -> pyvips.Image:
    low, high = sorted(whole_pair(task, "spread", (1, 10)))
    w, h = image.width, image.height
    xy = pyvips.Image.xyz(w, h)
    x, y = xy[0], xy[1]
    # each edge's depths, repeated across the image (libvips repeats, nothing is copied)
    top = _ragged(w, low, high, 17).replicate(1, h)
    bottom = _ragged(w, low, high, 131).replicate(1, h)
    left = _ragged(h, low, high, 53).rot90().replicate(w, 1)
    right = _ragged(h, low, high, 271).rot90().replicate(w, 1)
    kept = (y >= top) & ((h - 1 - y) >= bottom) & (x >= left) & ((w - 1 - x) >= right)
    background = str(task.get("background", "white"))
    image = ground(image, background)
    alpha = (image[image.bands - 1] & kept).cast("uchar")
    torn = image.extract_band(0, n=image.bands - 1).bandjoin(alpha)
    return over(torn, background)


def shadow_geometry(
    width: int, height: int, blur: float, vector: tuple[int, int]
) -> tuple[int, int, int, int]:
    """Where the image sits on the grown canvas, and the canvas' size: the canvas holds
    the image and its shadow, moved by ``vector`` and spread by ``ceil(2 x blur)``
    pixels, rounded up so that a fractional blur loses none of it: libvips' Gaussian
    mask stops at a fifth of its peak, about 1.8 sigma from its centre."""
    pad = math.ceil(2 * blur)
    vx, vy = vector
    left, top = min(0, vx - pad), min(0, vy - pad)
    right, bottom = max(width, vx + width + pad), max(height, vy + height + pad)
    return -left, -top, right - left, bottom - top


def shadow_size(task: Task, width: int, height: int) -> tuple[int, int]:
    vector = whole_pair(task, "vector", (4, 4))
    return shadow_geometry(width, height, real(task, "blur", 4), vector)[2:]


def shadow(image: pyvips.Image, task: Task) -> pyvips.Image:
    blur = real(task, "blur", 4)
    opacity = real(task, "opacity", 60) / 100
    vx, vy = whole_pair(task, "vector", (4, 4))
    x, y, width, height = shadow_geometry(image.width, image.height, blur, (vx, vy))
    colour, background = str(task.get("color", "black")), str(task.get("background", "white"))
    image = ground(image, colour, background)
    n = image.bands - 1  # colour bands: 1 for a grey image, 3 for sRGB
    shape = image[n].embed(x + vx, y + vy, width, height)  # black (no shadow) elsewhere
    if blur > 0:
        shape = shape.gaussblur(blur)
    strength = opacity * params.rgba(colour)[3] / 255
    layer = fill(image, colour, width, height).extract_band(0, n=n)
    cast = layer.bandjoin((shape * strength).cast("uchar"))
    placed = image.embed(x, y, width, height)  # transparent around the image
    combined = cast.composite2(placed, "over").cast("uchar")
    return over(combined.copy(interpretation=image.interpretation), background)


def polaroid_frame(width: int, height: int) -> tuple[int, int]:
    """The frame's side (also top) and bottom widths: a print's proportions, the bottom
    deeper as on the instant film. 6% of the shorter side, rounded half up in whole
    numbers (``round(75 * 0.06)`` was 4, half to even, a frame 1 px thinner)."""
    side = max(2, params.half_up(Fraction(min(width, height) * 6, 100)))
    return side, side * 4


def polaroid_print(width: int, height: int) -> tuple[int, int]:
    """The framed print, before it is tilted."""
    side, bottom = polaroid_frame(width, height)
    return width + 2 * side, height + side + bottom


def polaroid_size(task: Task, width: int, height: int) -> tuple[int, int]:
    """The framed print, and the box that holds it tilted."""
    return rotated_size(*polaroid_print(width, height), whole(task, "rotate", 0))


def _polaroid_holds(task: Task) -> bool:
    return whole(task, "rotate", 0) % 360 != 0


def polaroid(image: pyvips.Image, task: Task) -> pyvips.Image:
    side, bottom = polaroid_frame(image.width, image.height)
    colour, background = str(task.get("color", "snow")), str(task.get("background", "white"))
    image = ground(image, colour, background)
    frame = bands(image, colour)
    framed = image.embed(
        side,
        side,
        image.width + 2 * side,
        image.height + side + bottom,
        extend="background",
        background=frame,
    )
    deg = whole(task, "rotate", 0)
    if not deg % 360:
        return over(framed.copy(interpretation=image.interpretation), background)
    # held over its background: a lazy turn after it reads it again for every strip, and
    # put over it lazily, a held print cost 3.6 times its CPU time so (seed sweep 20016)
    framed = turned(framed, deg, [0] * framed.bands).cast("uchar")
    return held(over(framed.copy(interpretation=image.interpretation), background))


MAX_WINDOW = 7  # a median window's side; larger radii are painted on a smaller copy


def _median(image: pyvips.Image, size: int) -> pyvips.Image:
    size = min(size, image.width, image.height)  # libvips' window fits the image
    size -= 1 - size % 2  # odd, so that the window has a centre
    return image if size < 3 else image.rank(size, size, size * size // 2)


def oil_paint(image: pyvips.Image, task: Task) -> pyvips.Image:
    """Each pixel takes the median of its neighbourhood, band by band: the flat,
    edge-keeping strokes of a ``-paint`` filter (which takes the most frequent color).

    A median's cost grows with its window's side, so a window past ``MAX_WINDOW`` is
    painted on a copy shrunk by the ratio, enlarged back in blocks, and the blocks'
    corners rounded by a median of at most 5x5 at full size, the default radius' cost
    (radius 10 on 12 megapixels: 7-10 s at full size, about 2 s so; a smooth
    enlargement instead blurred the strokes)."""
    size = 2 * whole(task, "amount", 2) + 1
    return premultiplied(srgb(image), lambda colours: _painted(colours, size))


def _painted(image: pyvips.Image, size: int) -> pyvips.Image:
    factor = min(math.ceil(size / MAX_WINDOW), image.width, image.height)
    if factor == 1:
        return _median(image, size)
    small = image.shrink(factor, factor)
    painted = _median(small, math.ceil(size / factor)).zoom(factor, factor)
    if painted.width < image.width or painted.height < image.height:
        painted = painted.embed(0, 0, image.width, image.height, extend="copy")
    blocks = painted.extract_area(0, 0, image.width, image.height)
    return _median(blocks, min(2 * factor + 1, 5))


TASKS: tuple[TaskSpec, ...] = (
    TaskSpec(
        "vignette",
        (
            Param("amount", params.integer(0, 100), short=("a",), default=20),
            Param(
                "blurmode", params.choice("gaussian", "linear"), short=("m",), default="gaussian"
            ),
            Param("background", COLOR, short=("b",), default="white"),
        ),
        op=vignette,
        doc="fades the corners into the background, the centre kept",
    ),
    TaskSpec(
        "torn_edges",
        (
            Param("spread", Pair(1, 10_000), short=("s",), default=(1, 10)),
            Param("background", COLOR, short=("b",), default="white"),
        ),
        op=torn_edges,
        doc="tears the four edges; the torn-off parts show the background",
    ),
    TaskSpec(
        "shadow",
        (
            Param("blur", params.number(0, 20), short=("l",), default=4),
            Param("opacity", params.integer(0, 100), short=("o",), default=60),
            Param("vector", Pair(-1000, 1000), short=("v",), default=(4, 4)),
            Param("color", COLOR, default="black"),
            Param("background", COLOR, short=("b",), default="white"),
        ),
        op=shadow,
        size=shadow_size,
        random_access=True,  # the image and its shadow are read at offsets up to 1000 px apart
        # Its outline is blurred with a margin around every tile: five shadows of blur 20
        # on a 320x240 PNG computed the ones before again, 20 s of CPU; held, 4.6 s.
        measures=True,
        doc="a drop shadow; the canvas grows to hold it",
    ),
    TaskSpec(
        "polaroid",
        (
            Param("color", COLOR, short=("c",), default="snow"),
            Param("rotate", params.integer(0, 359), short=("r",), default=0),
            Param("background", COLOR, short=("b",), default="white"),
        ),
        op=polaroid,
        size=polaroid_size,
        holds=_polaroid_holds,
        random_access=True,  # a rotation reads the framed image out of order
        doc="an instant-print frame, optionally tilted",
    ),
    TaskSpec(
        "oil_paint",
        (Param("amount", params.integer(2, 100), short=("a",), default=2),),
        op=oil_paint,
        doc="a painted look: a median filter of radius amount",
    ),
)
