"""What reading the source costs the estimate (``cost.estimate``), before any task: its
decode, at its loader's rate, and the work between the decode and the first task.

Three kinds of that work were priced at a plain decode or not at all (issue 23, measured
2026-12-03 on one libvips thread, CPU normalised by the tests' ``cpuspeed``):

- A progressive JPEG (libvips' ``jpeg-multiscan``, Pillow's ``progressive``: SOF2 and the
  other multi-scan kinds) is decoded scan by scan into a buffer of every coefficient:
  0.013 s a megapixel and 0.027 s a megabyte of the file (2000x2000, Q75-95: a smooth
  picture 0.013-0.021 s a megapixel, a photo 0.015-0.036, noise 0.030-0.067, against
  0.006-0.027 for the same as baseline JPEGs). libjpeg's DCT scaling (shrink-on-load)
  still reads every scan: at 1/2, 1/4, 1/8 it cost 0.6-1 times the full decode (a
  baseline one 0.3-0.7), so it is priced whole whatever the shrink.
- A profile the result will not carry is applied before the tasks (``profiles``):
  0.015-0.018 s a megapixel of what it is applied to (a 12 MP Display P3 PNG), the
  source's size, or the size a JPEG is shrunk to on load, or for WebP and HEIF the
  scaled size (``vips._from_file``). A 16-bit source's profile is applied as it is read
  (``samples.read``) and priced with the reading (``samples.RATE``).
- 16-bit samples (``deep``): a 16-bit PNG inflates twice the bytes, 0.026 s a
  megapixel against 0.0155 for the same photo in 8 bits; every source read as 16 bits
  is made 8 before the tasks (``ops.srgb``: 0.001-0.003 s a megapixel; TIFF's whole
  extra).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import pyvips

from stowage.processing import profiles, samples
from stowage.processing.base import Task
from stowage.processing.table import Kind, TaskSpec

DECODE = 0.015  # seconds a megapixel decoded
#: Loaders slower than ``DECODE``, measured on one thread on 1500x1500 noise (a photo's
#: in brackets): WebP lossy 0.083 (0.035), lossless 0.037 (0.042); AVIF 0.13 (0.048);
#: JPEG 0.012, PNG and GIF 0.016, TIFF 0.005. 60 frames of a 600x600 WebP of noise
#: resized to 300 px took 5.8 s, estimated at 2.1 with every decode at JPEG's rate.
DECODES = {"webpload": 0.09, "heifload": 0.13}
#: A JPEG 2000 file decoded by Pillow's OpenJPEG and saved as the TIFF the engine reads
#: (jpeg2000.py), besides ``DECODE``: 0.08 s a megapixel lossy, 0.06-0.18 lossless,
#: 0.5 for lossless noise (docs/decisions.md, "Task rates").
JPEG2000 = 0.2
#: A PNG or JPEG inside an SVG (``data:``, ``svgimages.py``), decoded whole by librsvg
#: and drawn into the canvas: 0.010-0.0125 s a megapixel measured (one thread, flat
#: images of 2000x2000 to 8000x8000; a noisy one costs more a megapixel, but the SVG's
#: 10 MiB hold only a few megapixels of noise). Other formats at ``DECODES``' rates.
EMBEDDED = 0.015
#: A progressive JPEG: seconds a megapixel, and a megabyte of the file (at most
#: ``MOST_BYTES`` a pixel: metadata is no scan), in place of ``DECODE``.
PROGRESSIVE, PROGRESSIVE_BYTES, MOST_BYTES = 0.013, 0.027, 6
PROFILE = 0.016  # a dropped profile's transform, seconds a megapixel it is applied to
#: CMYK samples made sRGB (``ops.srgb``, LittleCMS), seconds a megapixel: 0.034 for noise
#: and photos (one thread, 2000x1500, normalised, 2026-12-07); unpriced, a 12 MP CMYK JPEG
#: flipped took 0.52 s where an RGB one took 0.08.
CMYK_IMPORT = 0.035
#: A CMYK JPEG's decode against ``DECODE``: four planes kept whole (2.7 times the
#: coefficients of RGB at 4:2:0): noise 0.021-0.024 s a megapixel, a photo 0.011-0.016.
CMYK_JPEG = 1.6
#: 16-bit samples: the decode's extra by loader, and the conversion to 8 bits.
DEEP_DECODES = {"pngload": 0.015}
DEEP = 0.003
_SCALED_LOADS = frozenset({"webpload", "heifload"})  # as vips._SCALED_LOADS


@dataclass(frozen=True)
class Decoding:
    """What the decode costs besides the loader's rate, read from the header."""

    progressive_bytes: int = 0  # the file's bytes, for a progressive JPEG
    profile: bool = False  # a profile the result drops, applied before the tasks
    deep: bool = False  # samples read as 16 bits, made 8 before the tasks
    floats: bool = False  # a 16-bit RGB profile applied through XYZ in floats (``samples``)
    gif_density: float | None = None  # a GIF's (gifblocks.coded_density): its save's rate
    cmyk: bool = False  # CMYK samples, made sRGB before the tasks (CMYK_IMPORT)


class Header(Protocol):
    """What the estimate reads of an opened source (``frames.Opened``)."""

    @property
    def frames(self) -> int: ...
    @property
    def decoded_frames(self) -> int: ...
    @property
    def frame_height(self) -> int: ...
    @property
    def frame_pixels(self) -> int: ...
    @property
    def loader(self) -> str: ...
    @property
    def alpha(self) -> bool: ...
    @property
    def read(self) -> bool: ...
    @property
    def decoding(self) -> Decoding: ...


@dataclass(frozen=True)
class Still:
    """A ``Header`` of one frame read from a file's own header, before libvips opens it
    (the Pillow path of a JPEG, a JPEG 2000 file)."""

    frame_height: int
    frame_pixels: int
    frames: int = 1
    decoded_frames: int = 1
    loader: str = "jpegload"
    alpha: bool = False
    read: bool = False
    decoding: Decoding = Decoding()


def decoding(
    image: pyvips.Image, size: int, saved: samples.Saved, floats: bool = False
) -> Decoding:
    """``image`` (as ``samples.read`` made it) of a file of ``size`` bytes, to be saved
    as ``saved`` (its format, whether its profile is dropped); ``floats``: whether the
    reading applied an RGB profile through floats (``samples.in_floats``)."""
    multiscan = image.get_typeof("jpeg-multiscan") and image.get("jpeg-multiscan") == 1
    dropped = profiles.profile(image) is not None and not profiles.carried(image, *saved)
    cmyk = image.interpretation == "cmyk"
    deep = image.format == "ushort"
    return Decoding(size if multiscan else 0, dropped, deep, floats=floats, cmyk=cmyk)


def decoded(header: Header) -> float:
    """Seconds the source's decode takes."""
    pixels = header.frame_pixels * header.decoded_frames
    decoding = header.decoding
    if decoding.progressive_bytes:
        counted = min(decoding.progressive_bytes, MOST_BYTES * pixels)
        return (PROGRESSIVE * pixels + PROGRESSIVE_BYTES * counted) / 1e6
    rate = DECODES.get(header.loader, DECODE)
    rate *= CMYK_JPEG if decoding.cmyk and header.loader == "jpegload" else 1.0
    return (rate + (DEEP_DECODES.get(header.loader, 0.0) if decoding.deep else 0.0)) * pixels / 1e6


def reading(
    header: Header, tasks: Sequence[Task], width: int, table: Mapping[str, TaskSpec]
) -> float:
    """Seconds of the work between the decode and the first task, computed again with
    the first task (``costholds.reading``): ``samples``' conversion, 16 bits made 8, a
    dropped profile's transform at the size it is applied to. ``tasks``: the chain's,
    in the order they run; ``width``: the source's; ``table``: the task table (the
    catalogue, which imports ``frames``, which imports this)."""
    pixels = header.frame_pixels * header.decoded_frames
    seconds = samples.RATE * pixels if header.read else 0.0
    seconds += DEEP * pixels if header.decoding.deep else 0.0
    seconds += samples.FLOATS * pixels if header.decoding.floats else 0.0
    if header.decoding.cmyk:  # its own profile or libvips' CMYK one, either way this rate
        seconds += CMYK_IMPORT * _profiled(header, tasks, width, table)
    elif header.decoding.profile:
        seconds += PROFILE * _profiled(header, tasks, width, table)
    return seconds / 1e6


def _profiled(
    header: Header, tasks: Sequence[Task], width: int, table: Mapping[str, TaskSpec]
) -> int:
    """Pixels the dropped profile is applied to: the source's, unless a first task that
    shrinks on load (``vips._pipeline``, a still with no other file) scales it first."""
    kinds = [table[t.name].kind for t in tasks]
    whole = header.frame_pixels * header.frames
    image = [t for t, kind in zip(tasks, kinds, strict=True) if kind is Kind.IMAGE]
    if header.frames > 1 or Kind.FILES in kinds or not image or header.read:
        return whole
    first, height = image[0], header.frame_height
    if table[first.name].load_op is None or header.decoding.deep:
        return whole
    factor = _scale(
        table[first.name], first, width, height
    )  # the scaled image's side over the source's
    if header.loader in _SCALED_LOADS:  # applied after the scaling
        return int(whole * factor * factor)
    if header.loader != "jpegload":
        return whole
    shrink = next((s for s in (8, 4, 2) if s * factor <= 1), 1)  # vips._jpeg_shrink
    return (width // shrink) * (height // shrink)


def _scale(spec: TaskSpec, task: Task, width: int, height: int) -> float:
    """The largest ratio of a side the task's scaling makes (its result or the larger
    image it works on, ``works_on``: a cover) to the source's side."""
    made = [spec.size(task, width, height)] if spec.size is not None else []
    made += [spec.works_on(task, width, height)] if spec.works_on is not None else []
    return max((max(w / width, h / height) for w, h in made), default=1.0)
