"""How a source's samples read as light, whatever their format (docs/decisions.md,
"Sample formats and colour kinds"): every source is read into 8 or 16-bit unsigned
samples before any task, resize included, sees it.

- Unsigned integers: ``value / max of the format`` (uint32 as 16 bits: ``value * 65535 /
  (2**32 - 1)``); 8 and 16 bits are read as they are.
- Signed integers: the non-negative half, ``value / max of the format``; a negative
  value is black. libvips cast them to 8 bits by clipping: a uint32 or int32 image whose
  values spanned their range came out nearly all white, an int16 colour one too.
- Floats: linear light from 0 to 1 (scRGB, as libvips reads a colour float TIFF and as
  image editors write 32-bit files), a grey one too (libvips reads it as 0-255 grey: it
  came out black); outside 0..1 clipped. A float image with an ICC profile is the
  profile's values from 0 to 1: the profile, not a linear curve, says what they show.
- A palette PNG whose entries are all grey is grey (``palettes``), not sRGB.

libvips' ``thumbnail`` opens the file itself and clips as its cast does: a source that
``read`` changes is shrunk from this reading instead (PNG and TIFF have no shrink on
load to lose).
"""

from __future__ import annotations

from pathlib import Path

import pyvips

from stowage import errors
from stowage.processing import palettes, profiles

#: Seconds a megapixel the reading costs the cost estimate, besides the decode, for a
#: source ``read`` changes: measured on one thread (2500x2000, 2026-12-03) 0.01-0.03
#: beyond the decode (float scRGB 0.03, uint32 0.02, int32 0.014), and computed again
#: around a blur's tiles: a 5 MP float TIFF blurred by 20 took 0.42 s, estimated 0.23.
RATE = 0.03
#: Seconds a megapixel a 16-bit RGB profile applied through XYZ in floats costs
#: (``profiles.applied``), besides ``RATE``: 0.03 measured alone (7.5 MP, one thread,
#: 2026-12-06), 0.03-0.07 in a chain (``test_decodecost``).
FLOATS = 0.045
_SIGNED_TOP = {"char": 127, "short": 32767, "int": 2**31 - 1}
_UNSIGNED_TOP = {"uint": 2**32 - 1}
_FLOATS = ("float", "double")
_KEPT = ("uchar", "ushort")
#: Spaces whose samples libvips defines itself (a 16-bit CIELAB TIFF is read as LabS:
#: signed shorts that are no light levels); ``ops.srgb`` converts them.
_LIBVIPS_SPACES = frozenset({"lab", "labs", "labq", "lch", "cmc", "xyz", "yxy", "hsv"})
_FULL = 65535.0
#: The bands a kind of picture uses: its colour and one alpha. A TIFF may hold more
#: (extra samples: masks, spot channels), which no task reads and no web format keeps:
#: with them, ``sepia`` was 422 while ``monochrome`` answered colour and ``resize`` four
#: bands; a picture is read as its colour and its first extra band, the alpha.
_USED_BANDS = {"b-w": 2, "grey16": 2, "cmyk": 5}
_COLOUR_USED = 4
#: What a ``multiband`` picture's first three bands are, by their format.
_MULTIBAND_AS = {"uchar": "srgb", "ushort": "rgb16", "float": "scrgb", "double": "scrgb"}


#: What the result will be saved as: its format, and whether its profile is dropped.
Saved = tuple[str, bool]


def read(image: pyvips.Image, source: Path | None, saved: Saved | None = None) -> pyvips.Image:
    """``image`` with 8 or 16-bit unsigned samples that show what its file shows: the
    same object when libvips' own reading does (``frames.Opened.read``).
    ``saved``: how the result is saved; when it will not carry the source's profile, a
    16-bit source's is applied here, in 16 bits (made 8-bit first, then applied, a grey
    16-bit scan's levels came out 2-3 off)."""
    if image.format in ("complex", "dpcomplex"):
        raise errors.InvalidImage("the image holds complex numbers, not light")
    image = _used_bands(image)
    if image.interpretation in _LIBVIPS_SPACES:
        pass  # CIELAB (float, or libvips' own 16-bit LabS), XYZ: converted as they are
    elif image.format in _FLOATS:
        image = _from_float(image)
    elif image.format not in _KEPT:
        image = _from_integer(image)
    if _applies_profile(image, saved):
        image = profiles.applied(image)
    if source is not None and palettes.grey_palette(image, source):
        image = palettes.as_grey(image)
    return image


def in_floats(image: pyvips.Image, read: pyvips.Image) -> bool:
    """Whether ``read`` (``image`` as ``read`` made it) had an RGB profile applied
    through floats (``profiles.applied``): a cost of its own (``FLOATS``)."""
    applied = profiles.profile(read) is None
    return applied and profiles.through_floats(profiles.profile(image), read)


def _used_bands(image: pyvips.Image) -> pyvips.Image:
    most = _USED_BANDS.get(image.interpretation, _COLOUR_USED)
    if image.bands <= most:
        return image
    kept = image.extract_band(0, n=most)
    if image.interpretation == "multiband" and image.format in _MULTIBAND_AS:
        kept = kept.copy(interpretation=_MULTIBAND_AS[image.format])
    return kept


def _applies_profile(image: pyvips.Image, saved: Saved | None) -> bool:
    if saved is None or image.format != "ushort":
        return False
    return not profiles.carried(image, *saved)


def _space(image: pyvips.Image) -> str:
    if image.interpretation == "cmyk" and image.bands >= 4:
        return "cmyk"
    return "grey16" if image.bands < 3 else "rgb16"


def _from_integer(image: pyvips.Image) -> pyvips.Image:
    top = _SIGNED_TOP.get(image.format) or _UNSIGNED_TOP.get(image.format, 1)
    # cast clips (a negative value is 0) and truncates: the half level rounds it
    return image.linear(_FULL / top, 0.5).cast("ushort").copy(interpretation=_space(image))


def _from_float(image: pyvips.Image) -> pyvips.Image:
    if profiles.profile(image) is not None:  # the profile's own values, 0 to 1
        return image.linear(_FULL, 0.5).cast("ushort").copy(interpretation=_space(image))
    if image.interpretation == "scrgb" and image.bands >= 3:
        return image.colourspace("rgb16")
    if image.bands <= 2:  # linear grey: as scRGB's three equal bands
        grey = image[0]
        rest = [image[1]] if image.bands == 2 else []
        linear = grey.bandjoin([grey, grey, *rest]).copy(interpretation="scrgb")
        return linear.colourspace("grey16")
    return image
