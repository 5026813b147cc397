"""JPEG 2000 sources, decoded by Pillow (OpenJPEG) in the job process.

The libvips of the ``pyvips-binary`` wheel has no JPEG 2000 loader (nor a JPEG XL one):
a ``.jp2`` answered ``415 NOT_AN_IMAGE`` to every task while the File API read its size
through Pillow. Here a JPEG 2000 file (recognised by its signature, not its name) has its
size read from its header and held to ``processing_max_input_pixels`` before a pixel is
decoded; then it is decoded whole and written beside the job's result as an uncompressed
TIFF, which the engine opens in its place (removed when the job is done). JPEG XL has no
decoder here: it stays ``415 NOT_AN_IMAGE``.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from pathlib import Path

import PIL.Image

from stowage import errors
from stowage.processing.base import Limits

#: A JP2 file's signature box, and a bare codestream's SOC and SIZ markers.
_SIGNATURES = (b"\x00\x00\x00\x0cjP  \r\n\x87\n", b"\xff\x4f\xff\x51")
#: Pillow's modes for JPEG 2000, and the ones libvips reads from a TIFF as they are.
_MODES = {"L", "LA", "RGB", "RGBA", "I;16"}


def is_jpeg2000(source: Path) -> bool:
    with source.open("rb") as file:
        head = file.read(12)
    return any(head.startswith(signature) for signature in _SIGNATURES)


@contextlib.contextmanager
def decoded(source: Path, dest: Path, limits: Limits) -> Iterator[Path]:
    """The engine's hook where a source is opened (the main one, a watermark's): a JPEG
    2000 file is decoded into a TIFF beside ``dest``; any other goes on as it is."""
    if not is_jpeg2000(source):
        yield source
        return
    made = dest.with_name(dest.name + ".jp2.tif")
    try:
        _decode(source, made, limits)
        yield made
    finally:
        made.unlink(missing_ok=True)


def _decode(source: Path, made: Path, limits: Limits) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Pillow's bomb warning: the limit below decides
        try:
            with PIL.Image.open(source, formats=("JPEG2000",)) as image:
                pixels = image.width * image.height
                if pixels > limits.max_input_pixels:
                    raise errors.ImageTooLarge(
                        f"the image has {pixels} pixels; at most {limits.max_input_pixels}",
                        max_pixels=limits.max_input_pixels,
                    )
                image.load()
                picture = image if image.mode in _MODES else image.convert("RGBA")
                picture.save(made, "TIFF")
        except PIL.Image.DecompressionBombError as exc:
            raise errors.ImageTooLarge(
                "the image is too large", max_pixels=limits.max_input_pixels
            ) from exc
        except (OSError, ValueError, SyntaxError) as exc:
            raise errors.InvalidImage(f"the JPEG 2000 image cannot be read: {exc}") from exc
