"""A refusal that needs no job: a PNG, GIF, JPEG or WebP source whose header claims more
pixels than a job may decode (``processing_max_input_pixels``).

The job process refuses it too, in milliseconds, but only once it has a slot: while the
slots were busy, such a request waited and was answered ``503 PROCESSING_BUSY`` instead
of ``422 IMAGE_TOO_LARGE``. Here the header is read by the File API's own parsers
(``core.imagesize``: no decoder, no Pillow), so the answer is the same under any load.
The engine stays the judge of everything else (other formats, pages, frames, the cost).
"""

from __future__ import annotations

from stowage import errors
from stowage.core import imagesize
from stowage.processing import jpegquality
from stowage.processing.base import Job

#: Read before every job: PNG, GIF and WebP sizes are in their first bytes, a JPEG's
#: frame header after its Exif and ICC segments. One that lies further is the engine's to
#: refuse, as before; the File API reads 1 MiB, but this is on every transformation's path.
HEAD_BYTES = 128 * 1024


def refuse_early(job: Job) -> None:
    """Raises the engine's ``ImageTooLarge`` for ``job`` when its source's header says so."""
    if jpegquality.only_quality(job.chain):  # a file that is no JPEG: answered as it is
        return
    with job.source.open("rb") as file:
        found = imagesize.read_here(file.read(HEAD_BYTES))
    if found is None:
        return
    pixels, most = found[0] * found[1], job.limits.max_input_pixels
    if pixels > most:
        raise errors.ImageTooLarge(
            f"the image has {pixels} pixels; at most {most}", max_pixels=most
        )
