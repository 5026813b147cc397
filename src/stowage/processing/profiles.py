"""Embedded ICC profiles: applied (the pixels made sRGB's, the profile dropped) where
the saved file will not carry the profile, so that it shows what the source showed.

A file without a profile is shown as sRGB, and a saver drops a profile that does not
fit the bands it writes: a grey (``GRAY``) profile on a WebP, AVIF or GIF (which hold
colour only) or on an image a task made colour. Its pixels, still in the grey profile's
space, were then shown as sRGB's: 15 levels off on a gamma 1.8 scanner's grey. A grey
image stays grey when its profile is applied (sRGB's neutral levels, one band).
"""

from __future__ import annotations

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


def _deep(image: pyvips.Image) -> str:
    """The 16-bit interpretation of ``image``: libvips scales alpha by it (an 8-bit
    interpretation on 16-bit samples took alpha 65535 for 255 and clipped it)."""
    if image.interpretation == "cmyk":
        return "cmyk"
    return "grey16" if image.bands < 3 else "rgb16"


def applied(image: pyvips.Image) -> pyvips.Image:
    """``image``'s pixels in sRGB (8 or 16 bits, as it had) without its profile; a grey
    image as grey. Computed in 16 bits whatever the depth: LittleCMS' 8-bit transform
    is tabulated, and a saturated Display P3 green (113, 244, 206) came out with red 0
    where the profile gives 10 (the dark end of sRGB's curve is steep)."""
    if profile(image) is None:
        return image
    grey, deep = image.bands < 3, image.format == "ushort"
    wide = image if deep else image.linear(257, 0).cast("ushort").copy(interpretation=_deep(image))
    turned = wide.icc_transform("srgb", embedded=True, depth=16)
    if grey:  # a neutral stays neutral: sRGB's bands are equal, green taken
        alpha = [turned[3]] if turned.bands == 4 else []
        turned = turned[1].bandjoin(alpha) if alpha else turned[1]
    if not deep:
        turned = turned.linear(1 / 257, 0.5).cast("uchar")
    space = ("grey16" if deep else "b-w") if grey else ("rgb16" if deep else "srgb")
    turned = turned.copy(interpretation=space)
    turned.remove(_FIELD)
    return turned
