"""How much fine detail a source has, for the encoders whose time grows with it
(``cost.SAVE_NOISE``): 0 for a photo's, 1 for random noise's.

Measured on a band of the source's first rows at full size: the mean difference between
neighbouring pixels (a textured photo about 8, noise 65-85). A shrunk copy would not do:
shrinking averages noise into a flat grey. The band is read only from formats that decode
it without the rest (JPEG, PNG, TIFF); any other counts as a photo, and a job the estimate
so misjudges is bounded by time instead (``pool.py``). It is asked only when the save
would take long anyway (``cost.MEASURE_ABOVE``): about 12 ms for a 4000-pixel-wide PNG or JPEG.
"""

from __future__ import annotations

from stowage.processing import frames

ROWS = 32
#: Mean differences of neighbouring values: at or under PHOTO a photo's rate, at or over
#: NOISE noise's (docs/decisions.md, "Save rates and content").
PHOTO, NOISE = 10.0, 60.0
LOADERS = ("jpegload", "pngload", "tiffload")


def measured(opened: frames.Opened) -> float:
    """0 (a photo's detail) to 1 (noise's) for the source ``opened``."""
    loader = str(opened.image.get("vips-loader")) if opened.image.get_typeof("vips-loader") else ""
    if loader.removesuffix("_source") not in LOADERS or opened.image.width < 2:
        return 0.0
    image = frames.load(opened.name, {"access": "sequential", "fail_on": "error"})
    band = image.crop(0, 0, image.width, min(ROWS, opened.frame_height))
    band = band.extract_band(0, n=min(3, band.bands)).cast("float")
    if image.format in ("ushort", "short"):
        band = band / 256
    left, right = (
        band.crop(0, 0, band.width - 1, band.height),
        band.crop(1, 0, band.width - 1, band.height),
    )
    difference = float((right - left).abs().avg())
    return min(1.0, max(0.0, (difference - PHOTO) / (NOISE - PHOTO)))
