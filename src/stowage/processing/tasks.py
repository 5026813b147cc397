"""The supported tasks and their options: each option has a converter that checks the
value (range, choice, type) and raises ``ValueError`` with a reason when it is wrong.

The options are those of filestack-python's ``ImageTransformationMixin`` for each task;
the ones that only mean something for documents (``output``'s ``secure``, ``docinfo``,
``pageformat``, ``pageorientation``) are accepted and have no effect on images.
"""

from __future__ import annotations

from stowage.processing.params import (
    ALIGNS as ALIGNS,
)
from stowage.processing.params import (
    COLOR_NAMES as COLOR_NAMES,
)
from stowage.processing.params import (
    FORMATS as FORMATS,
)
from stowage.processing.params import (
    Convert,
    align,
    boolean,
    choice,
    color,
    dims,
    either,
    integer,
    number,
    text,
    texts,
)
from stowage.processing.params import rgba as rgba

SIZE = integer(1, 10_000)
AMOUNT = number(0.1, 20)
STORE: dict[str, Convert] = {
    "filename": text,
    "location": choice("s3", "gcs", "azure", "rackspace", "dropbox"),
    "path": text,
    "container": text,
    "region": text,
    "access": choice("public", "private"),
    "base64decode": boolean,
    "workflows": texts,
}

SPECS: dict[str, dict[str, Convert]] = {
    "resize": {
        "width": SIZE,
        "height": SIZE,
        "fit": choice("clip", "crop", "scale", "max"),
        "align": align,
    },
    "crop": {"dim": dims},
    "rotate": {
        "deg": either(integer(0, 359), choice("exif")),
        "exif": boolean,
        "background": color,
    },
    "flip": {},
    "flop": {},
    "output": {
        "format": choice(*FORMATS),
        "quality": either(integer(1, 100), choice("input")),
        "compress": boolean,
        "strip": boolean,
        "background": color,
        "colorspace": choice("rgb", "cmyk", "input"),
        "page": integer(1, 10_000),
        "density": integer(1, 500),
        "secure": boolean,
        "docinfo": boolean,
        "pageformat": choice("a2", "a3", "a4", "a5", "b4", "b5", "letter", "legal", "tabloid"),
        "pageorientation": choice("portrait", "landscape"),
    },
    "quality": {"value": integer(1, 100)},
    "compress": {"metadata": boolean},
    "no_metadata": {},
    "imagesize": {},
    "blur": {"amount": AMOUNT},
    "sharpen": {"amount": AMOUNT},
    "monochrome": {},
    "blackwhite": {"threshold": integer(0, 100)},
    "sepia": {"tone": integer(0, 100)},
    "negative": {},
    "modulate": {
        "brightness": integer(0, 10_000),
        "hue": integer(0, 359),
        "saturation": integer(0, 10_000),
    },
    "pixelate": {"amount": integer(2, 100)},
    "circle": {"background": color},
    "rounded_corners": {
        "radius": either(integer(1, 10_000), choice("max")),
        "blur": number(0, 20),
        "background": color,
    },
    "border": {"width": integer(1, 1000), "color": color, "background": color},
    "store": STORE,
}
#: Other spellings the SDKs send: filestack-python's ``round_corners()``.
ALIASES = {"round_corners": "rounded_corners"}
#: Tasks that need options: at least one of these.
REQUIRED = {"resize": ("width", "height"), "crop": ("dim",), "quality": ("value",)}
#: Tasks whose libvips operations read the image out of order (not top to bottom).
RANDOM_ACCESS = {"rotate", "flip", "circle", "rounded_corners"}
