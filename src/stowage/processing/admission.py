"""A refusal that needs no job: a PNG, GIF, JPEG or WebP source whose header claims more
pixels than a job may decode (``processing_max_input_pixels``).

The job process refuses it too, in milliseconds, but only once it has a slot: while the
slots were busy, such a request waited and was answered ``503 PROCESSING_BUSY`` instead
of ``422 IMAGE_TOO_LARGE``. Here the header is read by the File API's own parsers
(``core.imagesize``: no decoder, no Pillow), so the answer is the same under any load.
The engine stays the judge of everything else (other formats, pages, frames, the cost).

The pool reads it only for a job that may not start at once (``JobPool.run``): its
first ``FIRST_BYTES`` on the event loop (a local file, the spool's or the store's, that
the job reads right after), and the rest of ``HEAD_BYTES`` in a thread only for a JPEG
whose frame header lies further (an Exif thumbnail, an ICC profile before it).
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
#: PNG, GIF and WebP sizes, and a JPEG's frame header when no Exif or ICC segment is
#: larger: one page of the file.
FIRST_BYTES = 4096
_JPEG = b"\xff\xd8"


def refuse_early(job: Job, head_bytes: int = HEAD_BYTES) -> bool:
    """Raises the engine's ``ImageTooLarge`` for ``job`` when its source's header says so;
    False when its first ``head_bytes`` could not tell (a JPEG's frame header further)."""
    if jpegquality.only_quality(job.chain):  # a file that is no JPEG: answered as it is
        return True
    with job.source.open("rb") as file:
        head = file.read(head_bytes)
    found = imagesize.read_here(head)
    if found is None:
        return len(head) < head_bytes or not head.startswith(_JPEG)
    pixels, most = found[0] * found[1], job.limits.max_input_pixels
    if pixels > most:
        raise errors.ImageTooLarge(
            f"the image has {pixels} pixels; at most {most}", max_pixels=most
        )
    return True
