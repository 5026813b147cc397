"""A JPEG 2000, BMP or ICO source's chain, from its header alone (no pixel); and a
HEIC's size, from its boxes.

``imagesize`` or ``metadata`` alone is answered from it (a 10000x10000 tiled JP2 of
221 KB was decoded whole, 21 s and 457 MB, for its size); every other chain is held
there to the pixel limits, its image result to the side limit, and its estimate, the
decode counted (``cost.JPEG2000``, ``pillowformats.decode_seconds``), to the cost
limits, before ``pillowformats.decoded`` decodes a pixel (a header of 1x100000000 was
decoded, 1.3 GB, to be refused after).
"""

from __future__ import annotations

import json
from pathlib import Path

import pyvips

from stowage import errors
from stowage.core import filetypes, heifsize
from stowage.processing import chain as chains
from stowage.processing import cost, frames, pillowformats
from stowage.processing.base import Chain, Limits, Output, Rendered

#: A HEIF file's boxes are read from its first MiB, as the File API reads them
#: (``core.imagesize``, not imported: it brings the registry into every job process).
_HEIF_HEAD = 1 << 20
#: Tasks answered from the header when alone in a chain.
_FROM_HEADER = {"imagesize", "metadata"}


def answered(
    source: Path, chain: Chain, output: Output, dest: Path, limits: Limits
) -> Rendered | None:
    """For a file Pillow decodes (JPEG 2000, BMP, ICO: ``pillowformats``): ``imagesize``
    or ``metadata`` alone answered in ``dest``; any other chain held to the limits
    (refused with their error), then None. The same two answers for a HEIC, from its
    boxes (no HEVC decoder here: anything else is ``frames.check_raster``'s 415). None
    for any other file."""
    alone = len(chain.tasks) == 1 and chain.tasks[0].name in _FROM_HEADER
    kind = pillowformats.kind_of(source)
    if kind is not None:  # JPEG 2000, BMP, ICO: decoded by Pillow, once this holds
        width, height = pillowformats.size_of(source, kind, limits)
        if not alone:
            _priced(source, kind, (width, height), chain, output, limits)
            return None
    elif not alone or (shown := _heic_size(source)) is None:
        return None
    else:
        width, height = shown
    answer = chains.answer_of(chain)
    if answer is None:  # imagesize
        dest.write_text(json.dumps({"width": width, "height": height}))
    else:  # a lazy image of that size: its facts, no pixel made
        dest.write_text(answer.render(pyvips.Image.black(width, height), chain.tasks[0]))
    return Rendered(output, width, height)


def _heic_size(source: Path) -> tuple[int, int] | None:
    with source.open("rb") as file:
        head = file.read(_HEIF_HEAD)
    if filetypes.sniff(head) != "image/heic":
        return None
    try:
        return heifsize.shown_size(head)
    except (IndexError, ValueError):  # damaged boxes: the engine's 415 says no decoder
        return None


def _priced(
    source: Path, kind: str, size: tuple[int, int], chain: Chain, output: Output, limits: Limits
) -> None:
    """The chain's estimate with the decode, and the side of an image result (which the
    engine holds to the same limit once it is made)."""
    width, height = size
    alpha = pillowformats.has_alpha(source, kind)
    header = cost.Still(height, width * height, alpha=alpha)
    side = limits.max_output_dimension
    holds = limits.max_total_pixels  # ops.held's budget
    seconds = cost.estimate(header, chain, width, output.format, (), side, None, holds)
    pixels = width * height
    if kind == "image/jp2":
        seconds += cost.JPEG2000 * pixels / 1e6
    else:
        seconds += pillowformats.decode_seconds(source, kind, pixels)
    cost.check(seconds, limits)
    if chain.wants_size or chains.answer_of(chain) is not None:
        return  # an answer, not an image: no side limit on it
    if any(t.name in frames.ONE_FRAME for t in chain.tasks):
        return  # its size is the cells' or frames' (the engine checks it)
    made_width, made_height, _ = cost.made_size(header, chain, width)
    if max(made_width, made_height) > side:
        raise errors.ImageTooLarge(
            f"the result would be {made_width}x{made_height}; at most {side} a side"
        )
