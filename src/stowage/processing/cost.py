"""What a chain will cost, estimated from the header and the tasks before any pixel is
decoded, in seconds of one core.

Without it a chain's cost was bounded only by the job's deadline: a 45-degree rotation
of a 7000x7000 PNG, then a blur of radius 20, held a job slot for 30 s. The estimate
follows the image's size through the chain (a resize, a crop, a rotation, a border
change it) and adds, for each step, the megapixels it makes times that step's rate
(seconds a megapixel, measured with libvips 8.18 on one core of the 2-core machine the
tests run on; the estimate is meant to be within a factor of two, not exact).

libvips computes the result in tiles and asks each step for the area its tile needs: a
blur needs a margin of about three times its radius around the tile, so every step
before a blur is computed again for the overlapping margins. A step's cost is therefore
multiplied by ``(1 + 2 * margin / holding.TILE) ** 2`` for each later step with a margin: an
upscale followed by a large blur costs several times the sum of the two alone. A
rotation by other than a right angle was worse (every strip of it read the bounding box
of its input again); it is computed once into memory (``ops.held``) instead, while the
job's hold budget lasts: the estimate takes the same holds (``holding``, ``costholds``)
and prices a turn left lazy as it runs.

A job whose estimate is above ``Limits.max_cost`` is refused (422 PROCESSING_TOO_COSTLY);
one above ``Limits.big_cost`` is a big job, which the pool runs in fewer slots than it
has, so that small jobs never wait behind big ones (``pool.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

from stowage import errors
from stowage.processing import (
    catalogue,
    costholds,
    decodecost,
    effects,
    estimates,
    faces,
    flatness,
    geometry,
    holding,
    resultbands,
    resultshare,
    shapes,
    subjects,
)
from stowage.processing.base import BigJob, Chain, Limits, Task
from stowage.processing.decodecost import DECODE as DECODE
from stowage.processing.decodecost import DECODES as DECODES
from stowage.processing.decodecost import EMBEDDED as EMBEDDED
from stowage.processing.decodecost import JPEG2000 as JPEG2000
from stowage.processing.decodecost import Header as Header
from stowage.processing.decodecost import Still as Still
from stowage.processing.pngsave import rate as png_compressed
from stowage.processing.saverates import (
    CMYK_EXPORT,
    DRAWN_FLAT,
    FLAT_MEASURE,
    HIDDEN_FILL,
    SAVE_FRAME,
    drawn_rate,
    gif_frames_rate,
    noise_factor,
    quality_factor,
    save_rate,
)
from stowage.processing.svgdraw import Drawing
from stowage.processing.table import Kind

#: Seconds a megapixel made, per task; tasks not named here cost ``OTHER``.
RATES = {
    "resize": 0.026,  # and SHRINK for what it reads; UPSCALE when it enlarges
    "crop": 0.002,
    "rotate": 0.024,
    "flip": 0.013,
    "flop": 0.013,
    "blur": 0.02,
    "sharpen": 0.11,  # and PER_AMOUNT: its mask widens with the amount
    "monochrome": 0.012,
    "blackwhite": 0.015,
    "negative": 0.01,
    "sepia": 0.03,
    "modulate": 0.15,  # to LCh in floats and back
    "pixelate": 0.02,  # 0.020 s a MP at 480 and 1001 px, 0.037 at 479 (one thread, 2026-12-06)
    "border": 0.01,
    "polaroid": 0.03,  # a frame and a rotation of 4 bands (0.012 held; lazy, ``holding``)
    "shadow": 0.05,  # of its grown canvas
    "oil_paint": 0.27,  # and PER_AMOUNT: a median window, or a smaller copy painted
    "smart_crop": 0.035,  # of its cover (``works_on``): scaled, held, searched
    "enhance": 0.3,  # statistics, then curves in floats
    "circle": 0.1,
    "vignette": 0.08,
    "torn_edges": 0.08,
    "rounded_corners": 0.02,  # and ROUNDED_BLUR for the corners' blurred mask
}
#: Seconds a megapixel more for each unit of ``amount`` (up to ``AMOUNT_CAP``: oil_paint
#: paints a larger radius on a smaller copy).
PER_AMOUNT = {"sharpen": 0.008, "oil_paint": 0.009}
#: A sharpen of an image with alpha, besides its rate: 0.15-0.17 s a megapixel more than
#: the same in RGB (2026-12-03, a 2.7 MP photo, amount 2 to 14, one thread)
PREMULTIPLIED = 0.16
AMOUNT_CAP = {"oil_paint": 15}
#: rounded_corners: seconds a megapixel of the blurred corner tiles (or whole mask) for
#: each unit of ``blur``
#: (with ``radius:max`` the tiles are the whole image: 0.33 s a megapixel at blur 20).
ROUNDED_BLUR = 0.016
#: upscale's median filter (``noise``), on the source: 0.3-0.45 s a megapixel of it,
#: a quarter of that a megapixel of the result.
UPSCALE_DENOISE = 0.08
#: The face finder's own work: seconds a megapixel of the copy it searches, at most
#: ``faces.DETECT_SIDE`` pixels long (0.6 s for any photo of a megapixel or more).
FACE_SEARCH = 0.7
FACE_TASKS = {"detect_faces", "crop_faces", "pixelate_faces", "blur_faces", "redeye"}
OTHER = 0.05
DENOISE = 0.9  # enhance=preset:fix_noise: a median filter (3.6 s for 4 MP of noise)
SHRINK = 0.01  # seconds a megapixel a resize reads
#: Seconds a megapixel a resize makes when it enlarges: 0.040-0.045 measured (one
#: thread, 320x240 noise to 3000-7000 a side).
UPSCALE = 0.045
#: Seconds a task costs each time it runs besides its pixels: once a frame, as each
#: frame of an animation gets its own pipeline (``frames.each_frame``). Measured on one
#: thread over 150 frames of 16x16 noise saved as GIF, less the same saved with no task
#: (libvips 8.18): enhance 28-32 ms (its thumbnail and percentiles), torn_edges 19 (its
#: four ragged edges), partial_blur 12, vignette 10, polaroid 1.4-6.5, rounded_corners
#: and shadow 5, upscale 4.5, partial_pixelate 3.7, sharpen 1.4-2.8, modulate and circle
#: 2.5; a turn by other than a right angle 2 ms on 16x16 frames, 9 ms on 64x64 ones (held
#: each frame); the others 1 ms or less. 400 frames of 64x64 through torn_edges took 17.8 s
#: and were estimated at 3.6 s.
CALL = {"enhance": 0.032, "torn_edges": 0.02, "partial_blur": 0.012, "vignette": 0.01}
CALL |= {"polaroid": 0.006, "rounded_corners": 0.005, "shadow": 0.005, "upscale": 0.0045}
CALL |= {"partial_pixelate": 0.004, "sharpen": 0.002, "modulate": 0.0025, "circle": 0.0025}
#: pixelate: its parts' pipelines and the hold of its input (three on 479 px noise took
#: 0.045 s, estimated 0.020: seeds offset by 5555 in test_chains_of_holds)
CALL |= {"pixelate": 0.003}
CALL_TURNED = 0.009  # rotate by other than a right angle
#: Seconds a megapixel more of a turn (not by a right angle) of an image with alpha, or on
#: a partly transparent background (which gives it alpha): its picture and its coverage
#: are turned apart and joined (``geometry.rotate``): one thread, 1000 x 1000 noise by 47
#: degrees, 0.058 s a megapixel made, 0.0096 without alpha. Priced as without, lazy turns
#: of an RGBA PNG took up to 3.65 times their estimate (4.0 s for 1.1; a seed sweep of
#: test_cost_holds' generator on RGBA sources, seeds 21000-21039), and three turns of a
#: JPEG, the first on background 00ff0080, 3.1 s for 0.95
ALPHA_TURNED = 0.05
#: Seconds a megapixel of a turned polaroid's print (the photo in its frame), made again
#: for each strip its turn reads when the turn is left lazy: 0.26-0.36 s more for a
#: 1.4 MP print read 48 times (seed sweep 20016: estimated 0.16 s, took 0.45-0.67)
FRAMED = 0.005
CALL_OTHER = 0.001
#: Seconds each box of ``objects`` costs, besides the pixels: a box is cut, pixelated or
#: blurred and inserted by a pipeline of its own. One thread, 10 and 50 boxes on a
#: 200x200 PNG and a 4 MP JPEG (seeds 5390-5448), rect and oval, blur 0 and 18:
#: partial_pixelate 7-12 ms a box, partial_blur 1-5; unpriced, 32 tasks of 50 boxes
#: on 200x200 took 12.4 s, estimated at 0.2 s, in a small job's slot.
PER_BOX = {"partial_pixelate": 0.009, "partial_blur": 0.004}


PIXELS = (Kind.IMAGE, Kind.FILES)  # the tasks that make pixels


def estimate(
    opened: Header,
    chain: Chain,
    width: int,
    fmt: str = "png",
    placed: Sequence[tuple[int, int]] = (),
    limit: int | None = None,
    detail: Callable[[], float] | None = None,
    hold_pixels: int | None = None,
    embedded: Mapping[str, int] | None = None,
    drawing: Drawing | None = None,
    content: Callable[[str], flatness.Content] | None = None,
) -> float:
    """Seconds of one core the chain is expected to take on this source, saved as
    ``fmt`` (libvips' saver name: jpeg, png, webp, gif, ...). ``placed``: the sizes of
    the images a collage or an animation places (``composite.placed``: a collage's
    cells; an animation's frames, the first of which sets the frame's size). ``limit``:
    the output side limit, whose square the pixels of the image a task works on
    (``works_on``: what smart_crop holds before it cuts, never a lazy cover) are held to,
    before any work. ``detail``: how
    close to noise the source's detail is (0 a photo's, 1 noise's; ``detail.measured``),
    asked only when the save would take long at a photo's rate. ``hold_pixels``: the
    job's hold budget (``Limits.max_total_pixels``, as the engine's ``ops.held``; None:
    no end to it). ``embedded``: the pixels of the rasters inside an SVG source
    (``svg.embedded_pixels``), by their loader. ``drawing``: what an SVG source's drawing
    costs besides its canvas (``svg.drawing``), at the size it is drawn. ``content``: the
    source's detail and flat share (``flatness.content``; ``flatness.FLATTEST`` for the
    least the chain may cost), in place of ``detail``."""
    tasks, frames, (w, h) = _start(opened, chain, width, placed)
    w0, h0 = w, h
    steps: list[costholds.Step] = []
    calls = 0.0  # the tasks' own costs, once a frame, and the searches made once
    alpha = opened.alpha
    for task in tasks:
        if catalogue.TABLE[task.name].kind not in (Kind.IMAGE, Kind.FILES):
            continue  # save options, answers, request tasks: no pixels of their own
        before, works_on = (w, h), catalogue.TABLE[task.name].works_on
        worked = works_on(task, w, h) if works_on is not None else (0, 0)
        # In pixels, not sides: a 100x100 crop of a 5000x20 banner covers 25000x100, 2.5
        # megapixels, and resize=fit:crop makes the same crop of it.
        if limit is not None and worked[0] * worked[1] > max(limit * limit, w * h):
            raise errors.ImageTooLarge(
                f"{task.name} would work on the image at {worked[0]}x{worked[1]}; "
                f"at most {limit}x{limit} pixels"
            )
        w, h = size_after(task, w, h)
        made = _rate(task, *before) * max(w * h, worked[0] * worked[1])
        if task.name == "resize":
            made += SHRINK * before[0] * before[1]
            made += (UPSCALE - RATES["resize"]) * w * h if w * h > before[0] * before[1] else 0
        search = _face_search(task, before)
        if frames > 1 and _searched_once(task):
            calls += search / 1e6  # on the first frame only, not a frame's work
        else:
            made += search
        steps.append(_step(task, made / 1e6, before, (w, h), alpha))
        alpha = resultbands.bands_after(task, 3, alpha)[1]
        calls += _call(task) * frames
    # samples' conversion, a dropped profile's transform: computed again with the first step
    steps, read = costholds.reading(
        steps, decodecost.reading(opened, tasks, width, catalogue.TABLE)
    )
    sites = costholds.sites(steps, still=opened.frames == 1 and frames == 1)
    budget = holding.HoldBudget(10**30 if hold_pixels is None else hold_pixels, limit)
    patterns = holding.plan(sites, frames, budget)
    total = work = calls + sum(n * costholds.computed(steps, p) for p, n in patterns.items())
    # The decoded source is read once: sequentially, or kept whole for random access;
    # so is each image placed, and scaled to its cell or frame.
    inside = sum(DECODES.get(k, EMBEDDED) * pixels for k, pixels in (embedded or {}).items())
    decode = decodecost.decoded(opened) + inside / 1e6
    total += decode + read
    if drawing is not None:  # at a first resize's size: librsvg draws the vector at it
        first = chain.tasks[0] if chain.tasks and chain.tasks[0].name == "resize" else None
        drawn = size_after(first, width, opened.frame_height) if first else (w0, h0)
        total += drawing.seconds(*drawn)
    total += (DECODE + SHRINK) * sum(pw * ph for pw, ph in placed) / 1e6
    if fmt == "png" and chain.compresses:
        return total + png_compressed(w * h) * w * h * frames / 1e6  # by its zlib level
    if content is None and detail is not None:
        content = _detail_only(detail)
    pixels = [t for t in tasks if catalogue.TABLE[t.name].kind in PIXELS]
    result = resultshare.reads_result(pixels, opened.frames == 1 and frames == 1)
    measured = resultshare.Counted(content, decode, opened.frame_pixels) if content else None
    sampled = work * resultshare.sampled(pixels, opened.frame_pixels)
    asked = measured if measured is None or not result else measured.of_result(sampled)
    flat = (
        1.0 if result else flatness.kept(pixels, FLAT_MEASURE.get(fmt, flatness.DETAIL), (w0, h0))
    )
    if placed or embedded or drawing is not None:
        flat = 0.0
    plain = drawing is not None and drawing.plain() and fmt in DRAWN_FLAT and not placed
    if plain:  # known flat without drawing it (no image in it: ``plain``), nothing measured
        asked, flat = None, flatness.kept(pixels, FLAT_MEASURE[fmt], (w0, h0))
    cmyk = chain.makes_cmyk(fmt, opened.decoding.cmyk)
    factor = quality_factor(fmt, chain, cmyk)
    size, density = (w0, h0), opened.decoding.gif_density
    # placed (a collage's, an animation's): the frames are other files', priced as before
    rate = None if placed else gif_frames_rate(fmt, opened.loader, pixels, size, density, frames)
    if rate is None:
        noisy = noise_factor(fmt, chain, cmyk)
        rate = save_rate(fmt, w * h * frames / 1e6, asked, frames, factor, flat, noisy)
    rate = drawn_rate(fmt, factor, flat) if plain else rate
    rate += HIDDEN_FILL.get(fmt, 0.0) + (CMYK_EXPORT if cmyk else 0.0)
    saved = rate * w * h / 1e6 + SAVE_FRAME.get(fmt, 0.0)
    return total + saved * frames + (asked.spent if asked is not None else 0.0)


def _step(
    task: Task, seconds: float, before: tuple[int, int], made: tuple[int, int], alpha: bool
) -> costholds.Step:
    degrees = _turned_by(task)
    turn = 1.0 if degrees is None else holding.strip_reads(before, made, degrees)
    tiles = 1.0 if degrees is None else holding.tile_reads(degrees)
    site = holding.Site(before, made, _measures(task), _held(task))
    if task.name == "rotate" and degrees is not None and resultbands.bands_after(task, 3, alpha)[1]:
        seconds += ALPHA_TURNED * made[0] * made[1] / 1e6
    if task.name == "polaroid":
        print_size = effects.polaroid_print(*before)
        inner = FRAMED * print_size[0] * print_size[1] / 1e6
        return costholds.Step(
            task, seconds, _amplification(task), turn, site, inner=inner, tiles=tiles
        )
    if task.name != "sharpen":
        return costholds.Step(task, seconds, _amplification(task), turn, site, tiles=tiles)
    margin = _margin(task)
    strips = costholds.strips(margin) if alpha else 1.0
    if alpha:  # premultiplied, sharpened and divided again in floats (``ops.premultiplied``)
        seconds += PREMULTIPLIED * before[0] * before[1] / 1e6
    reduced = costholds.reduced(margin, alpha)
    return costholds.Step(task, seconds, _amplification(task), turn, site, strips, reduced)


def _detail_only(detail: Callable[[], float]) -> Callable[[str], flatness.Content]:
    return lambda kind: flatness.Content(detail())


def made_size(
    opened: Header, chain: Chain, width: int, placed: Sequence[tuple[int, int]] = ()
) -> tuple[int, int, int]:
    """The result's width, frame height and frames, as the estimate follows them."""
    tasks, frames, (w, h) = _start(opened, chain, width, placed)
    for task in tasks:
        if catalogue.TABLE[task.name].kind in (Kind.IMAGE, Kind.FILES):
            w, h = size_after(task, w, h)
    return w, h, frames


def _start(
    opened: Header, chain: Chain, width: int, placed: Sequence[tuple[int, int]]
) -> tuple[Sequence[Task], int, tuple[int, int]]:
    """The tasks in the order they run, the frames of the result and the size the first
    task gets: an animation's frames are each framed first, then every image task runs
    on it (vips._composed), one frame of the result for each file placed, at the frame's
    size."""
    tasks, frames, size = chain.tasks, opened.frames, (width, opened.frame_height)
    animate = next((t for t in tasks if t.name == "animate"), None)
    if animate is not None:
        tasks = (animate, *(t for t in tasks if t is not animate))
        frames, size = max(1, len(placed)), placed[0] if placed else size
    return tasks, frames, size


def check(seconds: float, limits: Limits) -> None:
    estimates.record(seconds)
    if seconds > limits.max_cost:
        raise errors.ProcessingTooCostly(
            # one decimal: 8.4 s against a limit of 8 read "about 8 s; at most 8 s"
            f"the transformation would take about {seconds:.1f} s of work; "
            f"at most {limits.max_cost:g} s is allowed",
            estimated_seconds=round(seconds, 1),
            max_seconds=limits.max_cost,
        )
    if seconds > limits.big_cost:
        raise BigJob(seconds)


def size_after(task: Task, width: int, height: int) -> tuple[int, int]:
    """The size a task makes of a ``width`` x ``height`` image, as its table entry
    declares it (as the engine does, or a little more: the estimate may be high, not
    low); the image's own size for a task that keeps it."""
    declared = catalogue.TABLE[task.name].size
    return declared(task, width, height) if declared is not None else (width, height)


def _rate(task: Task, width: int, height: int) -> float:
    """Seconds a megapixel of the task's result, on the ``width`` x ``height`` it gets."""
    if task.name == "enhance" and task.get("preset") == "fix_noise":
        return DENOISE
    rate = RATES.get(task.name, OTHER)
    amount = task.get("amount", 2)
    if task.name in PER_AMOUNT and isinstance(amount, int | float):
        rate += PER_AMOUNT[task.name] * min(amount, AMOUNT_CAP.get(task.name, amount))
    if task.name == "rounded_corners":
        _, blur, _ = shapes.corner_tile(task, width, height)
        blurred = shapes.blurred_pixels(task, width, height)  # with its mirrored margins
        rate += ROUNDED_BLUR * blur * blurred / max(1, width * height)
    if task.name == "upscale" and task.get("noise", "none") != "none":
        rate += UPSCALE_DENOISE
    return rate


def _face_search(task: Task, before: tuple[int, int]) -> float:
    """The face finder's work a task asks for, in millionths of a second (seconds a
    megapixel times pixels, as ``made``): smart_crop looks for faces in its cover (unless
    ``mode:object``), a resize with ``align:faces`` in its cover (with ``fit:crop``), both
    from a share of their window (``faces.CUT_SHARE``); the face tasks and any other
    ``align:faces`` in their image, from the finder's least face."""
    if task.name == "smart_crop":
        return _window_search(subjects.faces_window(task, *before), before)
    if task.name == "resize":
        return _window_search(geometry.faces_window(task, *before), before)
    if task.name in FACE_TASKS or geometry.aligns_on_faces(task):
        return FACE_SEARCH * _searched(*before)
    return 0.0


def _window_search(window: tuple[int, int, int, int] | None, before: tuple[int, int]) -> float:
    """The work, as ``_face_search``'s, of a search for the faces of a window (box_w,
    box_h, cover_w, cover_h; None: no search) of a cover of a picture of ``before``'s
    size, in the view the finder searches (``geometry.searched_size``). The faces under
    ``faces.CUT_SHARE`` of the window's shorter side are not looked for, and with them go
    the finest levels of the cascade's pyramid, most of its work
    (``faces.search_share``). Priced from the finder's least face, a 300x300 smart_crop
    of a 12 MP photo was estimated at 0.55 s of search for 50-80 ms."""
    if window is None:
        return 0.0
    box_w, box_h, cover_w, cover_h = window
    searched = geometry.searched_size(*before, cover_w, cover_h)
    copy_w, copy_h = geometry.view_size(*searched)  # the finder's copy of it
    shorter = min(box_w * copy_w / cover_w, box_h * copy_h / cover_h)
    least = faces.least_face(math.floor(shorter / faces.CUT_SHARE))
    return FACE_SEARCH * _searched(*searched) * faces.search_share(copy_w, copy_h, least)


def _searched_once(task: Task) -> bool:
    """Whether an animation's faces or window are found on its first frame and kept for
    the others (``decisions.decided``); the face tasks that change faces search each."""
    return task.name in ("crop_faces", "smart_crop") or geometry.aligns_on_faces(task)


def _searched(width: int, height: int) -> float:
    """Pixels of the copy the face finder searches."""
    return width * height / faces.search_scale(width, height) ** 2


def _held(task: Task) -> bool:
    holds = catalogue.TABLE[task.name].holds
    return holds is not None and holds(task)


def _turned_by(task: Task) -> int | None:
    """The degrees of a turn the task holds (``TaskSpec.holds``): None for any other."""
    if not _held(task):
        return None
    deg = task.get("deg" if task.name == "rotate" else "rotate", 0)
    return deg if isinstance(deg, int) else None


def _call(task: Task) -> float:
    if task.name == "rotate":
        return CALL_TURNED if _held(task) else CALL_OTHER
    boxes = task.get("objects", ()) if task.name in PER_BOX else ()
    count = len(boxes) if isinstance(boxes, tuple) else 1
    return CALL.get(task.name, CALL_OTHER) + count * PER_BOX.get(task.name, 0.0)


def _measures(task: Task) -> bool:
    return catalogue.TABLE[task.name].measures


def _amplification(task: Task) -> float:
    """How many times the steps before ``task`` are computed for it: a blur reads a
    margin of three times its radius around each tile. (A rotation by other than a right
    angle read, for each strip of its result, the whole bounding box of it; it is now
    computed once into memory, ``ops.held``, and costs its pixels like any step.)"""
    return (1 + 2 * _margin(task) / holding.TILE) ** 2


def _margin(task: Task) -> float:
    """Pixels a blur or a sharpen reads around each of its tiles (0 for other tasks)."""
    if task.name not in ("blur", "sharpen"):
        return 0.0
    amount = task.get("amount", 2)
    radius = float(amount) if isinstance(amount, int | float) else 2.0
    return 3 * (radius if task.name == "blur" else radius / 2)
