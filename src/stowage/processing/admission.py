"""A source whose header claims more pixels than a job may decode
(``processing_max_input_pixels``): one check for every position a source is read in.

Refused before a job: the main source's header, read here by the File API's own parsers
(``core.imagesize``: PNG, GIF, JPEG, WebP; no decoder, no Pillow), so that the answer is
the same under any load (while the slots were busy, such a request waited and was
answered ``503 PROCESSING_BUSY`` instead of ``422 IMAGE_TOO_LARGE``).

In the job, every source is held to the same claim (``check_claimed``) besides the size
libvips reads: the main one (``frames.open_source``) and those a task reads
(``composite.opened``: an animation's, a collage's, a watermark's). A GIF's claim is its
logical screen, which libvips does not read when it is far larger than the frames (a
65535x65535 screen of 1x1 frames is 1x1 to it): such a GIF was refused as the main
source and decoded as a watermark, a collage cell or a later frame of ``animate``.
The engine stays the judge of everything else (other formats, pages, frames, the cost).
"""

from __future__ import annotations

from pathlib import Path

from stowage import errors
from stowage.core import imagesize
from stowage.processing import jpegquality
from stowage.processing.base import Job, Limits

#: Read before every job: PNG, GIF and WebP sizes are in their first bytes, a JPEG's
#: frame header after its Exif and ICC segments. One that lies further is the engine's to
#: refuse, as before; the File API reads 1 MiB, but this is on every transformation's path.
HEAD_BYTES = 128 * 1024


def refuse_early(job: Job) -> None:
    """Raises the engine's ``ImageTooLarge`` for ``job`` when its source's header says so."""
    if jpegquality.only_quality(job.chain):  # a file that is no JPEG: answered as it is
        return
    check_claimed(job.source, job.limits, "the image")


def check_claimed(source: Path, limits: Limits, what: str) -> None:
    """Raises ``ImageTooLarge`` when the PNG, GIF, JPEG or WebP header of ``source`` (the
    main source, ``what`` "the image", or another, "a source") claims too many pixels."""
    with source.open("rb") as file:
        found = imagesize.read_here(file.read(HEAD_BYTES))
    if found is None:
        return
    pixels, most = found[0] * found[1], limits.max_input_pixels
    if pixels > most:
        raise errors.ImageTooLarge(f"{what} has {pixels} pixels; at most {most}", max_pixels=most)
