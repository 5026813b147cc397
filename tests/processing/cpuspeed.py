"""The machine's speed now, for tests that compare a cost estimate with CPU time.

The estimate is in seconds of one core of the 2-core test machine, but that machine's
speed drifts about twice (``processing/svgdraw.py``: feGaussianBlur measured 0.25-0.34 s a
megapixel one day, 0.11-0.18 another; priced 0.22, between the two). A test comparing an
estimate with raw CPU time then failed whichever side its state was on: estimates 4.1-4.6
times an SVG's CPU in the fast state (test_svgcost's bound is 4). Other processes on
the machine (two CPU hogs beside the tests) left CPU time as it was: they stretch wall
time, not CPU time.

``speed`` draws the same blur the price was measured on and divides its CPU time by its
price: the factor by which the machine is slower than the state the rates describe. A
test divides its measured CPU time by it. It is clamped to the documented drift (half to
twice), so that a price wrong by more than the drift still fails.

Machines differ in more than speed: on one (2026-12-06, a 2-core Xeon) the blur took 1.5
times its price, yet GIF's encoder ran at 0.45 times the rates' (8 frames of a panned
photo flipped and saved: 0.19 s a megapixel, measured 0.40-0.46 where the rates were),
a still photo to GIF likewise, and WebP's encoder and the face finder 2-3 times faster
beside the blur: divided by the blur's factor, every GIF chain of
test_cost_gif_frames.py and test_cost_gif_content.py came out 3-4.6 times under its
estimate. ``speed("encode")`` measures that kind of work (the GIF save, at the engine's
options), for the tests of chains whose time is mostly an encoder's or the finder's.

Cairo's scan of a filled outline that crosses itself ran at the rates' speed on that
machine (a polygon of 1,000 random vertices across 1000x1000: 0.20 s, as where the rates
were measured) while the blur took 1.5 times its price: divided by the blur's factor, a
polyline of 2,785 random vertices (sweep seed 15420 of test_svgrefs) came out 6 times
under its estimate. ``speed("scan")`` measures that kind of work, for the share of an
SVG's estimate that is its outlines' crossings (``svgstroke``).

On another (2026-12-07, a 2-core AMD EPYC) the blur took 0.4 times its price, but
libjpeg-turbo ran at the rates' speed: a progressive JPEG of noise at quality 100 took
0.064 s a megapixel, the 0.062-0.068 it was priced from, and every save of
test_save_coding_cost.py at the rates' own times; divided by the blur's factor (clamped
to half), a baseline JPEG of noise came out 1.7 times its estimate, a CMYK one twice.
``speed("jpeg")`` measures that save, for the tests of chains whose time is mostly
libjpeg-turbo's.

A run's CPU time also moves by itself on these virtual machines: twelve blurs in a row,
one process on an idle machine (2026-12-07, the EPYC), took 0.56 to 1.0 times their
price, a 3x enlargement of noise 0.64 to 1.06, with no order between the two; beside the other
test worker, both move more, and a measure taken ten seconds before a case may be of
another moment. A case over its bound is measured again, the speed with it
(``fresh``), and fails only if the second measure is over the bound too: twice in a
clean-clone CI, a chain that takes 0.85-1.1 times its estimate in CPU time here (an
upscale, a sepia, a turn by 47 degrees) came out at 2.1 after its rerun with the speed
of before, and a 16-bit TIFF's profile at 2.1 times its share (``test_cost_held_share``,
``test_decodecost``)."""

from __future__ import annotations

import io
import itertools
import random
import resource
import time
from collections.abc import Callable

import PIL.Image
import pyvips

# 1000x1000 filtered by feGaussianBlur: svgdraw's 0.22 s a megapixel of region (its
# price) and the empty canvas's 0.006 (measured with it)
_BLUR = (
    b'<svg xmlns="http://www.w3.org/2000/svg" width="1000" height="1000"><defs>'
    b'<filter id="f"><feGaussianBlur stdDeviation="10"/></filter></defs>'
    b'<rect width="1000" height="1000" fill="red" filter="url(#f)"/></svg>'
)
PRICED = 0.22 + 0.006
#: 8 frames of 400x300 of a photo panned, in one palette, flipped and saved as GIF at the
#: engine's options: 0.40-0.46 s a megapixel in the rates' state (saverates.KEPT's measure)
ENCODE_FRAMES, ENCODE_SIZE, ENCODE_PRICED = 8, (400, 300), 0.43 * 8 * 0.12
#: a polygon of 1,000 random vertices across 1000x1000, filled: 0.20 s in the rates'
#: state (svgstroke.FILL_CROSSING's measure)
_SCANNED = random.Random(9903)
SCAN_POINTS = " ".join(
    f"{_SCANNED.uniform(0, 1000):.1f},{_SCANNED.uniform(0, 1000):.1f}" for _ in range(1000)
).encode()
SCAN_PRICED = 0.20
#: 1000x750 of noise saved as a progressive JPEG at quality 100 (4:4:4): 0.062-0.068 s a
#: megapixel in the rates' state (saverates.JPEG_CODING's measure)
JPEG_SIZE, JPEG_PRICED = (1000, 750), 0.065 * 0.75
DRIFT = 2.0
_DRAWN = itertools.count()
#: How long a measured speed stands: the drift is over hours, and a test process asked
#: for it after every case (two drawings, half a second of CPU each time).
STANDS = 10.0
_measured: dict[str, tuple[float, float]] = {}  # by kind: (when, factor), the last measure
_encoded: list[pyvips.Image] = []  # the frames ``_encode`` saves, made once
_noise: list[pyvips.Image] = []  # the picture ``_jpeg`` saves, made once


def cpu() -> float:
    """This process's CPU seconds, all its threads, user and system."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


def least(run: Callable[[], object], times: int = 2) -> float:
    """The least CPU time of ``times`` runs: a busy machine only adds to one."""
    spent = []
    for _ in range(times):
        started = cpu()
        run()
        spent.append(cpu() - started)
    return min(spent)


def _draw() -> None:
    # a new document each time: libvips' cache would answer the same one at once
    unique = b"<!-- %d -->" % next(_DRAWN)
    pyvips.Image.new_from_buffer(_BLUR + unique, "").avg()


def _scan() -> None:
    unique = b"<!-- %d -->" % next(_DRAWN)
    document = (
        b'<svg xmlns="http://www.w3.org/2000/svg" width="1000" height="1000">'
        b'<polygon fill="red" points="%s"/></svg>' % SCAN_POINTS
    )
    pyvips.Image.new_from_buffer(document + unique, "").avg()


def _encode() -> None:
    if not _encoded:
        _encoded.append(_panned().fliphor().copy_memory())
    _encoded[0].gifsave_buffer(effort=4, interpalette_maxerror=0, keep_duplicate_frames=True)


def _jpeg() -> None:
    if not _noise:
        width, height = JPEG_SIZE
        pixels = random.Random(9904).randbytes(width * height * 3)
        _noise.append(pyvips.Image.new_from_memory(pixels, width, height, 3, "uchar").copy_memory())
    _noise[0].jpegsave_buffer(Q=100, interlace=True)


def _one_thread(run: Callable[[], None]) -> None:
    """``run`` on one libvips thread, as a job runs and as the rates were measured."""
    threads = pyvips.concurrency_get()
    pyvips.concurrency_set(1)
    try:
        run()
    finally:
        pyvips.concurrency_set(threads)


def _panned() -> pyvips.Image:
    """``ENCODE_FRAMES`` frames of a photo panned 20 pixels a frame, in one palette."""
    from tests.processing.test_faces import ASTRONAUT  # a test module: only when asked

    width, height = ENCODE_SIZE
    photo = PIL.Image.open(ASTRONAUT).convert("RGB").resize((640, 640))
    shown = [
        photo.crop((20 * k, 20 * k, 20 * k + width, 20 * k + height)) for k in range(ENCODE_FRAMES)
    ]
    palette = shown[0].quantize(256)
    frames = [frame.quantize(palette=palette, dither=PIL.Image.Dither.NONE) for frame in shown]
    saved = io.BytesIO()
    frames[0].save(saved, "GIF", save_all=True, append_images=frames[1:], duration=80, loop=0)
    return pyvips.Image.new_from_buffer(saved.getvalue(), "", n=-1)


_KINDS = {
    "blur": (_draw, PRICED),
    "encode": (_encode, ENCODE_PRICED),
    "scan": (_scan, SCAN_PRICED),
    "jpeg": (_jpeg, JPEG_PRICED),
}


def speed(kind: str = "blur", fresh: bool = False) -> float:
    """How many times slower than the rates' state the machine is now (0.5 to 2), at
    ``kind`` of work: ``blur`` (librsvg's filter, which moves memory), ``encode`` (an
    encoder's, which computes), ``scan`` (cairo's sweep of crossing edges) or ``jpeg``
    (libjpeg-turbo's save). ``fresh``: measured now, not the measure of the last
    ``STANDS`` seconds (for a case measured again: see the module's note)."""
    now = time.monotonic()
    if not fresh and kind in _measured and now - _measured[kind][0] < STANDS:
        return _measured[kind][1]
    run, priced = _KINDS[kind]
    factor = min(max(least(lambda: _one_thread(run)) / priced, 1 / DRIFT), DRIFT)
    _measured[kind] = (now, factor)
    return factor


def measured_again(spent_at: Callable[[bool], float], fits: Callable[[float], bool]) -> float:
    """The CPU time ``spent_at(False)`` gives in the rates' state, or, when it does not
    ``fits`` its bound, ``spent_at(True)``: the work measured again, divided by the speed
    measured again (``fresh``; a run's CPU time moves by itself, see the module's note)."""
    spent = spent_at(False)
    return spent if fits(spent) else spent_at(True)
