"""A source whose header claims more pixels than a job may decode
(``processing_max_input_pixels``): one check for every position a source is read in.

Refused before a job: the main source's header, read here by the File API's own parsers
(``core.imagesize``: PNG, GIF, JPEG, WebP, BMP, ICO; no decoder, no Pillow), so that the
answer is the same under any load (while the slots were busy, such a request waited and
was answered ``503 PROCESSING_BUSY`` instead of ``422 IMAGE_TOO_LARGE``).

In the job, every source is held to the same claim (``check_claimed``) besides the size
libvips reads: the main one (``frames.open_source``) and those a task reads
(``composite.opened``: an animation's, a collage's, a watermark's). A GIF's claim is its
logical screen, which libvips does not read when it is far larger than the frames (a
65535x65535 screen of 1x1 frames is 1x1 to it): such a GIF was refused as the main
source and decoded as a watermark, a collage cell or a later frame of ``animate``.
The engine stays the judge of everything else (other formats, pages, frames, the cost).

The pool reads it only for a job that may not start at once (``JobPool.run``): its
first ``FIRST_BYTES`` on the event loop (a local file, the spool's or the store's, that
the job reads right after), and the rest of ``HEAD_BYTES`` in a thread only for a JPEG
whose frame header lies further (an Exif thumbnail, an ICC profile before it), or for an
ICO whose directory or shown entry does (``core.headwalk``: read where it lies).
"""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

from stowage import errors
from stowage.core import bmpsize, headwalk, imagesize
from stowage.processing import jpegquality
from stowage.processing.base import Job, Limits

#: Read before every job: PNG, GIF and WebP sizes are in their first bytes, a JPEG's
#: frame header after its Exif and ICC segments. One that lies further is the engine's to
#: refuse, as before; the File API reads 1 MiB, but this is on every transformation's path.
HEAD_BYTES = 128 * 1024
#: PNG, GIF and WebP sizes, and a JPEG's frame header when no Exif or ICC segment is
#: larger: one page of the file.
FIRST_BYTES = 4096
_JPEG = b"\xff\xd8"


def refuse_early(job: Job, head_bytes: int = HEAD_BYTES) -> bool:
    """Raises the engine's ``ImageTooLarge`` for ``job`` when its source's header says so;
    False when its first ``head_bytes`` (less than ``HEAD_BYTES``) could not tell: a JPEG's
    frame header, or an ICO's directory or shown entry, further."""
    if jpegquality.only_quality(job.chain):  # a file that is no JPEG: answered as it is
        return True
    with job.source.open("rb") as file:
        head = file.read(head_bytes)
        if _claimed_within(head, job.limits, "the image") or len(head) < head_bytes:
            return True
        if head_bytes < HEAD_BYTES:  # the first page, on the event loop: more in a thread
            return not (head.startswith(_JPEG) or bmpsize.is_ico(head))
        if bmpsize.is_ico(head):  # a seek and a small read, as the job's own
            found = headwalk.walked(headwalk.further(head), _reads(file))
            _held(found, job.limits, "the image")
    return True


def check_claimed(source: Path, limits: Limits, what: str) -> None:
    """Raises ``ImageTooLarge`` when the PNG, GIF, JPEG or WebP header of ``source`` (the
    main source, ``what`` "the image", or another, "a source") claims too many pixels."""
    with source.open("rb") as file:
        _claimed_within(file.read(HEAD_BYTES), limits, what)


def _claimed_within(head: bytes, limits: Limits, what: str) -> bool:
    """Whether ``head`` told the size (``ImageTooLarge`` when it is past the limit)."""
    return _held(imagesize.read_here(head), limits, what)


def _held(found: tuple[int, int] | None, limits: Limits, what: str) -> bool:
    """Whether a size was ``found`` (``ImageTooLarge`` when it is past the limit)."""
    if found is None:
        return False
    pixels, most = found[0] * found[1], limits.max_input_pixels
    if pixels > most:
        raise errors.ImageTooLarge(f"{what} has {pixels} pixels; at most {most}", max_pixels=most)
    return True


def _reads(file: BinaryIO) -> headwalk.Reader:
    def read(at: int, least: int, _most: int) -> bytes:
        file.seek(at)
        return file.read(least)

    return read
