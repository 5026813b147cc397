"""The libvips engine: opens the source (header first, limits checked before any pixel
is decoded), builds the chain as one lazy pipeline, and saves it to a file.

Sequential access (libvips decodes the image top to bottom in strips, keeping a few
scanlines) unless a task needs random access (rotate, flip, masks). A chain that starts
with ``resize`` shrinks on load: ``pyvips.Image.thumbnail`` asks the JPEG, WebP or
AVIF decoder for a smaller image directly, so a 12-megapixel JPEG is never decoded
whole for a thumbnail.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pyvips

from stowage import errors
from stowage.processing import catalogue, ops, pdf
from stowage.processing.base import Chain, Limits, Output, Rendered, Task
from stowage.processing.geometry import Scaler
from stowage.processing.table import Kind

RASTER_LOADERS = {"jpeg", "png", "webp", "gif", "nsgif", "tiff", "heif", "jxl", "jp2k"}
pyvips.cache_set_max(0)  # libvips' operation cache would keep decoded images between jobs
_SAVERS = {
    "jpeg": "jpegsave",
    "png": "pngsave",
    "webp": "webpsave",
    "avif": "heifsave",
    "gif": "gifsave",
    "tiff": "tiffsave",
}


class VipsEngine:
    def __init__(self, threads_per_job: int = 0) -> None:
        # libvips' own threads per pipeline (process-wide). When the pool already runs a job
        # per core, one each is faster: no hand-offs between threads that share the cores.
        if threads_per_job > 0:
            pyvips.concurrency_set(threads_per_job)

    def render(
        self, source: Path, chain: Chain, output: Output, dest: Path, limits: Limits
    ) -> Rendered:
        deadline = time.monotonic() + limits.seconds
        try:
            with pdf.opened(source, chain, output, dest, limits) as opened:  # PDF sources
                if isinstance(opened, Rendered):
                    return opened
                return self._render(opened.source, opened.chain, output, dest, limits, deadline)
        except pyvips.Error as exc:
            if time.monotonic() >= deadline:
                raise errors.ProcessingTimeout(seconds=limits.seconds) from exc
            raise errors.InvalidImage(f"the image cannot be processed: {_reason(exc)}") from exc

    def _render(
        self,
        source: Path,
        chain: Chain,
        output: Output,
        dest: Path,
        limits: Limits,
        deadline: float,
    ) -> Rendered:
        header = _open(source, chain, limits)
        if chain.wants_size and len(chain.tasks) == 1:
            return _write_size(dest, output, header.width, header.height)
        image = _pipeline(source, header, chain, limits.max_output_dimension)
        if chain.wants_size:
            return _write_size(dest, output, image.width, image.height)
        limit = limits.max_output_dimension
        if image.width > limit or image.height > limit:
            raise errors.ImageTooLarge(
                f"the result would be {image.width}x{image.height}; at most {limit} a side"
            )
        image = _prepared(image, chain, output)
        _stop_at(image, deadline)
        saver = getattr(image, _SAVERS[output.format])
        saver(str(dest), **save_options(chain, output))
        return Rendered(output, image.width, image.height)


def _open(source: Path, chain: Chain, limits: Limits) -> pyvips.Image:
    """The image's header only: libvips decodes nothing until pixels are asked for."""
    _check_raster(source)
    random = any(catalogue.TABLE[t.name].random_access for t in chain.tasks)
    access = "random" if random else "sequential"
    options: dict[str, Any] = {"access": access, "fail_on": "error"}
    page = next((t.get("page") for t in chain.tasks if t.name == "output" and t.get("page")), None)
    if isinstance(page, int):
        options["page"] = page - 1
    try:
        header = pyvips.Image.new_from_file(str(source), **options)
    except pyvips.Error as exc:
        if "not a known" in str(exc) or "unsupported" in str(exc).lower():
            raise errors.NotAnImage() from exc
        raise errors.InvalidImage(f"the image cannot be read: {_reason(exc)}") from exc
    pixels = header.width * header.height
    if pixels > limits.max_input_pixels:
        raise errors.ImageTooLarge(
            f"the image has {pixels} pixels; at most {limits.max_input_pixels}",
            max_pixels=limits.max_input_pixels,
        )
    return header


def _check_raster(source: Path) -> None:
    """Only raster formats, chosen by content before anything is parsed: vector and
    document loaders (SVG, PDF) can follow references to other files, and libvips' own
    formats (``.v``, matrix, CSV) are no images users upload."""
    found = pyvips.vips_lib.vips_foreign_find_load(str(source).encode())
    name = "" if found == pyvips.ffi.NULL else pyvips.ffi.string(found).decode()
    loader = name.removeprefix("VipsForeignLoad").removesuffix("File").lower()
    if loader not in RASTER_LOADERS:
        raise errors.NotAnImage()


def _pipeline(source: Path, header: pyvips.Image, chain: Chain, limit: int) -> pyvips.Image:
    """The image tasks' operations, from the table, as one lazy pipeline. The first one
    shrinks on load when it can (its ``load_op``)."""
    image = header
    todo = [t for t in chain.tasks if catalogue.TABLE[t.name].kind is Kind.IMAGE]
    load_op = catalogue.TABLE[todo[0].name].load_op if todo else None
    if load_op is not None:
        made = load_op(_from_file(source, header), todo.pop(0), header.width, header.height)
        image = _grown(header, made, limit)
    image = ops.srgb(image)
    for task in todo:
        image = _grown(image, _op(task)(image, task), limit)
    return image


def _op(task: Task) -> Any:
    op = catalogue.TABLE[task.name].op
    if op is None:  # the catalogue refuses an image task without one at import
        raise errors.UnsupportedTask(f"task {task.name!r} has no operation", task=task.name)
    return op


def _grown(before: pyvips.Image, after: pyvips.Image, limit: int) -> pyvips.Image:
    """The output-dimension limit holds for every step, not only the result: a chain
    that grows the image past it (an upscale, a rotation, borders) and shrinks it again
    would otherwise make libvips compute a huge intermediate for a small result."""
    if after.width > max(limit, before.width) or after.height > max(limit, before.height):
        raise errors.ImageTooLarge(
            f"a task would make the image {after.width}x{after.height}; at most {limit} a side"
        )
    return after


def _from_file(source: Path, header: pyvips.Image) -> Scaler:
    def scale(width: int, height: int, size: str) -> pyvips.Image:
        # Lazy: this reads headers only, and gives the size libvips' thumbnail would make.
        full = pyvips.Image.thumbnail(
            str(source), width, height=height, size=size, no_rotate=True, fail_on="error"
        )
        shrink = _jpeg_shrink(header, full.width, full.height)
        if shrink == 1:
            return full
        small = pyvips.Image.new_from_file(
            str(source), shrink=shrink, access="sequential", fail_on="error"
        )
        return small.thumbnail_image(full.width, height=full.height, size="force", no_rotate=True)

    return scale


def _jpeg_shrink(header: pyvips.Image, width: int, height: int) -> int:
    """The largest JPEG shrink-on-load (the decoder's 1/2, 1/4, 1/8 DCT scaling) whose
    result still covers ``width`` x ``height``, as Pillow's draft mode picks. libvips'
    thumbnail stops one step earlier (it keeps a factor of two for its final resize):
    for a 12-megapixel photo to 300 px that decodes four times the pixels, a sixth of the
    job's time, for a difference the final Lanczos reduction hides."""
    if header.get("vips-loader") != "jpegload":
        return 1
    for shrink in (8, 4, 2):  # libvips' shrunk size is rounded down (0 is an error)
        if header.width // shrink >= width and header.height // shrink >= height:
            return shrink
    return 1


def _prepared(image: pyvips.Image, chain: Chain, output: Output) -> pyvips.Image:
    settings = _merged(chain, "output")
    background = settings.get("background")
    if background is not None or output.format == "jpeg":
        image = ops.flatten(image, str(background or "white"))
    if settings.get("colorspace") == "cmyk" and output.format in ("jpeg", "tiff"):
        return image.icc_transform("cmyk", embedded=False)
    return ops.srgb(image) if image.interpretation != "b-w" else image


def save_options(chain: Chain, output: Output) -> dict[str, Any]:
    settings = _merged(chain, "output")
    options: dict[str, Any] = {}
    quality = next((t.get("value") for t in reversed(chain.tasks) if t.name == "quality"), None)
    quality = settings.get("quality", quality)
    if isinstance(quality, int) and output.format in ("jpeg", "webp", "avif", "heif"):
        options["Q"] = quality
    compress = settings.get("compress") or any(t.name == "compress" for t in chain.tasks)
    if compress and output.format == "jpeg":
        options["optimize_coding"] = True
    if output.format == "png":
        options["compression"] = 9 if compress else 6
    if compress and output.format == "tiff":
        options["compression"] = "deflate"
    if output.format == "avif":
        options["compression"] = "av1"
        options["effort"] = 2  # libaom at its default effort takes seconds a megapixel
    strip = settings.get("strip") or any(
        t.name == "no_metadata" or (t.name == "compress" and t.get("metadata") is True)
        for t in chain.tasks
    )
    if strip:
        options["keep"] = "none"
    return options


def _merged(chain: Chain, name: str) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for task in chain.tasks:
        if task.name == name:
            merged.update(task.options)
    return merged


def _stop_at(image: pyvips.Image, deadline: float) -> None:
    """libvips reports progress while it computes; past the deadline it is told to stop."""
    image.set_progress(True)

    def on_eval(target: pyvips.Image, progress: Any) -> None:
        if time.monotonic() >= deadline:
            target.set_kill(True)

    image.signal_connect("eval", on_eval)


def _write_size(dest: Path, output: Output, width: int, height: int) -> Rendered:
    dest.write_text(json.dumps({"width": width, "height": height}))
    return Rendered(output, width, height)


def _reason(exc: pyvips.Error) -> str:
    return str(exc.message if hasattr(exc, "message") else exc).strip().splitlines()[0][:200]
