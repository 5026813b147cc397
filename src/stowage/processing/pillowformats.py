"""Sources the bundled libvips has no loader for, decoded by Pillow in the job process:
JPEG 2000 (OpenJPEG), BMP and ICO.

Every task on a BMP or ICO answered ``415 NOT_AN_IMAGE`` (as a JPEG 2000 did), though
stores took them and the hosted service transforms them. Such a file is recognised by
its signature (not its name); its size is read from its header (``size_of``: Pillow's
parser for JPEG 2000, ``core.bmpsize`` for BMP and ICO, whose Pillow opener decodes the
icon) and held to the pixel limits before a pixel is decoded (``jp2header`` holds the
chain's other limits there too, and answers ``imagesize`` alone from it); then it is
decoded whole and written beside the job's result as an uncompressed TIFF, which the
engine opens in its place (removed when the job is done). An ICO shows its largest entry
(``bmpsize.chosen``), a PNG or a DIB with its AND mask as alpha.
"""

from __future__ import annotations

import contextlib
import io
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import PIL.IcoImagePlugin
import PIL.Image

from stowage import errors
from stowage.core import bmpsize, filetypes
from stowage.processing import jpeg2000
from stowage.processing.base import Limits

#: Pillow's modes that libvips reads from a TIFF as they are.
_MODES = {"L", "LA", "RGB", "RGBA", "I;16"}
_ALPHA_MODES = {"LA", "RGBA"}
_DECODE_ERRORS = (OSError, ValueError, SyntaxError, EOFError, IndexError)
_NAMES = {"image/jp2": "JPEG 2000", "image/bmp": "BMP", "image/x-icon": "ICO"}
#: An ICO's directory read whole at most (65535 entries of 16 bytes).
_MOST_DIRECTORY = 6 + 16 * 65535


def kind_of(source: Path) -> str | None:
    """``image/jp2``, ``image/bmp`` or ``image/x-icon`` by the file's signature (a BMP's
    DIB header size too: "BM" begins texts), else None."""
    with source.open("rb") as file:
        head = file.read(filetypes.SNIFF_BYTES)
    if bmpsize.is_bmp(head):
        return "image/bmp"
    if bmpsize.is_ico(head):
        return "image/x-icon"
    return "image/jp2" if filetypes.sniff(head) == "image/jp2" else None


def size_of(source: Path, kind: str, limits: Limits) -> tuple[int, int]:
    """The width and height the file's header claims, held to the pixel limits."""
    found = _claimed(source, kind)
    if found is None:
        raise errors.InvalidImage(f"the {_NAMES[kind]} image's header cannot be read")
    pixels = found[0] * found[1]
    most = min(limits.max_input_pixels, limits.max_total_pixels)
    if pixels > most:
        raise errors.ImageTooLarge(
            f"the image has {pixels} pixels; at most {most}", max_pixels=most
        )
    return found


def has_alpha(source: Path, kind: str) -> bool:
    """Whether the picture ``_decode`` makes of ``source`` has alpha, from Pillow's reading
    of its header (an ICO's DIB entry, at most 256 a side, is read whole)."""
    with _pillow_errors(kind, lambda: _opened(source, kind)) as image:
        mode = image.mode if image.mode in _MODES else _mode_for(image)
        return mode in _ALPHA_MODES


#: Seconds a megapixel of Pillow's decode and the TIFF save, besides ``cost.DECODE``;
#: measured on one thread, 1000x1000 to 2000x2000: BMP 0.005 (8-bit) to 0.023 (16-bit);
#: an ICO's entries are DIBs or PNGs, at most 256 a side in practice. JPEG 2000's is
#: ``cost.JPEG2000`` (``cost`` is not imported here: it brings the catalogue, which
#: imports ``composite``, which imports this).
DECODE_RATES = {"image/bmp": 0.025, "image/x-icon": 0.025}
#: An RLE BMP's decode is Python in Pillow, a step a run: seconds a megabyte of its
#: runs, besides the pixels'. Measured: runs of 3 pixels, 1 MP in 668 KB, 0.30 s (RLE4
#: 628 KB, 0.39 s); runs of 250, 36 MP in 301 KB, 0.49 s (0.014 s a megapixel).
RLE_RATE = 0.6


def decode_seconds(source: Path, kind: str, pixels: int) -> float:
    """A BMP's or ICO's decode priced: its pixels, and an RLE BMP's (compression 1 or 2
    in its header) runs, at most its file's bytes."""
    seconds = DECODE_RATES[kind] * pixels / 1e6
    with source.open("rb") as file:
        head = file.read(34)
    if kind == "image/bmp" and int.from_bytes(head[30:34], "little") in (1, 2):
        seconds += RLE_RATE * source.stat().st_size / 1e6
    return seconds


def _claimed(source: Path, kind: str) -> tuple[int, int] | None:
    if kind == "image/jp2":
        with _pillow_errors(kind, lambda: PIL.Image.open(source, formats=("JPEG2000",))) as image:
            return int(image.width), int(image.height)
    with source.open("rb") as file:
        if kind == "image/bmp":
            return bmpsize.bmp_size(file.read(32))
        entry = _ico_entry(file.read(_MOST_DIRECTORY))
        if entry is None:
            return None
        file.seek(entry.offset)
        return bmpsize.entry_size(file.read(24))


def _ico_entry(head: bytes) -> bmpsize.IcoEntry | None:
    return bmpsize.chosen(head) if len(head) >= 6 else None


@contextlib.contextmanager
def decoded(source: Path, dest: Path, limits: Limits) -> Iterator[Path]:
    """The engine's hook where a source is opened (the main one, a watermark's): a file
    of these formats is decoded into a TIFF beside ``dest``; any other goes on as it is."""
    kind = kind_of(source)
    if kind is None:
        yield source
        return
    made = dest.with_name(dest.name + ".decoded.tif")
    try:
        size_of(source, kind, limits)
        _decode(source, kind, made)
        yield made
    finally:
        made.unlink(missing_ok=True)


def _decode(source: Path, kind: str, made: Path) -> None:
    with _pillow_errors(kind, lambda: _opened(source, kind)) as image:
        image.load()
        picture = image if image.mode in _MODES else _converted(image)
        saved = jpeg2000.metadata(source) if kind == "image/jp2" else _icc(image)
        picture.save(made, "TIFF", **saved)


def _opened(source: Path, kind: str) -> PIL.Image.Image:
    """The file opened by Pillow, no pixel read: for an ICO, its chosen entry."""
    if kind == "image/jp2":
        return PIL.Image.open(source, formats=("JPEG2000",))
    if kind == "image/bmp":
        return PIL.Image.open(source, formats=("BMP",))
    with source.open("rb") as file:  # an ICO: its chosen entry read, no other
        entry = _ico_entry(file.read(_MOST_DIRECTORY))
        if entry is None:
            raise errors.InvalidImage("the ICO image's directory cannot be read")
        file.seek(entry.offset)
        if bmpsize.is_png(file.read(8)):
            file.seek(entry.offset)
            return PIL.Image.open(io.BytesIO(file.read(entry.length)), formats=("PNG",))
        file.seek(0)
        icon = PIL.IcoImagePlugin.IcoFile(file)  # its directory only
        found = (i for i, e in enumerate(icon.entry) if e.offset == entry.offset)
        image = icon.frame(next(found))  # the DIB, its AND mask as alpha
        image.load()  # while the file is open
        return image


def _mode_for(image: PIL.Image.Image) -> str:
    """A palette or 1-bit image as RGB (RGBA with a transparent index), others RGBA; one
    whose colours are all greys (a 1-bit image, a palette of greys) as L (LA with a
    transparent index), as libvips reads a palette PNG or GIF of greys: a grey source
    gives grey results (docs/transformations.md), where a 1-bit or 16-grey BMP or ICO
    came out RGB and the same picture as a PNG or GIF grey."""
    alpha = "transparency" in image.info
    if image.mode == "1" or (image.mode == "P" and _all_greys(image)):
        return "LA" if alpha else "L"
    if image.mode in {"P", "1"} and not alpha:
        return "RGB"
    return "RGBA"


def _all_greys(image: PIL.Image.Image) -> bool:
    palette = image.getpalette("RGB") or []
    return all(palette[i] == palette[i + 1] == palette[i + 2] for i in range(0, len(palette), 3))


def _converted(image: PIL.Image.Image) -> PIL.Image.Image:
    """``image`` in the mode ``_mode_for`` gives it; a palette's transparent index through
    RGBA, which Pillow applies whatever form the index takes."""
    mode = _mode_for(image)
    if image.mode == "P" and mode == "LA":
        return image.convert("RGBA").convert("LA")
    return image.convert(mode)


def _icc(image: PIL.Image.Image) -> dict[str, Any]:
    """A V5 BMP's or a PNG entry's embedded ICC profile, kept for the engine's colour
    handling (``jpeg2000.metadata`` reads a JP2's)."""
    profile = image.info.get("icc_profile")
    return {"icc_profile": profile} if isinstance(profile, bytes) and profile else {}


@contextlib.contextmanager
def _pillow_errors(kind: str, opening: Callable[[], PIL.Image.Image]) -> Iterator[PIL.Image.Image]:
    """Pillow's failures on an untrusted file as this service's errors."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Pillow's bomb warning: size_of's limit decides
        try:
            with opening() as image:
                yield image
        except PIL.Image.DecompressionBombError as exc:
            raise errors.ImageTooLarge("the image is too large") from exc
        except _DECODE_ERRORS as exc:
            raise errors.InvalidImage(f"the {_NAMES[kind]} image cannot be read: {exc}") from exc
