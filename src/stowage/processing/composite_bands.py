"""The bands the images a ``watermark``, ``collage`` or ``animate`` places together meet
in: 8-bit grey when every one of them is grey and every colour the task adds is a grey,
else 8-bit sRGB (docs/decisions.md, "Several files on grey").

Each source is read as ``met``: a grey file (one band, or grey and alpha; 8 or 16 bits)
as 8-bit grey, every other file as 8-bit sRGB. A task then puts its images ``together``:
all of them grey, or all of them sRGB (a grey one as three equal bands). Made sRGB
whatever they were, a grey PNG watermarked with a grey logo, or a collage of grey scans,
came out as three equal bands: three times the bytes for the same greys.
"""

from __future__ import annotations

import pyvips

from stowage.processing import ops, profiles
from stowage.processing.params import rgba

_GREY = ("b-w", "grey16")


def rgb(image: pyvips.Image, profiled: bool = True) -> pyvips.Image:
    """8-bit sRGB, the colour space files placed together meet in (a Display P3 logo
    placed as it was on an sRGB photo showed other colours); ``profiled`` False leaves
    the pixels in the space of their profile."""
    if profiled:
        image = profiles.applied(image)  # grey stays grey, made three bands below
    image = ops.srgb(image)
    if image.bands < 3:  # grey, with or without alpha
        grey = image[0]
        image = grey.bandjoin([grey, grey, *([image[1]] if image.bands == 2 else [])])
    return image.copy(interpretation="srgb")


def grey(image: pyvips.Image) -> pyvips.Image | None:
    """``image`` as 8-bit grey (its alpha kept) when it is a grey one, else None. A grey
    with an ICC profile is turned into sRGB's greys, as ``rgb`` turns it, and loses the
    profile: its levels are those the sRGB result had in each band."""
    if image.bands > 2 or image.interpretation not in _GREY:
        return None
    if image.get_typeof("icc-profile-data"):
        turned = rgb(image)  # a neutral stays neutral: the bands are equal
        alpha = [turned[3]] if turned.bands == 4 else []
        image = turned[1].bandjoin(alpha) if alpha else turned[1]
        image = image.copy(interpretation="b-w")
        image.remove("icc-profile-data")
    return ops.srgb(image)


def met(image: pyvips.Image) -> pyvips.Image:
    """8-bit grey for a grey ``image``, else 8-bit sRGB (``rgb``)."""
    found = grey(image)
    return found if found is not None else rgb(image)


def is_grey(colour: str) -> bool:
    r, g, b, _ = rgba(colour)
    return r == g == b


def together(images: list[pyvips.Image], *colours: str) -> list[pyvips.Image]:
    """``images`` (each ``met``) in one space: as they are when all are grey and so is
    each of ``colours``, else each in sRGB (a grey one as three equal bands)."""
    if all(image.bands < 3 for image in images) and all(is_grey(c) for c in colours):
        return images
    return [rgb(image, profiled=False) for image in images]


def ink(colour: str, grey_bands: bool) -> list[int]:
    """``colour`` as the bands of an image with alpha: grey and alpha, or RGBA."""
    r, g, b, a = rgba(colour)
    return [r, a] if grey_bands else [r, g, b, a]


def placed_over(back: pyvips.Image, fronts: list[tuple[pyvips.Image, int, int]]) -> pyvips.Image:
    """Each of ``fronts`` (an image and where it goes) over ``back``, in one composite:
    one after another, each pass rounded again the pixels of every tile it touched, and
    a partly transparent background lost about a level a file (a collage of nine
    files on ``2D2D2DBF``: 45 became 42 between the cells). Grey and alpha is composited in
    floats, to be rounded once by the caller: libvips' 8-bit composite of two bands
    rounds otherwise than its four-band one, a level the other way."""
    if not fronts:
        return back
    images, xs, ys = zip(*fronts, strict=True)
    if back.bands > 2:
        return back.composite(list(images), "over", x=list(xs), y=list(ys))
    floats = [image.cast("float") for image in images]
    return back.cast("float").composite(floats, "over", x=list(xs), y=list(ys))
