"""Pillow for one chain shape: a JPEG resized smaller (or kept at its size) and saved as
WebP or JPEG.

The most common request (a photo's thumbnail, ``resize=width:300/output=format:webp``)
costs less with Pillow than with libvips: Pillow's draft mode asks libjpeg for the
smallest DCT scale (1/2, 1/4, 1/8) that still covers the result, then one Lanczos
reduction, with no pipeline to build (docs/decisions.md, issue 23). A JPEG only
converted to WebP (``output=format:webp,quality:80``) is Pillow's too: its libwebp
encodes a 2-megapixel photo in about two thirds of libvips' time. It runs in the same
job process as libvips, under the same limits, and gives what the libvips path gives:

- the same size (libvips' thumbnail arithmetic, ``size``), never an upscale;
- the pixels as decoded, not turned upright: libvips' path does not autorotate either,
  and keeps the EXIF orientation for viewers to apply;
- the same metadata: what the source had of EXIF (with the new size), ICC profile and
  XMP, and no more (a JPEG without EXIF gained one here); a source with IPTC saved as
  JPEG, which holds it, is libvips' (Pillow writes no IPTC); the same saver settings
  (quality 75 unless asked; JPEG 4:2:0 below quality 90, as libvips chooses).

Anything else goes to libvips: another task or option, a source that is no plain
8-bit RGB JPEG, an upscale, or a source over a limit (libvips refuses it, with the same
answer as ever). ``render`` answers None for those before any pixel is decoded.
"""

from __future__ import annotations

import io
import time
import warnings
from pathlib import Path
from typing import Any

import PIL.Image
from PIL import JpegImagePlugin

from stowage import errors
from stowage.processing import cost, decodecost
from stowage.processing.base import Chain, Limits, Output, Rendered, Task
from stowage.processing.geometry import UNBOUNDED, binds_by_width, kept_side, resize_box
from stowage.processing.saverates import DEFAULT_QUALITY, WHOLE_CHROMA_FROM

SAVERS = {"jpeg": "JPEG", "webp": "WEBP"}
#: The chain keeps the image's size: no resize, only how to save it.
SAME_SIZE = Task("resize")
_RESIZE_OPTIONS = {"width", "height", "fit"}
_FITS = {"clip", "max", "scale"}
_EXIF_IFD, _PIXEL_X, _PIXEL_Y = 0x8769, 0xA002, 0xA003
_DECODE_ERRORS = (OSError, SyntaxError, ValueError, EOFError, IndexError, TypeError)


def render(
    source: Path,
    chain: Chain,
    output: Output,
    dest: Path,
    limits: Limits,
    options: dict[str, Any],
) -> Rendered | None:
    """The result in ``dest``, or None when this chain or source is libvips' to render.
    ``options``: libvips' save options for the chain (``vips.save_options``)."""
    task = _resize_task(chain, output, options)
    if task is None:
        return None
    deadline = time.monotonic() + limits.seconds
    image = _open(source)
    if image is None:
        return None
    with image:
        if output.format == "jpeg" and _has_iptc(image):
            return None  # libvips keeps it
        width, height = image.size
        if width * height > min(limits.max_input_pixels, limits.max_total_pixels):
            return None  # libvips refuses it, with its answer
        box = (width, height) if task is SAME_SIZE else size(task, width, height)
        if box is None or max(box) > limits.max_output_dimension:
            return None
        metadata = _metadata(image, box)
        if metadata is None:
            return None  # an Exif block Pillow cannot write again: libvips keeps it
        header = cost.Still(height, width * height, decoding=_decoding(image, source))
        cost.check(cost.estimate(header, chain, width, output.format), limits)
        data = _encoded(
            image, box, output, int(options.get("Q", DEFAULT_QUALITY)), metadata, deadline, limits
        )
    if len(data) > limits.max_output_bytes:
        raise errors.ImageTooLarge(
            f"the result would be over {limits.max_output_bytes} bytes",
            max_bytes=limits.max_output_bytes,
        )
    dest.write_bytes(data)
    return Rendered(output, box[0], box[1])


def _resize_task(chain: Chain, output: Output, options: dict[str, Any]) -> Task | None:
    """The chain's resize when the chain is one resize and how to save it (``SAME_SIZE``
    when it is only how to save it), else None."""
    if output.format not in SAVERS or chain.output_format not in (None, "jpg", "webp"):
        return None
    if set(options) - {"Q"} or chain.store is not None:
        return None
    resizes = [t for t in chain.tasks if t.name == "resize"]
    if len(resizes) > 1 or not chain.tasks or not all(_plain(t) for t in chain.tasks):
        return None
    if resizes:
        return resizes[0]
    # Kept at its size: WebP only, whose encoder holds the whole picture anyway; a JPEG
    # saved again streams through libvips in strips, Pillow would hold it whole.
    return SAME_SIZE if output.format == "webp" else None


def _plain(task: Task) -> bool:
    names = {name for name, _ in task.options}
    if task.name == "resize":
        return names <= _RESIZE_OPTIONS and task.get("fit", "clip") in _FITS
    if task.name == "output":
        return names <= {"format", "quality"} and not isinstance(task.get("quality"), str)
    return task.name == "quality"


def size(task: Task, width: int, height: int) -> tuple[int, int] | None:
    """The size libvips' path makes (``geometry.resize_with`` through libvips' thumbnail:
    a JPEG shrink-on-load leaving a factor of two, rounded down, then a resize rounded to
    the nearest pixel, then the aspect kept to within a pixel), or None for an upscale,
    which stays libvips'."""
    box_w, box_h = resize_box(task, width, height)
    force = task.get("fit") == "scale"
    one_side = task.get("width") is None or task.get("height") is None
    by_width = task.get("width") is not None
    if one_side:
        box_w, box_h = (box_w, UNBOUNDED) if by_width else (UNBOUNDED, box_h)
        force = False
    shrink = _shrinks(width, height, box_w, box_h, force)
    if min(shrink) < 1:
        return None
    common = min(shrink)
    load = 8 if common >= 16 else 4 if common >= 8 else 2 if common >= 4 else 1
    loaded_w, loaded_h = width // load, height // load
    if loaded_w < 1 or loaded_h < 1:
        return None
    across, down = _shrinks(loaded_w, loaded_h, box_w, box_h, force)
    across, down = min(across, loaded_w), min(down, loaded_h)
    # libvips' thumbnail hands resize the scale 1/shrink, and reduce divides by 1/scale:
    # that round trip decides a side at exactly half a pixel (4000x3000 to width 302 is
    # 302x226, where 3000 * 302 / 4000 is 226.5).
    made_w = int(loaded_w / (1.0 / (1.0 / across)) + 0.5)
    made_h = int(loaded_h / (1.0 / (1.0 / down)) + 0.5)
    if force:
        return made_w, made_h
    if binds_by_width(width, height, box_w, box_h):  # the other side as libvips' path has it
        return made_w, kept_side(made_w, width, height, True)
    return kept_side(made_h, width, height, False), made_h


def _shrinks(width: int, height: int, box_w: int, box_h: int, force: bool) -> tuple[float, float]:
    across, down = width / box_w, height / box_h
    if force:
        return across, down
    both = max(across, down)
    return both, both


def _open(source: Path) -> JpegImagePlugin.JpegImageFile | None:
    """The source's header when it is an 8-bit RGB JPEG (or the first image of an MPO)."""
    try:
        with warnings.catch_warnings():
            # Pillow's own bomb limit: ours (processing_max_input_pixels) is checked next.
            warnings.simplefilter("ignore", PIL.Image.DecompressionBombWarning)
            image = PIL.Image.open(source, formats=("JPEG",))
    except (PIL.UnidentifiedImageError, PIL.Image.DecompressionBombError, *_DECODE_ERRORS):
        return None  # no JPEG, or one whose header Pillow cannot read: libvips answers
    if not isinstance(image, JpegImagePlugin.JpegImageFile) or image.mode != "RGB":
        image.close()
        return None
    return image


def _encoded(
    image: JpegImagePlugin.JpegImageFile,
    box: tuple[int, int],
    output: Output,
    quality: int,
    metadata: dict[str, Any],
    deadline: float,
    limits: Limits,
) -> bytes:
    try:
        if box != image.size:
            image.draft("RGB", box)  # libjpeg's DCT scaling: the smallest one covering ``box``
        image.load()
        _stop_at(deadline, limits)
        same = image.size == box
        resized = image if same else image.resize(box, PIL.Image.Resampling.LANCZOS)
    except _DECODE_ERRORS as exc:
        raise errors.InvalidImage(f"the image cannot be processed: {_reason(exc)}") from exc
    _stop_at(deadline, limits)
    out = io.BytesIO()
    if output.format == "jpeg":
        subsampling = "4:4:4" if quality >= WHOLE_CHROMA_FROM else "4:2:0"
        resized.save(out, "JPEG", quality=quality, subsampling=subsampling, **metadata)
    else:
        resized.save(out, "WEBP", quality=quality, method=4, **metadata)
    return out.getvalue()


def _decoding(image: JpegImagePlugin.JpegImageFile, source: Path) -> decodecost.Decoding:
    """A progressive JPEG (SOF2 and the other multi-scan kinds, Pillow's ``progressive``)
    is priced by its bytes: libjpeg's DCT scaling (draft mode) still reads every scan."""
    progressive = bool(image.info.get("progressive"))
    return decodecost.Decoding(source.stat().st_size if progressive else 0)


def _has_iptc(image: JpegImagePlugin.JpegImageFile) -> bool:
    """An APP13 Photoshop segment, where IPTC is held (libvips reads it as ``iptc-data``)."""
    return any(m == "APP13" and d.startswith(b"Photoshop 3.0") for m, d in image.applist)


def _metadata(image: JpegImagePlugin.JpegImageFile, box: tuple[int, int]) -> dict[str, Any] | None:
    """What libvips keeps: the source's EXIF (its pixel size set to the result's), ICC
    profile and XMP, each when the source has one. JPEG comments are not kept, as libvips
    does not. None when Pillow cannot write the EXIF again: a value of another type than
    its tag's (an ASCII orientation, a float where a short is due, a short past 65535),
    which cameras write and libvips keeps; Pillow raised there, which ended the job
    process, and the photo was refused (``422 INVALID_IMAGE``) though libvips renders it."""
    kept: dict[str, Any] = {}
    if image.info.get("exif"):
        try:
            exif = image.getexif()
            sub = exif.get_ifd(_EXIF_IFD)
            sub[_PIXEL_X], sub[_PIXEL_Y] = box
            kept["exif"] = exif.tobytes()
        except Exception:  # untrusted tags: any of Pillow's packers may refuse one
            return None
    for name in ("icc_profile", "xmp"):
        if image.info.get(name):
            kept[name] = image.info[name]
    return kept


def _stop_at(deadline: float, limits: Limits) -> None:
    if time.monotonic() >= deadline:
        raise errors.ProcessingTimeout(seconds=limits.seconds)


def _reason(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
