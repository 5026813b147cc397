"""Tasks that read several sources: ``watermark`` (a second stored image over the
first), ``collage`` (the source and other images in a grid), ``animate`` (images as the
frames of a GIF or WebP) and ``zip`` (the stored files in one archive, made by
``archive.py`` without the engine).

The service authorises and reads every source named in the URL before the job starts
and sends their paths with it (``Job.sources``: handle and path, in the URL's order);
the job process makes them known to these operations for the job's length
(``using``), so that an operation keeps the table's ``(image, task)`` shape. Each extra
source is checked like the main one: raster formats only, and the page decoded held to
``Limits.max_input_pixels``; the result of a collage or an animation to the output and
frame limits.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import pyvips

from stowage import errors
from stowage.processing import admission, frames, ops, pillowformats, samples, svg
from stowage.processing.base import Limits, Task, Value
from stowage.processing.composite_bands import ink, met, placed_over, rgb, together
from stowage.processing.geometry import proportional
from stowage.processing.params import (
    align,
    boolean,
    choice,
    color,
    half_up,
    handle,
    integer,
    whole,
)
from stowage.processing.table import Kind, Param, TaskSpec

MAX_FILES = 32  # a collage's files (processing_max_sources limits them further)


@dataclass
class Sources:
    paths: tuple[tuple[str, Path], ...]  # handle and path, in the URL's order
    limits: Limits
    listed: int = 0  # the first ``listed`` of ``paths``: a ``[h1,h2]`` source's files
    #: The job's result file: an SVG source is rewritten beside it (``svg.rewritten``)
    #: and removed when the job ends; without it an SVG source is refused.
    dest: Path | None = None
    kept: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)
    out_of_order: bool = False  # the chain reads its image out of order (``read_out_of_order``)
    _opened: dict[Path | tuple[Path, int], pyvips.Image] = field(default_factory=dict)
    _lists: dict[tuple[Path, ...], list[pyvips.Image]] = field(default_factory=dict)
    _profile: bytes | None = None  # the profile in ``profile_file``

    def path(self, handle: str) -> Path:
        for name, path in self.paths:
            if name == handle:
                return path
        raise errors.InvalidParameter(f"source {handle[:64]!r} was not read", parameter="file")

    def image(self, path: Path, *, whole: bool = False) -> pyvips.Image:
        """An extra source, opened once for the job (a watermark on each frame of an
        animation too); the pixels of all of them are held to the total-pixel limit.
        ``whole``: decoded whole (random access), for a task that reads it in no order
        of its own (a watermark's mark, composited into whatever tiles the saver asks)."""
        # A file listed twice is read twice (two cells, two frames): each asking gets a
        # read of its own, from the first line. A chain that reads out of order needs it
        # decoded whole, once. Uses are counted by handle: a job gets a descriptor per
        # listing, but ``path`` names the first for every listing of a handle, so
        # collage=files:[P,P] read one sequential decoder twice ("out of order read").
        whole = whole or self.out_of_order
        uses = sum(self.path(handle) == path for handle, _ in self.paths)
        once = uses < 2 or whole
        key: Path | tuple[Path, int] = path if once else (path, len(self._opened))
        if key not in self._opened:
            sequential = not whole
            self._opened[key] = opened(self._drawable(path), self.limits, sequential=sequential)
            total = sum(int(i.width) * int(i.height) for i in self._opened.values())
            if total > self.limits.max_total_pixels:
                raise errors.ImageTooLarge(
                    f"the sources have {total} pixels in all; at most "
                    f"{self.limits.max_total_pixels}",
                    max_total_pixels=self.limits.max_total_pixels,
                )
        return self._opened[key]

    def images(self, paths: tuple[Path, ...]) -> list[pyvips.Image]:
        """Each of ``paths`` (``image``), opened once for the job: the cost estimate reads
        their sizes before the task places them, from the same decoders."""
        if paths not in self._lists:
            self._lists[paths] = [self.image(path) for path in paths]
        return self._lists[paths]

    def profile_file(self, profile: bytes) -> Path | None:
        """``profile`` in a file beside the job's result (libvips reads an output profile
        from a file), removed when the job ends; None without a result file."""
        if self.dest is None:
            return None
        path = self.dest.with_name(f"{self.dest.name}.profile.icc")
        if self._profile != profile:  # once a job, not once a frame of an animation
            path.write_bytes(profile)
            if self._profile is None:
                self.kept.callback(path.unlink, missing_ok=True)
            self._profile = profile
        return path

    def _drawable(self, path: Path) -> Path:
        """``path``, or for an SVG (a logo as a watermark) the checked copy of it, for a
        JPEG 2000, BMP or ICO file its decoded copy."""
        if self.dest is None:
            return path
        beside = self.dest.with_name(f"{self.dest.name}.source{len(self._opened)}")
        if pillowformats.kind_of(path) is not None:
            return self.kept.enter_context(pillowformats.decoded(path, beside, self.limits))
        if not svg.is_svg(path):
            return path
        return self.kept.enter_context(svg.rewritten(path, beside, self.limits))


_CURRENT: ContextVar[Sources | None] = ContextVar("sources", default=None)


@contextlib.contextmanager
def using(
    paths: tuple[tuple[str, Path], ...], limits: Limits, listed: int = 0, dest: Path | None = None
) -> Iterator[None]:
    sources = Sources(paths, limits, listed, dest)
    token = _CURRENT.set(sources)
    try:
        with sources.kept:
            yield
    finally:
        _CURRENT.reset(token)


def read_out_of_order() -> None:
    """The job's chain reads its image out of order or twice (``flip``, a rotation, or
    ``enhance``, which measures the image and then changes it): the extra sources, which
    the tasks before it composited into that image, are decoded whole, as the main one is.
    Read in one pass, a tall watermark under ``flip`` failed as an out-of-order read."""
    found = _CURRENT.get()
    if found is not None:
        found.out_of_order = True


def source_paths() -> tuple[Path, ...]:
    """The files of the job's other sources, each listing (none outside a job)."""
    found = _CURRENT.get()
    return tuple(path for _, path in found.paths) if found is not None else ()


def job_limits() -> Limits | None:
    """The limits of the job being rendered in this process (its deadline: ``ocr``)."""
    found = _CURRENT.get()
    return found.limits if found is not None else None


def _sources() -> Sources:
    found = _CURRENT.get()
    if found is None:
        raise errors.InvalidParameter("this task needs its sources read with it")
    return found


def opened(path: Path, limits: Limits, *, sequential: bool = True) -> pyvips.Image:
    """An extra source, its first page, checked as the main one is: raster, not too big."""
    frames.check_raster(path, rewritten=svg.is_rewritten(path))
    admission.check_claimed(path, limits, "a source")  # a GIF's screen, as the main one's
    access = "sequential" if sequential else "random"
    image = samples.read(frames.load(str(path), {"access": access, "fail_on": "error"}), path)
    if image.width * image.height > limits.max_input_pixels:
        raise errors.ImageTooLarge(
            f"a source has {image.width * image.height} pixels; at most {limits.max_input_pixels}",
            max_pixels=limits.max_input_pixels,
        )
    return ops.with_alpha(met(image))


# -- watermark ----------------------------------------------------------------------------
def watermark(image: pyvips.Image, task: Task) -> pyvips.Image:
    sources = _sources()
    # Decoded whole: the savers that compute the result in tiles across threads (WebP,
    # PNG, GIF) asked a sequential mark for rows behind those it had read ("out of order
    # read"): resize=w:1600/watermark=file:H/output=format:webp was a 422 INVALID_IMAGE.
    mark = sources.image(sources.path(str(task.get("file"))), whole=True)
    size = int(task.get("size", 100))  # type: ignore[arg-type]
    if size != 100:
        mark = _sized(mark, size)
    x, y = _placed(
        task.get("position", "center"), image.width - mark.width, image.height - mark.height
    )
    profile = _rgb_profile(image)
    into = sources.profile_file(profile) if profile is not None else None
    if into is not None:  # the logo into the photo's space: the photo is not converted
        mark = rgb(mark, profiled=False).icc_transform(str(into), input_profile="srgb")
        base = rgb(image, profiled=False)
    else:  # a grey logo on a grey image stays grey
        base, mark = together([met(image), mark])
    made = placed_over(ops.with_alpha(base), [(mark, x, y)]).rint().cast("uchar")
    return made if image.hasalpha() else made.extract_band(0, n=made.bands - 1)


def _sized(mark: pyvips.Image, size: int) -> pyvips.Image:
    """``size`` % of the mark's own size, rounded, at least a pixel a side (a mark that
    would have been under a pixel was drawn at its full size: ``size:1`` of 60x40)."""
    width, height = (max(1, int(side * size / 100 + 0.5)) for side in (mark.width, mark.height))
    across, down = width / mark.width, height / mark.height
    return ops.premultiplied(mark, lambda colours: colours.resize(across, vscale=down))


def _rgb_profile(image: pyvips.Image) -> bytes | None:
    """The image's ICC profile when it is an RGB one (a CMYK photo is turned into sRGB)."""
    if image.interpretation != "srgb" or not image.get_typeof("icc-profile-data"):
        return None
    profile: bytes = image.get("icc-profile-data")
    return profile if profile[16:20] == b"RGB " else None


def _placed(position: object, spare_w: int, spare_h: int) -> tuple[int, int]:
    names = set(position) if isinstance(position, tuple) else {str(position)}
    left = 0 if "left" in names else spare_w if "right" in names else spare_w // 2
    top = 0 if "top" in names else spare_h if "bottom" in names else spare_h // 2
    return left, top


def handles(value: Value) -> Value:
    """One handle or a list of them, ``[h1,h2]``."""
    items = value if isinstance(value, tuple) else (value,)
    if not 1 <= len(items) <= MAX_FILES:
        raise ValueError(f"must be 1 to {MAX_FILES} file handles")
    return tuple(handle(item) for item in items)


# -- collage and animate ------------------------------------------------------------------
def build(
    task: Task,
    first: pyvips.Image,
    apply: Callable[[Any], Any],
    *,
    still: bool = False,
    autorotate: bool = False,
) -> Any:
    """The image a ``collage`` or ``animate`` task makes of the sources; ``apply`` runs
    the chain's image tasks on it (on each frame of an animation). ``still``: the result
    holds one frame (a format without animation, an answer); ``autorotate``: the chain
    turns by EXIF, which an animation does to each file before it is framed."""
    if task.name == "collage":
        return _collage(first, task, apply)
    return _animate(placed(task, first, still=still, autorotate=autorotate), task, apply)


def placed(
    task: Task, first: pyvips.Image, *, still: bool = False, autorotate: bool = False
) -> list[pyvips.Image]:
    """The images the task places besides the chain's own file: a collage's cells from
    ``files``; an animation's frames (the listed files, else ``first``, the one file),
    only the first of them for a ``still`` result, each turned by its EXIF orientation
    when the chain turns by it (``autorotate``). The cost estimate reads their sizes."""
    sources = _sources()
    if task.name == "collage":
        return sources.images(tuple(sources.path(h) for h in _handles(task)))
    # The frames are the list's files (a watermark's file is not a frame), else the file.
    paths = tuple(path for _, path in sources.paths[: sources.listed])
    images = sources.images(paths[:1] if still else paths) or [met(first)]
    return [image.autorot() for image in images] if autorotate else images


def _collage(first: pyvips.Image, task: Task, apply: Callable[[Any], Any]) -> pyvips.Image:
    background = str(task.get("color", "white"))
    images = together([ops.with_alpha(met(first)), *placed(task, first)], background)
    if task.get("autorotate") is True:
        images = [image.autorot() for image in images]
    width, height = _canvas_size(task, first.width, first.height)
    columns = math.ceil(math.sqrt(len(images)))
    rows = math.ceil(len(images) / columns)
    margin = _fitting_margin(int(task.get("margin", 10)), width, height, columns, rows)  # type: ignore[arg-type]
    cell_w = max(1, (width - margin * (columns + 1)) // columns)
    cell_h = max(1, (height - margin * (rows + 1)) // rows)
    crop = task.get("fit") == "crop"
    grey = images[0].bands < 3
    canvas = pyvips.Image.black(width, height).new_from_image(ink(background, grey))
    canvas = canvas.copy(interpretation="b-w" if grey else "srgb")
    cells = []
    for index, image in enumerate(images):
        cell = fitted(image, cell_w, cell_h, crop)
        column, row = index % columns, index // columns
        x = margin + column * (cell_w + margin) + (cell_w - cell.width) // 2
        y = margin + row * (cell_h + margin) + (cell_h - cell.height) // 2
        cells.append((cell, x, y))
    return apply(placed_over(canvas, cells).rint().cast("uchar"))


def _fitting_margin(margin: int, width: int, height: int, columns: int, rows: int) -> int:
    """The margin, narrowed so that the margins take at most half the canvas each way:
    every value of filestack-js's schema is taken, and the images still show."""
    return min(margin, width // (2 * (columns + 1)), height // (2 * (rows + 1)))


def _animate(images: list[pyvips.Image], task: Task, apply: Callable[[Any], Any]) -> pyvips.Image:
    limits = _sources().limits
    width, height = frame_size(task, images[0].width, images[0].height)
    total = width * height * len(images)
    if total > limits.max_total_pixels:
        raise errors.ImageTooLarge(
            f"the frames would have {total} pixels; at most {limits.max_total_pixels}"
        )
    colour = str(task.get("background", "transparent"))
    images = together(images, colour)  # grey frames on a grey background stay grey
    background = ink(colour, images[0].bands < 3)
    made = [apply(_framed(image, task, width, height, background)) for image in images]
    strip = pyvips.Image.arrayjoin(made, across=1).copy()
    strip.set_type(pyvips.GValue.gint_type, "page-height", made[0].height)
    delay = int(task.get("delay", 1000))  # type: ignore[arg-type]
    strip.set_type(pyvips.GValue.array_int_type, "delay", [delay] * len(made))
    strip.set_type(pyvips.GValue.gint_type, "loop", int(task.get("loop", 0)))  # type: ignore[arg-type]
    return strip


def frame_size(task: Task, width: int, height: int) -> tuple[int, int]:
    """An animation's frame, from its first image's ``width`` x ``height``: the size asked
    for, a side not given kept in proportion to the other (at least one pixel: a wide
    first image at a small width rounded to 0 rows), else the first image's size."""
    wide, tall = task.get("width"), task.get("height")
    if isinstance(wide, int) and isinstance(tall, int):
        return wide, tall
    if isinstance(wide, int):  # as resize derives a side: half up (``proportional``)
        return wide, proportional(height, width, wide)
    if isinstance(tall, int):
        return proportional(width, height, tall), tall
    return width, height


def _framed(
    image: pyvips.Image, task: Task, width: int, height: int, background: list[int]
) -> pyvips.Image:
    """One frame of ``width`` x ``height``: every frame of an animation is one size."""
    fit = task.get("fit", "clip")
    if fit == "scale":
        return ops.scaled(image, width, height, "force")
    align = task.get("align", "center")
    small = ops.with_alpha(fitted(image, width, height, fit == "crop", align))
    x, y = _placed(align, width - small.width, height - small.height)
    return small.embed(x, y, width, height, extend="background", background=background)


def fitted(
    image: pyvips.Image, width: int, height: int, crop: bool, align: object = "center"
) -> pyvips.Image:
    """``image`` within ``width`` x ``height``, or covering it and cut to it (``crop``),
    the cut where ``align`` says (``left`` keeps the left of a wide image, ``top`` the top
    of a tall one; the centre otherwise), as ``resize=fit:crop`` cuts: animate's ``align``
    was dropped with ``fit:crop``, every frame cut in its middle.
    The cut is made first, on the source: covering a tall cell with a wide image
    (1800x300 into 297x8817) made libvips scale it to 52900x8817 before cutting, and the
    job ran to its deadline."""
    if not crop:
        return ops.scaled(image, width, height)
    if image.width * height > width * image.height:  # wider than the cell: cut the sides
        keep = max(1, half_up(Fraction(image.height * width, height)))
        left, _ = _placed(align, image.width - keep, 0)
        image = image.extract_area(left, 0, keep, image.height)
    else:
        keep = max(1, half_up(Fraction(image.width * height, width)))
        _, top = _placed(align, 0, image.height - keep)
        image = image.extract_area(0, top, image.width, keep)
    return ops.scaled(image, width, height, "force")


def _handles(task: Task) -> tuple[str, ...]:
    files = task.get("files", ())
    return tuple(str(f) for f in files) if isinstance(files, tuple) else (str(files),)


#: The tasks that build one image of several files: one frame of each file is decoded.
BUILT = frames.ONE_FRAME


def _canvas_size(task: Task, width: int, height: int) -> tuple[int, int]:
    """collage's canvas from this image's ``width`` x ``height`` (as the tasks before the
    collage made it): each side asked for, else that side of the image. A side of 0,
    which filestack-js's schema allows, is not given (``params.Whole``); the job and the
    cost estimate both read this one rule."""
    wide, tall = task.get("width"), task.get("height")
    return (wide if isinstance(wide, int) else width, tall if isinstance(tall, int) else height)


TASKS: tuple[TaskSpec, ...] = (
    TaskSpec(
        "watermark",
        (
            Param("file", handle, ("f",)),
            Param("size", whole(1, 500, zero_unset=True), ("s",), 100),
            Param("position", align, ("p",), "center"),
        ),
        op=watermark,
        needs_one_of=("file",),
        doc="another stored image over this one (size: % of its own size)",
    ),
    TaskSpec(
        "collage",
        (
            Param("files", handles, ("f",)),
            Param("margin", integer(1, 100), ("m",), 10),
            Param("width", whole(1, 10_000, zero_unset=True), ("w",)),
            Param("height", whole(1, 10_000, zero_unset=True), ("h",)),
            Param("color", color, ("c",), "white"),
            Param("fit", choice("auto", "crop"), ("i",), "auto"),
            Param("autorotate", boolean, ("a",), False),
        ),
        kind=Kind.FILES,
        size=_canvas_size,
        needs_one_of=("files",),
        doc="this image and the files in a grid of width x height",
    ),
    TaskSpec(
        "animate",
        (
            Param("delay", integer(0, 10_000), (), 1000),
            Param("loop", integer(0, 1000), (), 0),
            Param("width", integer(1, 1800)),
            Param("height", integer(1, 1800)),
            Param("fit", choice("clip", "scale", "crop"), (), "clip"),
            Param("align", align, (), "center"),
            Param("background", color, (), "transparent"),
        ),
        kind=Kind.FILES,
        size=frame_size,
        doc="the listed images as the frames of a GIF or WebP (delay in ms)",
        reads_list=True,
    ),
    TaskSpec("zip", kind=Kind.FILES, doc="the listed files in one zip archive", reads_list=True),
)
