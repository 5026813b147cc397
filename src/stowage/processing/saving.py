"""The engine's save step: a result written to its file within the output byte limit,
with the metadata its image holds, then mended where a saver falls short (an animated
WebP's joined frames, a GIF frame restored to an opaque background, a TIFF's Exif), or
wrapped (an SVG result: a PNG inside an SVG of its size)."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pyvips

from stowage import errors
from stowage.processing import gifblocks, shownframe, svgout, tiffexif, webpanim
from stowage.processing.base import Output

_SUFFIXES = {"jpeg": ".jpg", "png": ".png", "webp": ".webp", "avif": ".avif", "gif": ".gif"}
_PNG = Output("png", "image/png", "png")  # what an SVG result holds


def save(
    image: pyvips.Image, output: Output, dest: Path, options: dict[str, Any], cap: int
) -> None:
    """Saved through a target that counts the bytes: past ``cap`` the write fails, libvips
    stops, and the result is refused, so an oversized result (a tiled 10000x10000 TIFF
    flipped: 300 MB) never fills the disk. TIFF needs a seekable file (to a target libvips
    would hold it whole in memory): it is saved to its file and measured after."""
    if "keep" not in options:
        image = oriented(image, output)
        options = {**options, "keep": kept(image)}
    if output.format == "svg":
        _save_svg(image, dest, options, cap)
        return
    if output.format == "tiff":
        tiffexif.saved(image, dest, options)  # and the Exif libvips' saver leaves out
        capped(dest, cap)
        return
    if output.format == "webp":
        image = webp_loop(image)
    elif output.format == "gif":
        image = gif_delays(image)
    suffix = _SUFFIXES.get(output.format)
    if suffix is None:  # a document format: the service sends those to LibreOffice
        raise errors.UnsupportedConversion(
            f"an image is not saved as {output.format}", parameter="output.format"
        )
    written = 0
    with dest.open("wb") as handle:

        def on_write(chunk: bytes) -> int:
            nonlocal written
            written += len(chunk)
            if written > cap:
                return -1  # libvips sees a failed write and stops
            handle.write(chunk)
            return len(chunk)

        target = pyvips.TargetCustom()
        target.on_write(on_write)
        try:
            image.write_to_target(target, suffix, **options)
        except pyvips.Error as exc:
            if written > cap:
                handle.close()
                dest.unlink(missing_ok=True)
                raise _too_many_bytes(cap) from exc
            raise
    if output.format == "webp":
        webpanim.kept_frames(dest, image)  # frames libwebp joined, apart again
    elif output.format == "gif":  # a frame restored to the background: clear, not opaque
        gifblocks.mend(dest)
    capped(dest, cap)  # what was mended after the save: a few bytes more


#: WebP's loop count is 16 bits, 0 playing forever. libvips reads a GIF's as the times it
#: plays (its NETSCAPE count + 1): a GIF repeated 65535 times plays 65536, which the
#: WebP saver wrapped to 0, forever, and a chain that made its frames equal failed its
#: job (``webpanim`` could not write 65536 in two bytes).
WEBP_MOST_PLAYS = 65535


def webp_loop(image: pyvips.Image) -> pyvips.Image:
    """``image`` with a loop count a WebP holds: the most it can say where it plays more."""
    if not image.get_typeof("loop") or int(image.get("loop")) <= WEBP_MOST_PLAYS:
        return image
    held = image.copy()
    held.set_type(pyvips.GValue.gint_type, "loop", WEBP_MOST_PLAYS)
    return held


#: A GIF frame's delay is 16 bits of hundredths of a second: at most 655.35 s.
GIF_LONGEST_MS = 655_350


def gif_delays(image: pyvips.Image) -> pyvips.Image:
    """``image`` with delays a GIF holds: each rounded half up to its hundredth of a second
    (libvips rounds half to even: a WebP's 25 ms frame was 20, its 35 ms 40) and at most
    655.35 s, where the saver wrapped a longer one (a WebP frame of 700 s played 44.6 s,
    one of 655.36 s none)."""
    if not image.get_typeof("delay"):
        return image
    delays = [int(d) for d in image.get("delay")]
    held = [min(GIF_LONGEST_MS, (max(0, d) + 5) // 10 * 10) for d in delays]
    if held == delays:
        return image
    copied = image.copy()
    copied.set_type(pyvips.GValue.array_int_type, "delay", held)
    return copied


def capped(dest: Path, cap: int) -> None:
    """Refused (and removed) when the file ``dest`` is over ``cap`` bytes; none is fine."""
    try:
        size = dest.stat().st_size
    except FileNotFoundError:
        return
    if size > cap:
        dest.unlink(missing_ok=True)
        raise _too_many_bytes(cap)


#: The metadata a saver may keep, by the field that holds it.
_METADATA = (
    ("exif", "exif-data"),
    ("xmp", "xmp-data"),
    ("iptc", "iptc-data"),
    ("icc", "icc-profile-data"),
)


def kept(image: pyvips.Image) -> str:
    """The saver's ``keep``: the metadata ``image`` holds, no more. libvips' savers write
    an Exif block of their own making when ``keep`` allows Exif (a PNG with none came out
    with a 180-byte ``eXIf`` chunk, a WebP or AVIF with an Exif block)."""
    held = [kind for kind, field in _METADATA if image.get_typeof(field)]
    return ",".join([*held, "other"])


#: The formats whose only place for an orientation is an Exif block.
_EXIF_ORIENTED = frozenset({"jpeg", "png", "webp"})


def oriented(image: pyvips.Image, output: Output) -> pyvips.Image:
    """``image`` with an Exif block holding its orientation when it has an orientation
    (2 to 8) but no Exif, for a format that holds one in Exif only: a TIFF's orientation
    tag (a scanner's, a camera's TIFF) came out of ``output=format:jpg``, ``png`` or
    ``webp`` without it, shown on its side, while its AVIF and TIFF results kept it
    (their savers write it from this field whatever ``keep`` says)."""
    if output.format not in _EXIF_ORIENTED or image.get_typeof("exif-data"):
        return image
    orientation = shownframe.orientation(image)
    if orientation == 1:
        return image
    ifd = struct.pack("<HHHIHH", 1, 0x0112, 3, 1, orientation, 0) + struct.pack("<I", 0)
    copied = image.copy()
    copied.set_type(pyvips.GValue.blob_type, "exif-data", b"Exif\0\0II*\0\x08\0\0\0" + ifd)
    return copied


def _save_svg(image: pyvips.Image, dest: Path, options: dict[str, Any], cap: int) -> None:
    png = dest.with_name(dest.name + ".png")
    try:
        save(image, _PNG, png, options, cap)
        svgout.wrap_png(png, dest, image.width, image.height, cap)
    finally:
        png.unlink(missing_ok=True)


def _too_many_bytes(cap: int) -> errors.ImageTooLarge:
    return errors.ImageTooLarge(f"the result would be over {cap} bytes", max_bytes=cap)
