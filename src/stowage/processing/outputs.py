"""Tasks about the result rather than its pixels: how it is saved (``output``,
``quality``, ``compress``, ``no_metadata``) and answers that are no image
(``imagesize``). The engine reads them when it saves (``vips.save_options``)."""

from __future__ import annotations

from stowage.processing.officeformats import TARGETS
from stowage.processing.params import FORMATS, boolean, choice, color, either, integer
from stowage.processing.table import Kind, Param, TaskSpec

SAVE, ANSWER = Kind.SAVE, Kind.ANSWER
PAGE_FORMATS = ("a2", "a3", "a4", "a5", "b4", "b5", "letter", "legal", "tabloid")

TASKS: tuple[TaskSpec, ...] = (
    TaskSpec(
        "output",
        (
            Param("format", choice(*FORMATS, *TARGETS), ("f",)),
            Param("quality", either(integer(1, 100), choice("input")), ("q",)),
            Param("compress", boolean),
            Param("strip", boolean, ("s",)),
            Param("background", color, ("b",)),
            Param("colorspace", choice("rgb", "cmyk", "input"), ("c",)),
            Param("page", integer(1, 99_999), ("p",)),
            Param("density", integer(1, 500), ("d",)),
            Param("secure", boolean),
            Param("docinfo", boolean),
            Param("pageformat", choice(*PAGE_FORMATS)),
            Param("pageorientation", choice("portrait", "landscape")),
        ),
        kind=SAVE,
        doc="the result's format and how it is saved",
    ),
    TaskSpec(
        "quality",
        (Param("value", integer(1, 100), ("v",)),),
        kind=SAVE,
        # no value: filestack-js's schema requires none, so {quality: {}} builds /quality/
        doc="JPEG, WebP and AVIF quality",
    ),
    TaskSpec(
        "compress",
        (Param("metadata", boolean, ("m",)),),
        kind=SAVE,
        doc="optimised encoding",
    ),
    TaskSpec("no_metadata", kind=SAVE, doc="strip EXIF, XMP, ICC and comments"),
    TaskSpec(
        "pjpg",
        (Param("quality", integer(0, 100), ("q",)), Param("metadata", boolean, ("m",))),
        kind=SAVE,
        doc="a progressive JPEG (as output=format:pjpg)",
    ),
    TaskSpec(
        "auto_image",
        # format: set by the server from Accept when it chose AVIF (grammar.negotiated),
        # so that an animation can be answered as WebP (chain.made_output); or: what the
        # client also takes, for an AVIF too costly to make (chain.lighter_than_avif)
        (Param("format", choice("avif")), Param("or", choice("webp"))),
        kind=SAVE,
        doc="WebP or AVIF when the client's Accept takes it, else the input's format",
    ),
    TaskSpec("imagesize", kind=ANSWER, doc="answers the width and height as JSON"),
)
