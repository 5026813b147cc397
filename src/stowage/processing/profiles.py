"""Embedded ICC profiles: applied (the pixels made sRGB's, the profile dropped) where
the saved file will not carry the profile, so that it shows what the source showed.

A file without a profile is shown as sRGB, and a saver drops a profile that does not
fit the bands it writes: a grey (``GRAY``) profile on a WebP, AVIF or GIF (which hold
colour only) or on an image a task made colour. Its pixels, still in the grey profile's
space, were then shown as sRGB's: 15 levels off on a gamma 1.8 scanner's grey. A grey
image stays grey when its profile is applied (sRGB's neutral levels, one band).
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import os
import tempfile
from pathlib import Path

import pyvips

#: Formats whose files hold grey as grey (one band, or grey and alpha).
GREY_FORMATS = frozenset({"jpeg", "png", "tiff"})
_FIELD = "icc-profile-data"


def profile(image: pyvips.Image) -> bytes | None:
    if not image.get_typeof(_FIELD):
        return None
    data = image.get(_FIELD)
    return bytes(data) if data else None


def carried(image: pyvips.Image, output_format: str, dropped: bool) -> bool:
    """Whether the file ``image`` is saved to in ``output_format`` shows its colours as
    they are: it has no profile, or one the file keeps (not ``dropped``) that fits."""
    data = profile(image)
    if data is None:
        return True
    if dropped:
        return False
    saved_grey = image.bands < 3 and output_format in GREY_FORMATS
    return (data[16:20] == b"GRAY") == saved_grey


def applied(image: pyvips.Image) -> pyvips.Image:
    """``image``'s pixels in sRGB (8 or 16 bits, as it had) without its profile; a grey
    image as grey. 8 bits are transformed as 8, which LittleCMS does more exactly than
    in 16 and in a third of the time. 16 bits stay 16 (docs/decisions.md: a grey scan's
    levels within 1.4 of the profile's curve, 2.1 made 8-bit first); an RGB profile's
    colours go through XYZ in floats (``_deep_rgb``)."""
    data = profile(image)
    if data is None:
        return image
    grey, deep = image.bands < 3, image.format == "ushort"
    if through_floats(data, image):
        turned = _deep_rgb(image)
    else:
        turned = image.icc_transform("srgb", embedded=True, depth=16 if deep else 8)
    if grey:  # a neutral stays neutral: sRGB's bands are equal, green taken
        alpha = [turned[3]] if turned.bands == 4 else []
        turned = turned[1].bandjoin(alpha) if alpha else turned[1]
    space = ("grey16" if deep else "b-w") if grey else ("rgb16" if deep else "srgb")
    turned = turned.copy(interpretation=space)
    turned.remove(_FIELD)
    return turned


def through_floats(data: bytes | None, image: pyvips.Image) -> bool:
    """Whether the profile ``data`` is applied to ``image``'s pixels through floats
    (``_deep_rgb``): an RGB profile on 16-bit colour, which costs more (``samples``)."""
    rgb = data is not None and data[16:20] == b"RGB "
    return rgb and image.bands >= 3 and image.format == "ushort"


def _deep_rgb(image: pyvips.Image) -> pyvips.Image:
    """A 16-bit RGB image's colours in 16-bit sRGB, computed in floats: LittleCMS turns a
    16-bit transform into a table it interpolates, 13 levels off (of 255) for colours
    near the gamut's edge, 2% of random Display P3 colours more than 3; through XYZ in
    floats, within a level of its own float evaluation. The alpha is kept as it is."""
    alpha = image[3:] if image.bands > 3 else None
    colour = image[:3].icc_import(embedded=True, pcs="xyz").colourspace("rgb16")
    return colour.bandjoin(alpha) if alpha is not None else colour


def for_tasks(image: pyvips.Image, output_format: str, dropped: bool) -> pyvips.Image:
    """``image`` in the colour space the tasks work in: that of the file they make. A
    profile the file will not carry is applied before the tasks mix or map colours (the
    result is sRGB: worked in the profile's space and turned at the save, a saturated
    edge came out up to 50 levels from the same chain on the sRGB source); a kept one
    keeps its space, and its colours outside sRGB (docs/decisions.md)."""
    return image if carried(image, output_format, dropped) else applied(image)


def ink(image: pyvips.Image, rgb: tuple[int, int, int]) -> tuple[int, int, int]:
    """The sRGB colour ``rgb`` (a colour asked for: a border, a background) as
    ``image``'s values: in its RGB profile's space when it keeps one, so that it shows
    as asked. Drawn as it was, ``2080C0`` on a ProPhoto photo showed (0, 159, 211)."""
    data = profile(image)
    if data is None or data[16:20] != b"RGB " or image.bands < 3:
        return rgb
    return _ink(data, rgb)


#: How far from its values rounded ``_ink`` looks, in 8-bit steps: near black, where a
#: profile's steps are coarse, the nearest values lay up to 3 steps away, past a ring
#: of nearer ones that show no nearer.
INK_REACH = 3
_AROUND = sorted(  # the nearest first: of values that show as near, the nearest is kept
    itertools.product(range(-INK_REACH, INK_REACH + 1), repeat=3),
    key=lambda step: (max(map(abs, step)), sum(map(abs, step))),
)


@functools.lru_cache(maxsize=64)
def _ink(data: bytes, rgb: tuple[int, int, int]) -> tuple[int, int, int]:
    """Of the 8-bit values around ``rgb``'s in the profile (``INK_REACH``), the one that
    shows nearest to it. Rounded each on its own, a bright green with a dark red
    (1DE45E) on Adobe RGB showed 3.5 levels off in its red (its neighbour (131, 228,
    104): 0.8); the best of the 26 around, a ProPhoto (12, 225, 8) showed 4.6 off where
    values 3 steps away show 2.5."""
    path = str(_profile_file(data))
    dot = pyvips.Image.black(1, 1, bands=3).new_from_image(list(rgb)).cast("uchar")
    try:  # through XYZ in floats: LittleCMS' 16-bit transform is a table (``_deep_rgb``)
        xyz = dot.copy(interpretation="srgb").colourspace("xyz")
        exact = xyz.icc_export(output_profile=path, pcs="xyz", depth=16)(0, 0)[:3]
        near = (int(exact[0] / 257 + 0.5), int(exact[1] / 257 + 0.5), int(exact[2] / 257 + 0.5))
        tries = [_moved(near, step) for step in _AROUND]
        misses = _misses(path, tries, rgb)
    except pyvips.Error:  # a profile LittleCMS cannot use: the pixels are taken as sRGB
        return rgb
    return tries[misses.index(min(misses))]


def _moved(values: tuple[int, int, int], step: tuple[int, ...]) -> tuple[int, int, int]:
    r, g, b = (min(255, max(0, v + d)) for v, d in zip(values, step, strict=True))
    return r, g, b


def _misses(path: str, tries: list[tuple[int, int, int]], rgb: tuple[int, int, int]) -> list[float]:
    """How far from ``rgb`` each of ``tries`` shows, in sRGB levels (its largest miss)."""
    row = pyvips.Image.new_from_list([[v for t in tries for v in t]]).cast("uchar")
    row = row.bandfold(factor=3).copy(interpretation="srgb")  # a pixel a try
    shown = row.icc_import(input_profile=path, pcs="xyz").colourspace("rgb16")
    levels = shown.bandunfold(factor=3).tolist()[0]  # computed once, not a try a time
    return [
        max(abs(levels[3 * i + k] / 257 - want) for k, want in enumerate(rgb))
        for i in range(len(tries))
    ]


def _profile_file(data: bytes) -> Path:
    """``data`` in a file: libvips reads an output profile from a file only. Looked for
    on every call, not remembered: a job process's folder (its TMPDIR) is emptied after
    each of its jobs."""
    path = Path(tempfile.gettempdir()) / f"stowage-{hashlib.sha256(data).hexdigest()[:16]}.icc"
    if not path.exists():  # written whole, then named: another process may read it
        with tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as file:
            file.write(data)
        os.replace(file.name, path)
    return path
