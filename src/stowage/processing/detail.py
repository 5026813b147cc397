"""How much fine detail a source has, for the encoders whose time grows with it
(``saverates.SAVE_NOISE``): 0 for a photo's, 1 for random noise's.

Measured at full size over the whole picture: the mean difference between horizontal
neighbours of one band (a textured photo about 8, noise 65-85). A shrunk copy would not
do: shrinking averages noise into a flat grey; nor would the first rows alone: a picture
smooth at its top and noise below it was priced as a photo. The source is decoded once
for it, as a stream (memory stays flat), in any format the job reads: 0.13 s for a 12 MP
JPEG, 0.25 s for a PNG, 0.3-0.5 s for a WebP, a few percent of the save it prices; it is
asked only when that save would take long anyway (``saverates.MEASURE_ABOVE``).
"""

from __future__ import annotations

import pyvips

from stowage.processing import frames

#: Mean differences of neighbouring values: at or under PHOTO a photo's rate, at or over
#: NOISE noise's (docs/decisions.md, "Save rates and content").
PHOTO, NOISE = 10.0, 60.0
#: Each value minus its left neighbour, in one pass over a stream (two shifted crops of
#: one sequential decode would read it out of order).
_NEIGHBOURS = [[-1, 1]]


def measured(opened: frames.Opened) -> float:
    """0 (a photo's detail) to 1 (noise's) for the source ``opened``."""
    if opened.image.width < 2:
        return 0.0
    try:
        image = frames.load(opened.name, {"access": "sequential", "fail_on": "error"})
        band = image.extract_band(1 if image.bands >= 3 else 0)  # green, or the grey
        wide = band.cast("int") if image.format in ("ushort", "short") else band.cast("short")
        mask = pyvips.Image.new_from_list(_NEIGHBOURS)
        difference = float(wide.conv(mask, precision="integer").abs().avg())
    except pyvips.Error:
        return 0.0  # a source that does not decode: the job's own decode says why
    return scored(difference, image.format)


def scored(difference: float, band_format: str) -> float:
    """0 to 1 for a mean ``difference`` of neighbours in an image of ``band_format``."""
    if band_format in ("ushort", "short"):
        difference /= 256
    return min(1.0, max(0.0, (difference - PHOTO) / (NOISE - PHOTO)))
