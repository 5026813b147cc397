"""The libvips engine: opens the source (header first, limits checked before any pixel
is decoded), builds the chain as one lazy pipeline, and saves it to a file.

Sequential access (decoded top to bottom in strips) unless a task needs random access
(rotate, flip, masks). A chain that starts with ``resize`` shrinks on load (``thumbnail``
asks the JPEG, WebP or AVIF decoder for a smaller image: no full 12-MP decode).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyvips

from stowage import errors
from stowage.processing import (
    catalogue,
    composite,
    cost,
    flatness,
    frames,
    jp2header,
    jpegquality,
    montage,
    ops,
    pdf,
    pillowformats,
    pillowjpeg,
    placedcost,
    profiles,
    resultbands,
    resultshare,
    saverates,
    saving,
    subjects,
    svg,
    webpheader,
)
from stowage.processing import chain as chains
from stowage.processing.base import Chain, Limits, Output, Rendered, Task
from stowage.processing.geometry import Scaler
from stowage.processing.pngsave import level as png_level
from stowage.processing.table import Kind

pyvips.cache_set_max(0)  # libvips' operation cache would keep decoded images between jobs
GIF_EFFORT = 4
_KEEPS_DUPLICATES = pyvips.at_least_libvips(8, 17)  # gifsave's keep_duplicate_frames


class VipsEngine:
    def __init__(self, threads_per_job: int = 0, pillow_jpeg: bool = True) -> None:
        # libvips' own threads per pipeline (process-wide). When the pool already runs a job
        # per core, one each is faster: no hand-offs between threads that share the cores.
        if threads_per_job > 0:
            pyvips.concurrency_set(threads_per_job)
        self.pillow_jpeg = pillow_jpeg  # processing_pillow_jpeg: see pillowjpeg.py

    def render(
        self, source: Path, chain: Chain, output: Output, dest: Path, limits: Limits
    ) -> Rendered:
        chain = jpegquality.resolved(chain, source)  # output=quality:input
        args = (source, chain, output, dest, limits)
        if jpegquality.only_compress(chain):  # never a larger file than the source
            return self._no_larger(*args)
        if not jpegquality.only_quality(chain):
            return self._rendered(*args)
        # The quality task: a file that is no JPEG as it is; a JPEG saved again, unless
        # that is no smaller than the original (the hosted service's rules).
        if jpegquality.estimated(source) is None or output.format != "jpeg":
            return frames.as_it_is(source, output, dest) or self._rendered(*args)
        return self._no_larger(*args)

    def _no_larger(
        self, source: Path, chain: Chain, output: Output, dest: Path, limits: Limits
    ) -> Rendered:
        """Saved again, or the source as it is when that is no smaller and of the format."""
        made = self._rendered(source, chain, output, dest, limits)
        if dest.stat().st_size < source.stat().st_size:
            return made
        return frames.as_it_is(source, output, dest) or made

    def _rendered(
        self, source: Path, chain: Chain, output: Output, dest: Path, limits: Limits
    ) -> Rendered:
        args = (source, chain, output, dest, limits)
        done = jp2header.answered(*args)  # JPEG 2000, BMP, ICO: limits; imagesize: header
        if done is None and self.pillow_jpeg:  # a JPEG resized to WebP or JPEG, when plain
            done = pillowjpeg.render(*args, save_options(chain, output))
        if done is not None:
            return done
        deadline = time.monotonic() + limits.seconds
        try:
            with (
                ops.engine_limits(limits.max_output_dimension, limits.max_total_pixels),
                svg.rewritten(source, dest, limits) as source,  # SVGs: checked, rewritten
                pillowformats.decoded(source, dest, limits) as source,  # no libvips loader
                pdf.opened(source, chain, output, dest, limits) as opened,  # PDF sources
            ):
                if isinstance(opened, Rendered):
                    return opened
                return self._render(opened.source, opened.chain, output, dest, limits, deadline)
        except pyvips.Error as exc:
            if time.monotonic() >= deadline:
                raise errors.ProcessingTimeout(seconds=limits.seconds) from exc
            if _OUT_OF_MEMORY in f"{exc} {getattr(exc, 'detail', '')}":
                # the job's address-space limit, met inside libvips: not a bad image
                raise errors.ImageTooLarge("the transformation needs too much memory") from exc
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
        frames.check_raster(source, rewritten=svg.is_rewritten(source))
        random = _out_of_order(chain.tasks)
        access = "random" if random else "sequential"
        drops = _drops_profile(chain, output)
        opened = frames.open_source(str(source), chain, output, limits, access, drops)
        ops.DECODED.set(frames.decoded(opened, access))  # reset with the job's limits
        inside = svg.embedded(source)
        if inside is not None:  # its data: images are decoded whole, besides the canvas
            inside.check_canvas(opened.frame_pixels * opened.decoded_frames)
        if random or opened.frames > 1:  # an animation's frames each read the extra sources
            composite.read_out_of_order()
        header = opened.image
        if _size_of_the_source(chain):  # nothing decoded, nothing priced
            return _write_size(dest, output, header.width, opened.frame_height, chain.tasks[-1])
        pillow = placedcost.seconds(limits)  # before a collage's cells are decoded
        if pillow > min(limits.max_cost, limits.big_cost):
            cost.check(pillow, limits)
        placed = montage.placed(opened, chain, output)
        lossless = webpheader.kept_lossless(chain, output, source, opened.loader)
        saver = saverates.LOSSLESS_WEBP if lossless else output.format
        args = (opened, chain, header.width, saver, placed, limits.max_output_dimension)
        # ops.held's budget (the estimate follows it) and the SVGs' data: images
        holds, embedded = limits.max_total_pixels, svg.embedded_pixels()
        drawn = svg.drawing(source)  # filters, <use> fan-out, elements: what it draws
        least = pillow + cost.estimate(*args, None, holds, embedded, drawn, flatness.least)
        # At a photo's save rate (a flat one's where it could be flat): refused, or a big
        # job, before measuring the detail (a decode of the whole source): a job found big
        # gives its small slot back at once and is measured in a big job's slot.
        if least > min(limits.max_cost, limits.big_cost):
            cost.check(least, limits)
        measured = content_measure(opened, chain, limits.max_output_dimension)
        seconds = pillow + cost.estimate(*args, None, holds, embedded, drawn, measured)
        cost.check(seconds, limits)
        if output.format == "tiff" and "compression" not in save_options(chain, output):
            size = cost.made_size(opened, chain, header.width, placed)
            source_bands = header.bands, header.hasalpha(), header.interpretation == "cmyk"
            resultbands.check_bytes(size, source_bands, chain, limits.max_output_bytes)
        answer, last = chains.answer_of(chain), chain.tasks[-1:]
        if answer is not None:  # the steps before the answering task, then its text
            chain = dataclasses.replace(chain, tasks=chain.tasks[:-1])
        limit = limits.max_output_dimension

        def run(image: pyvips.Image, todo: list[Task]) -> pyvips.Image:
            return _steps(ops.srgb(profiles.for_tasks(image, output.format, drops)), todo, limit)

        image = montage.composed(opened, chain, output, run)
        image = image or montage.animated(opened, chain, limits, run)
        image = image or _pipeline(opened, chain, limit, (output.format, drops))
        width, height = frames.frame_size(image)
        if chain.wants_size:
            return _write_size(dest, output, width, height)
        if answer is not None:
            dest.write_text(answer.render(image, last[0]), encoding="utf-8")
            return Rendered(output, width, height)
        if width > limit or height > limit:
            raise errors.ImageTooLarge(
                f"the result would be {width}x{height}; at most {limit} a side"
            )
        frames.check_made(image, limits)
        image = _prepared(image, chain, output, header.interpretation == "cmyk")
        _stop_at(image, deadline)
        options = save_options(chain, output, width * height, lossless)
        saving.save(image, output, dest, options, limits.max_output_bytes)
        return Rendered(output, width, height)


def content_measure(opened: frames.Opened, chain: Chain, limit: int) -> resultshare.Measure:
    """The detail and flat share the estimate asks for: of the chain's result where it
    streams (``resultshare``), else of the source."""
    pixels = [t for t in chain.tasks if catalogue.TABLE[t.name].kind in cost.PIXELS]
    return resultshare.measure(opened, pixels, functools.partial(_steps, limit=limit))


def _pipeline(
    opened: frames.Opened, chain: Chain, limit: int, saved: tuple[str, bool]
) -> pyvips.Image:
    """The image tasks' operations, from the table, as one lazy pipeline. The first one
    shrinks on load when it can (its ``load_op``). ``saved``: the result's format and
    whether it drops the profile (``profiles.for_tasks``)."""
    image = header = opened.image
    todo = montage.image_tasks(chain.tasks)
    load_op = catalogue.TABLE[todo[0].name].load_op if todo else None
    if load_op is not None:
        applies = not profiles.carried(header, *saved)
        if opened.read or header.format == "ushort":
            scale = _from_read(profiles.for_tasks(header, *saved))
        else:
            scale = _from_file(Path(opened.name), header, applies)
        first = todo.pop(0)
        image = _grown(header, load_op(scale, first, header.width, header.height), limit)
        if _out_of_order(todo):
            # Shrink-on-load reads the file in one pass, whatever comes after: a task that
            # reads its image twice (enhance measures, then changes) gets it held; when it
            # is too big to hold, the source opened for random access is resized instead.
            shrunk, image = image, ops.held(image)
            if image is shrunk:
                image = _grown(header, _op(first)(header, first), limit)
    return _steps(ops.srgb(profiles.for_tasks(image, *saved)), todo, limit)


def _out_of_order(tasks: Sequence[Task]) -> bool:
    """Whether any of ``tasks`` reads its image out of order or twice (the table says)."""
    return any(catalogue.TABLE[t.name].random_access for t in tasks)


def _steps(image: pyvips.Image, todo: list[Task], limit: int) -> pyvips.Image:
    for task in todo:
        if catalogue.TABLE[task.name].maps_colours:  # the colours as shown, whatever kept
            image = ops.srgb(profiles.applied(image))
        if catalogue.TABLE[task.name].measures:
            image = ops.held(image)  # measured, then read again: computed once
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


def _from_read(image: pyvips.Image) -> Scaler:
    """Scaled from the source as ``samples`` read it: libvips' thumbnail, which opens the
    file itself, clips what it does not read as 8 or 16 bits (``Opened.read``), and makes
    16 bits 8 by its truncating shift (``ops.srgb`` rounds them, before the scaling)."""

    def scale(width: int, height: int, size: str) -> pyvips.Image:
        return ops.scaled(image, width, height, size)

    return scale


def _from_file(source: Path, header: pyvips.Image, applies: bool = False) -> Scaler:
    """``applies``: the source's profile is applied before the tasks (its file drops it);
    before the scaling too, where that costs no shrink on load (all but WebP and HEIF:
    a JPEG's is its own shrunk load)."""
    # ``source`` holds the header's load options in its name (``frames.Opened.name``):
    # thumbnail and the shrunk load read the page whose header was checked.
    named = str(source)
    applied_first = applies and header.get("vips-loader") not in _SCALED_LOADS

    def scale(width: int, height: int, size: str) -> pyvips.Image:
        # Lazy: this reads headers only, and gives the size libvips' thumbnail would make.
        full = pyvips.Image.thumbnail(
            named, width, height=height, size=size, no_rotate=True, fail_on="error"
        )
        shrink = _jpeg_shrink(header, full.width, full.height)
        if shrink == 1 and not applied_first:
            return full
        if shrink == 1:  # the profile applied, then the scaling thumbnail would make
            whole = pyvips.Image.new_from_file(named, access="sequential", fail_on="error")
            return ops.scaled(profiles.applied(whole), width, height, size)
        small = pyvips.Image.new_from_file(
            named, shrink=shrink, access="sequential", fail_on="error"
        )
        if applied_first:
            small = profiles.applied(small)
        return ops.scaled(small, full.width, full.height, "force")

    return scale


#: Loaders libvips' thumbnail asks for a smaller image (a scaled decode, an embedded one).
_SCALED_LOADS = frozenset({"webpload", "heifload"})


def _jpeg_shrink(header: pyvips.Image, width: int, height: int) -> int:
    """The largest JPEG shrink-on-load (the decoder's 1/2, 1/4, 1/8 DCT scaling) whose
    result still covers ``width`` x ``height``, as Pillow's draft mode picks. libvips'
    thumbnail stops one step earlier (a factor of two kept for its resize): for a 12 MP
    photo to 300 px, four times the pixels, a sixth of the job's time, for nothing seen."""
    if header.get("vips-loader") != "jpegload":
        return 1
    for shrink in (8, 4, 2):  # libvips' shrunk size is rounded down (0 is an error)
        if header.width // shrink >= width and header.height // shrink >= height:
            return shrink
    return 1


def _prepared(image: pyvips.Image, chain: Chain, output: Output, cmyk_source: bool) -> pyvips.Image:
    settings = chain.merged("output")
    if _strips(chain) and image.get_typeof("orientation"):
        # No metadata means no orientation either: AVIF's and TIFF's savers write it from
        # this field whatever ``keep`` says (an irot box: shown on its side, no Exif left).
        image = image.copy()
        image.remove("orientation")
    background = settings.get("background")
    if background is not None:  # a partly transparent one leaves alpha, as in the tasks
        image = ops.over(image, str(background))
    if output.format == "jpeg":  # what is still transparent shows white
        image = ops.flatten(image, "white")
    if output.format in ("avif", "webp"):
        # Lossy, in blocks and colour at half resolution: what fully transparent pixels
        # hold bled into the visible edge (AVIF 12 levels, WebP 79). They take the colour
        # of the visible pixels near them, which depends on what is shown only.
        image = ops.hidden_filled(image)
    if chain.makes_cmyk(output.format, cmyk_source):
        return image.icc_transform("cmyk", embedded=False)
    if not profiles.carried(image, output.format, _drops_profile(chain, output)):
        # A file without a profile is shown as sRGB: its pixels must be sRGB's first (a
        # Display P3 photo stripped as it was came out dull, 22 dB from what it shows).
        image = profiles.applied(image)
    return ops.srgb(image) if image.interpretation != "b-w" else image


def _drops_profile(chain: Chain, output: Output) -> bool:
    """The saved file will carry no ICC profile: stripped, or a format without one."""
    return output.format == "gif" or _strips(chain)


def save_options(
    chain: Chain, output: Output, pixels: int = 0, lossless: bool = False
) -> dict[str, Any]:
    options: dict[str, Any] = {"lossless": True} if lossless else {}
    quality = chain.quality
    if isinstance(quality, int) and output.format in ("jpeg", "webp", "avif", "heif"):
        options["Q"] = max(1, quality)
    if chain.output_format == "pjpg":
        options["interlace"] = True  # a progressive JPEG
    compress = chain.compresses
    if compress and output.format == "jpeg":
        options["optimize_coding"] = True
    if output.format == "png":
        options["compression"] = png_level(pixels) if compress else 6
        # Each row's best filter, as PNG encoders do (libvips' default, none: a gradient
        # 205 KB from 813 bytes; a smooth photo 17 times larger, a textured one 30 %).
        options["filter"] = "all"
    if compress and output.format == "tiff":
        options["compression"] = "deflate"
    if output.format == "avif":
        options["compression"] = "av1"
        options["effort"] = 2  # libaom at its default effort takes seconds a megapixel
    if output.format == "gif":
        # libimagequant at libvips' default effort (7): 0.25 s a 400x300 frame of many
        # colours; at 4, a fifth of that for files about 3 % larger (docs/decisions.md).
        options["effort"] = GIF_EFFORT
        if _KEEPS_DUPLICATES:  # cgif merges equal frames: [h1,h1] must stay two frames
            options["keep_duplicate_frames"] = True
        # A frame reused the previous frame's palette while the error, averaged over the
        # whole frame, stayed under 8: a frame of another colour inside a shadow's border
        # came out 20-30 levels off (docs/decisions.md).
        options["interpalette_maxerror"] = 0
    if _strips(chain):
        options["keep"] = "none"
    return options


def _strips(chain: Chain) -> bool:
    # pjpg keeps metadata unless metadata:false is written: stripped by default, a phone
    # photo would lose its orientation tag and show on its side (docs/transformations.md).
    return bool(chain.merged("output").get("strip")) or any(
        t.name == "no_metadata"
        or (t.name == "compress" and t.get("metadata") is True)
        or (t.name == "pjpg" and t.get("metadata") is False)
        for t in chain.tasks
    )


def _stop_at(image: pyvips.Image, deadline: float) -> None:
    """libvips reports progress while it computes; past the deadline it is told to stop."""
    image.set_progress(True)

    def on_eval(target: pyvips.Image, progress: Any) -> None:
        if time.monotonic() >= deadline:
            target.set_kill(True)

    image.signal_connect("eval", on_eval)


def _size_of_the_source(chain: Chain) -> bool:
    """Whether ``chain`` asks only for the source's size: ``imagesize`` or ``metadata``
    after tasks that only say how to save (``output``, its page included, which the
    source was opened at; ``quality``, ...). Answered from the header: a 100 MP WebP's
    ``metadata`` (and ``output=format:png/imagesize``) was priced as its decode, 14 s,
    and refused, where ``imagesize`` alone answered at once."""
    if not chain.tasks or not (chain.wants_size or chain.tasks[-1].name == "metadata"):
        return False
    return all(catalogue.TABLE[task.name].kind == Kind.SAVE for task in chain.tasks[:-1])


def _write_size(
    dest: Path, output: Output, width: int, height: int, task: Task | None = None
) -> Rendered:
    """``imagesize``'s answer, or ``metadata``'s (its ``params`` chosen) for ``task``."""
    sides = {"width": width, "height": height}
    if task is not None and task.name == "metadata":
        sides = subjects.metadata_sizes(width, height, task)
    dest.write_text(json.dumps(sides))
    return Rendered(output, width, height)


#: What libvips writes to its error log when an allocation fails (``vips_tracked_malloc``,
#: ``vips__region_...``): the address-space limit of the job process met.
_OUT_OF_MEMORY = "out of memory"


def _reason(exc: pyvips.Error) -> str:
    return str(exc.message if hasattr(exc, "message") else exc).strip().splitlines()[0][:200]
