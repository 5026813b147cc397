"""Pages and frames: which part of a source is decoded, checked from its own header, and
how an animation goes through a chain frame by frame.

One rule for every chain: the source is opened once with the load options of what will
be decoded (``page=N`` for ``output=page:N``, ``n=-1`` for all the frames of an
animation kept as one), the limits are checked on that header, and every later open of
the file (shrink-on-load) uses the same options through ``Opened.name``. Before, the
header of page 2 was checked while shrink-on-load decoded page 1.

An animation is kept when the source has several frames, its loader is GIF or WebP and
the result is a GIF or WebP; any other result (JPEG, PNG, ...) is the first frame. A
chain with a task that takes one frame of each file (``ONE_FRAME``: a collage's cell, an
animation's frame) decodes one frame of it too: the limits and the cost estimate count
the 300 frames of a GIF listed first when the result has one of them (``/animate/[G,H]``
was refused as too costly, ``/animate/[H,G]`` took 10 ms).
libvips holds an animation as one tall strip of frames (``page-height`` says how tall
each is): a chain applied to the strip would flip the frame order or resize the strip
as one image, so it is applied to each frame and the frames are joined again, with their
delays and loop count.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pyvips

from stowage import errors
from stowage.core import filetypes
from stowage.processing import admission, decisions, decodecost, gifblocks, samples
from stowage.processing.base import Chain, Limits, Output, Rendered

ANIMATED_LOADERS = {"gifload", "webpload"}
ANIMATED_OUTPUTS = {"gif", "webp"}
#: Loaders that decode every frame before the one asked for (a frame is drawn over the
#: previous ones): page N costs N frames of decoding.
SEQUENTIAL_FRAMES = {"gifload", "webpload"}
#: Tasks that take one frame of every file they read, the chain's own included
#: (``composite.BUILT``, which builds them, is this set).
ONE_FRAME = frozenset({"collage", "animate"})
#: Loaders libvips cannot read a part of (not ``VIPS_FOREIGN_PARTIAL``): opened for
#: random access, they decode the whole image into memory (or a file past libvips' disc
#: threshold) at the first read, and every later read is of that copy.
WHOLE_ON_RANDOM = frozenset({"jpegload", "pngload", "webpload", "gifload", "heifload"})


@dataclass(frozen=True)
class Opened:
    image: pyvips.Image  # the header of what is decoded: one page, or the strip of frames
    name: str  # the source as libvips opens it again, with the same load options
    frames: int  # frames in ``image``: 1 unless an animation is kept
    frame_height: int
    decoded_frames: int  # frames the decoder goes through to give ``image``
    read: bool = False  # ``image`` read by ``samples``: libvips' thumbnail would not do
    decoding: decodecost.Decoding = decodecost.Decoding()  # what the estimate adds

    @property
    def frame_pixels(self) -> int:
        return int(self.image.width) * self.frame_height

    @property
    def alpha(self) -> bool:
        return bool(self.image.hasalpha())

    @property
    def loader(self) -> str:
        """libvips' loader of the source (``webpload``, ...): its decode rate differs."""
        found = self.image.get_typeof("vips-loader")
        return str(self.image.get("vips-loader")).removesuffix("_source") if found else ""


def open_source(
    source: str,
    chain: Chain,
    output: Output,
    limits: Limits,
    access: str,
    drops_profile: bool = False,
) -> Opened:
    """The header of the page or frames the chain decodes, checked against ``limits``,
    its samples read as light (``samples``; ``drops_profile``: the result's file will
    not carry the source's profile, whatever its format)."""
    base: dict[str, Any] = {"access": access, "fail_on": "error"}
    admission.check_claimed(Path(source), limits, "the image")  # as every source is
    first = load(source, base)
    pages = _pages(first)
    page = _page(chain)
    loader = str(first.get("vips-loader"))
    if page is not None:
        if page > pages:
            raise errors.InvalidParameter(
                f"output page {page}: the image has {pages}", parameter="output.page"
            )
        options = {"page": page - 1} if pages > 1 else {}
    elif keeps_frames(chain, output) and pages > 1 and loader in ANIMATED_LOADERS:
        options = {"n": -1}
    else:
        options = {}
    image = load(source, {**base, **options}) if options else first
    frames = pages if options.get("n") == -1 else 1
    if frames > 1 and loader == "gifload":
        image = _spec_delays(image, Path(source))
    height = _frame_height(image, frames)
    decoded = (page or 1) if loader in SEQUENTIAL_FRAMES else 1
    saved = (output.format, drops_profile)
    read = samples.read(image, Path(source), saved)
    name = _with_options(source, options)
    floats = samples.in_floats(image, read)
    decoding = decodecost.decoding(read, Path(source).stat().st_size, saved, floats)
    if loader.startswith("gifload") and output.format == "gif":  # its save's rate
        decoding = replace(decoding, gif_density=gifblocks.coded_density(Path(source)))
    opened = Opened(read, name, frames, height, max(decoded, frames), read is not image, decoding)
    _check(opened, limits)
    return opened


def decoded(opened: Opened, access: str) -> pyvips.Image | None:
    """``opened.image`` if libvips holds it decoded whole (``WHOLE_ON_RANDOM``): opened for
    random access, as its loader read it (not ``samples``' reading of it)."""
    whole = access == "random" and opened.loader in WHOLE_ON_RANDOM and not opened.read
    return opened.image if whole else None


def check_made(image: pyvips.Image, limits: Limits) -> None:
    """An animated result's frames, all of them, held to the total pixel limit: the tasks
    after an ``animate`` (or on each frame of an animation) may grow every frame. A still
    is held to the side limit (a collage counts its sources)."""
    if frame_size(image)[1] == image.height:
        return
    total = int(image.width) * int(image.height)  # a strip holds every frame
    if total > limits.max_total_pixels:
        raise errors.ImageTooLarge(
            f"the result's frames would have {total} pixels; at most {limits.max_total_pixels}",
            max_total_pixels=limits.max_total_pixels,
        )


def keeps_frames(chain: Chain, output: Output) -> bool:
    """Whether the chain's result may be an animation of the source's frames."""
    one_frame = any(t.name in ONE_FRAME for t in chain.tasks)
    return output.format in ANIMATED_OUTPUTS and not one_frame


def each_frame(opened: Opened, image: pyvips.Image, apply: Callable[[Any], Any]) -> Any:
    """``apply`` on every frame of the strip ``image``, the results joined as a strip."""
    if opened.frames == 1:
        return apply(image)
    height = opened.frame_height
    done = []
    with decisions.kept() as next_frame:  # faces and windows: the first frame's for all
        for index in range(opened.frames):
            next_frame()
            done.append(apply(_frame(image, index, height)))
    first = done[0]
    # A frame of another size (a task that decides per frame) would tear the strip apart.
    done = [
        f if (f.width, f.height) == (first.width, first.height) else _sized(f, first) for f in done
    ]
    strip = pyvips.Image.arrayjoin(done, across=1).copy()
    strip.set_type(pyvips.GValue.gint_type, "page-height", done[0].height)
    for name in ("delay", "loop"):
        if opened.image.get_typeof(name):
            strip.set_type(opened.image.get_typeof(name), name, opened.image.get(name))
    return strip


def _spec_delays(image: pyvips.Image, source: Path) -> pyvips.Image:
    """The GIF's delays with 0 for a frame without a Graphic Control Extension (no delay,
    by the GIF specification), where libvips' loader reports 100 ms: such a frame kept
    0 ms no more than one with an explicit delay of 0 (docs/decisions.md)."""
    found = gifblocks.delays(source)
    if not image.get_typeof("delay") or found is None:
        return image
    delays = [int(d) for d in image.get("delay")]
    if len(found) != len(delays) or None not in found:
        return image
    image = image.copy()
    spec = [0 if mine is None else theirs for mine, theirs in zip(found, delays, strict=True)]
    image.set_type(pyvips.GValue.array_int_type, "delay", spec)
    return image


def _frame(strip: pyvips.Image, index: int, height: int) -> pyvips.Image:
    """One frame of the strip, a still: without the strip's ``page-height``, which libvips'
    resize would read once a task made the frame a whole multiple of it tall (a frame
    grown to 80 px was resized as two pages of 40)."""
    frame = strip.extract_area(0, index * height, strip.width, height).copy()
    frame.remove("page-height")
    return frame


def _sized(frame: pyvips.Image, first: pyvips.Image) -> pyvips.Image:
    return frame.resize(first.width / frame.width, vscale=first.height / frame.height)


def frame_size(image: pyvips.Image) -> tuple[int, int]:
    """Width and height of one frame of a strip (of the image when it has one frame)."""
    height = int(image.height)
    if image.get_typeof("page-height"):
        page = int(image.get("page-height"))
        if 0 < page <= height and height % page == 0:
            height = page
    return int(image.width), height


def _check(opened: Opened, limits: Limits) -> None:
    if opened.decoded_frames > limits.max_frames:
        raise errors.ImageTooLarge(
            f"the chain decodes {opened.decoded_frames} frames; at most {limits.max_frames}",
            max_frames=limits.max_frames,
        )
    pixels = opened.frame_pixels
    if pixels > limits.max_input_pixels:
        raise errors.ImageTooLarge(
            f"the image has {pixels} pixels; at most {limits.max_input_pixels}",
            max_pixels=limits.max_input_pixels,
        )
    total = pixels * opened.decoded_frames
    if total > limits.max_total_pixels:
        raise errors.ImageTooLarge(
            f"the frames decoded have {total} pixels in all; at most {limits.max_total_pixels}",
            max_total_pixels=limits.max_total_pixels,
        )


#: libvips' raster loaders (JPEG 2000 has none in the bundled libvips: processing/
#: jpeg2000.py decodes it first; JPEG XL has no decoder here at all).
RASTER_LOADERS = {"jpeg", "png", "webp", "gif", "nsgif", "tiff", "heif"}
#: Formats known but not decoded: the bundled libheif reads AV1 (AVIF), not HEVC (HEIC).
_NO_DECODER = {"image/jxl": "JPEG XL", "image/heic": "HEIC (HEVC)"}
#: Formats libvips reads, by their signature: one whose loader does not take the file (a
#: TIFF cut before its directory, which libtiff writes after the pixels) is a damaged
#: image (422), as a JPEG cut short is, not a file of no image format (415).
_READ_BY_LIBVIPS = frozenset(
    {"image/jpeg", "image/png", "image/gif", "image/webp", "image/tiff", "image/avif", "image/heif"}
)


#: A loader's format, by the name an ``Output`` gives it, where the two differ. HEIF is
#: AVIF or HEIC by its compression (``format_of``).
_LOADER_FORMATS = {"nsgif": "gif", "jp2k": "jp2"}
_HEIF_FORMATS = {"av1": "avif", "hevc": "heic"}


def format_of(header: pyvips.Image) -> str:
    """The format of the file ``header`` was read from, as ``Output.format`` names it
    (``jpeg``, ``png``, ``avif``, ...): a loader's name is not one (``heifload`` reads
    AVIF and HEIC alike; ``nsgifload``, GIF)."""
    if not header.get_typeof("vips-loader"):
        return ""
    loader = str(header.get("vips-loader")).removesuffix("_source").removesuffix("load")
    if loader == "heif":
        compression = (
            header.get("heif-compression") if header.get_typeof("heif-compression") else ""
        )
        return _HEIF_FORMATS.get(str(compression), "heif")
    return _LOADER_FORMATS.get(loader, loader)


def check_raster(source: Path, *, rewritten: bool = False) -> None:
    """Only raster formats, chosen by content before anything is parsed: vector and
    document loaders (SVG, PDF) can follow references to other files, and libvips' own
    formats (``.v``, matrix, CSV) are no images users upload. An SVG is opened only once
    ``svg.rewritten`` has checked and rewritten it (``rewritten``: this is that file)."""
    found = pyvips.vips_lib.vips_foreign_find_load(str(source).encode())
    name = "" if found == pyvips.ffi.NULL else pyvips.ffi.string(found).decode()
    loader = name.removeprefix("VipsForeignLoad").removesuffix("File").lower()
    if loader == "svg" and rewritten:
        return
    if loader in RASTER_LOADERS and loader != "heif":
        return
    with source.open("rb") as file:
        kind = filetypes.sniff(file.read(filetypes.SNIFF_BYTES))
    if kind in _NO_DECODER:
        raise errors.NotAnImage(f"{_NO_DECODER[kind]} images are not read here: no decoder")
    if loader not in RASTER_LOADERS and kind in _READ_BY_LIBVIPS:
        raise errors.InvalidImage(
            f"the image cannot be read: the {kind} file is damaged or cut short"
        )
    if loader not in RASTER_LOADERS:
        raise errors.NotAnImage()


#: libvips' TIFF loader's reason for samples wider than 32 bits (64-bit floats and
#: integers, complex doubles), said as such: "the image cannot be read: unable to call
#: VipsForeignLoadTiffFile" told the client nothing it could act on (docs/decisions.md).
_WIDE_SAMPLES = "samples out of range"


def load(source: str, options: dict[str, Any]) -> pyvips.Image:
    try:
        return pyvips.Image.new_from_file(source, **options)
    except pyvips.Error as exc:
        if "not a known" in str(exc) or "unsupported" in str(exc).lower():
            raise errors.NotAnImage() from exc
        if _WIDE_SAMPLES in str(exc):
            raise errors.InvalidImage(
                "the image's samples are 64 bits wide (64-bit floats or integers), which "
                "are not read: save it with 32-bit float, 16-bit or 8-bit samples"
            ) from exc
        raise errors.InvalidImage(f"the image cannot be read: {_reason(exc)}") from exc


def _pages(header: pyvips.Image) -> int:
    if not header.get_typeof("n-pages"):
        return 1
    return max(1, int(header.get("n-pages")))


def _page(chain: Chain) -> int | None:
    pages = [t.get("page") for t in chain.tasks if t.name == "output" and t.get("page")]
    return pages[-1] if pages and isinstance(pages[-1], int) else None


def _frame_height(image: pyvips.Image, frames: int) -> int:
    if frames == 1:
        return int(image.height)
    _, height = frame_size(image)
    if height * frames != image.height:
        raise errors.InvalidImage("the animation's frames are not all one size")
    return height


def _with_options(source: str, options: dict[str, Any]) -> str:
    if not options:
        return source
    return source + "[" + ",".join(f"{k}={v}" for k, v in options.items()) + "]"


def _reason(exc: pyvips.Error) -> str:
    return str(exc.message if hasattr(exc, "message") else exc).strip().splitlines()[0][:200]


def as_it_is(source: Path, output: Output, dest: Path) -> Rendered | None:
    """``source`` copied to ``dest`` when it is already an image of ``output``'s format
    (its loader says so, not its name), else None: a PDF or SVG is drawn as usual."""
    try:
        check_raster(source)
    except errors.NotAnImage:
        return None
    header = load(str(source), {"access": "sequential"})
    if format_of(header) != output.format:
        return None
    shutil.copyfile(source, dest)
    return Rendered(output, header.width, header.height)
