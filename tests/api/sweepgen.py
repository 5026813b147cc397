"""Generated sources and chains for tests/api/test_transform_sweep.py: sources of every
shape the catalogue meets (animations with varied delays, disposal and transparency,
alpha, grey, 16 bits, CMYK, EXIF orientations 1-8, progressive, one pixel, 1x8000, a
multipage TIFF, SVG, AVIF) and chains of one to four image tasks with options drawn from
their declared ranges (edges and one past them), spelled as the hosted service takes
them (short names, quoted values, any case). ``expected_size`` is the size each task's
documentation says (docs/transformations.md), None where it does not say one simply."""

from __future__ import annotations

import io
import math
import random
from dataclasses import dataclass, field
from typing import Any

import pyvips
from PIL import Image

from stowage.processing import catalogue, params
from stowage.processing.effects import Pair
from stowage.processing.geometry import UNBOUNDED
from stowage.processing.params import Choice, Either, Integer, Number, Whole
from stowage.processing.table import Kind

#: Tasks left out: other sources, documents, video, text, stores, the request's own.
LEFT_OUT = {
    "video_convert", "urlscreenshot", "store", "doc_to_images", "pdfconvert", "pdfinfo",
    "pdfcreate", "preview", "video_playlist", "zip", "security", "fallback", "debug",
    "ocr", "doc_detection", "tags", "sfw", "copyright", "collage", "animate", "watermark",
}  # fmt: skip
TASKS = sorted(
    {s.name for s in catalogue.TABLE.values() if s.name not in LEFT_OUT and s.kind is not Kind.TEXT}
)
#: Tasks that keep the image's size.
SAME_SIZE = {
    "blur", "sharpen", "monochrome", "blackwhite", "sepia", "pixelate", "oil_paint",
    "negative", "modulate", "vignette", "redeye", "enhance", "rounded_corners", "flip",
    "flop", "output", "quality", "compress", "no_metadata", "pjpg", "auto_image", "cache",
    "pixelate_faces", "blur_faces", "partial_blur", "partial_pixelate", "detect_faces",
    "circle", "torn_edges",
}  # fmt: skip
ANSWERS = {"imagesize", "metadata", "ascii"}
FORMATS = {
    "jpg": "image/jpeg", "jpeg": "image/jpeg", "pjpg": "image/jpeg", "png": "image/png",
    "webp": "image/webp", "avif": "image/avif", "gif": "image/gif", "tiff": "image/tiff",
    "svg": "image/svg+xml",
}  # fmt: skip


@dataclass
class Source:
    data: bytes
    width: int
    height: int
    mimetype: str
    frames: int = 1
    delays: list[int] = field(default_factory=list)
    orientation: int = 1


@dataclass
class Chain:
    tasks: list[tuple[str, dict[str, str]]]
    text: str
    out_of_range: bool


def _picture(width: int, height: int, bands: int = 3) -> pyvips.Image:
    xy = pyvips.Image.xyz(width, height)
    red = (xy[0] * 255 / width).cast("uchar")
    image = red.bandjoin([(xy[1] * 255 / height).cast("uchar"), 90])
    return image.bandjoin(red) if bands == 4 else image[0] if bands == 1 else image


def _animation(rng: random.Random, fmt: str, frames: int) -> Source:
    width, height = rng.randrange(4, 40), rng.randrange(4, 40)
    made = []
    for i in range(frames):
        still = Image.new("RGBA", (width, height), (0, 0, 0, 0))
        for x in range(width):
            for y in range(height):
                if (x + y + i) % 3:
                    still.putpixel((x, y), (rng.randrange(256), 40 * (i % 6), 200, 255))
        made.append(still)
    delays = [rng.choice([20, 30, 50, 100, 250, 1000]) for _ in range(frames)]
    extra: dict[str, Any] = {"lossless": True} if fmt == "webp" else {"optimize": False}
    if frames > 1 and fmt == "gif":
        extra["disposal"] = [rng.choice([0, 1, 2, 3]) for _ in range(frames)]
    buffer = io.BytesIO()
    made[0].save(
        buffer, fmt.upper(), save_all=True, append_images=made[1:], loop=0,
        duration=delays if frames > 1 else delays[0], **extra,
    )  # fmt: skip
    return Source(buffer.getvalue(), width, height, f"image/{fmt}", frames, delays)


def _oriented(orientation: int, width: int, height: int) -> bytes:
    still = Image.frombytes("RGB", (width, height), _picture(width, height).write_to_memory())
    exif = Image.Exif()
    exif[0x0112] = orientation
    buffer = io.BytesIO()
    still.save(buffer, "JPEG", exif=exif.tobytes())
    return buffer.getvalue()


def sources(rng: random.Random) -> dict[str, Source]:
    found = {}
    for frames in (1, rng.randrange(2, 8), rng.randrange(20, 61)):
        for fmt in ("gif", "webp"):
            found[f"anim{frames}.{fmt}"] = _animation(rng, fmt, frames)
    w, h = rng.randrange(20, 300), rng.randrange(20, 300)
    deep = (_picture(w, h).cast("ushort") * 256).cast("ushort").copy(interpretation="rgb16")
    stills = {
        "alpha.png": (_picture(w, h, 4).pngsave_buffer(), "png"),
        "alpha.webp": (_picture(w, h, 4).webpsave_buffer(), "webp"),
        "grey.jpg": (_picture(w, h, 1).jpegsave_buffer(), "jpeg"),
        "deep.png": (deep.pngsave_buffer(), "png"),
        "cmyk.jpg": (_picture(w, h).colourspace("cmyk").jpegsave_buffer(), "jpeg"),
        "progressive.jpg": (_picture(w, h).jpegsave_buffer(interlace=True), "jpeg"),
        "photo.avif": (_picture(w, h).heifsave_buffer(compression="av1"), "avif"),
    }
    for name, (data, fmt) in stills.items():
        found[name] = Source(data, w, h, f"image/{fmt}")
    for orientation in range(1, 9):
        ow, oh = rng.randrange(20, 200), rng.randrange(20, 200)
        data = _oriented(orientation, ow, oh)
        found[f"exif{orientation}.jpg"] = Source(data, ow, oh, "image/jpeg", 1, [], orientation)
    n = rng.randrange(2, 300)
    for name, (sw, sh) in {"dot.png": (1, 1), "column.png": (1, n), "tall.png": (1, 8000)}.items():
        found[name] = Source(_picture(sw, sh).pngsave_buffer(), sw, sh, "image/png")
    pages = _picture(60, 120).copy()
    pages.set_type(pyvips.GValue.gint_type, "page-height", 40)
    found["pages.tif"] = Source(pages.tiffsave_buffer(), 60, 40, "image/tiff", 3)
    sw, sh = rng.randrange(10, 400), rng.randrange(10, 400)
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{sw}" height="{sh}">'
        f'<circle cx="{sw // 2}" cy="{sh // 2}" r="{min(sw, sh) // 3}" fill="red"/></svg>'
    )
    found["drawing.svg"] = Source(svg.encode(), sw, sh, "image/svg+xml")
    return found


def _number(rng: random.Random, low: float, high: float, whole: bool) -> float:
    edge = rng.random()
    if edge < 0.3:
        return low if edge < 0.15 else high
    if whole:
        return rng.randint(int(low), int(min(high, low + 400)))
    return round(rng.uniform(low, min(high, low + 50)), 2)


def _value(rng: random.Random, check: Any) -> tuple[str | None, bool]:
    """A value's spelling for ``check``, and whether it is out of its range."""
    if isinstance(check, Integer | Whole | Number):
        unset = isinstance(check, Whole) and check.zero_unset  # its low - 1 means unset
        if rng.random() < 0.08 and not unset:
            return str(check.low - 1 if rng.random() < 0.5 else check.high + 1), True
        value = _number(rng, check.low, check.high, not isinstance(check, Number))
        return (f'"{value}"' if rng.random() < 0.1 else str(value)), False
    if isinstance(check, Choice):
        name = rng.choice(check.names)
        return (name.upper() if rng.random() < 0.2 else name), False
    if isinstance(check, Either):
        return _value(rng, check.first if rng.random() < 0.6 else check.second)
    if isinstance(check, Pair):
        return f"[{rng.randint(1, 20)},{rng.randint(-20, 20)}]", False
    drawn = {
        params.boolean: ["true", "false", "TRUE"],
        params.color: ["red", "transparent", "white", "FFAA00", "00ff0080"],
        params.align: ["center", "top", "[top,left]", "bottom", "right", "faces"],
    }.get(check)
    if drawn:
        return rng.choice(drawn), False
    if check is params.dims:
        x, y, w, h = (
            rng.randint(0, 30),
            rng.randint(0, 30),
            rng.randint(1, 300),
            rng.randint(1, 300),
        )
        return f"[{x},{y},{w},{h}]", False
    return None, False


def chain(rng: random.Random) -> Chain:
    tasks: list[tuple[str, dict[str, str]]] = []
    texts, out_of_range = [], False
    for _ in range(rng.randint(1, 4)):
        if tasks and tasks[-1][0] in ANSWERS:
            break
        spec = catalogue.spec(rng.choice(TASKS))
        assert spec is not None
        options: dict[str, str] = {}
        spelled, beyond = [], False
        for param in spec.params:
            if rng.random() < 0.5 and param.name not in spec.needs_one_of:
                continue
            value, outside = _value(rng, param.check)
            if value is None:
                continue
            beyond |= outside
            options[param.name] = value
            key = rng.choice([param.name, *param.short])
            spelled.append(f"{key.upper() if rng.random() < 0.1 else key}:{value}")
        if spec.needs_one_of and not set(spec.needs_one_of) & set(options):
            continue
        out_of_range |= beyond
        tasks.append((spec.name, options))
        name = spec.name.upper() if rng.random() < 0.05 else spec.name
        texts.append(name + ("=" + ",".join(spelled) if spelled else ""))
    return Chain(tasks, "/".join(texts), out_of_range)


def _kind(name: str) -> Kind:
    spec = catalogue.spec(name)
    assert spec is not None
    return spec.kind


def _int(value: str) -> int:
    return math.floor(float(value.strip('"')) + 0.5)


def _exif_turn(options: dict[str, str]) -> bool:
    deg = options.get("deg", "").strip('"').lower()
    return deg == "exif" or options.get("exif", "").lower() == "true"


def _resized(options: dict[str, str], w: int, h: int) -> tuple[int, int] | None:
    tw, th = _int(options.get("width", "0")), _int(options.get("height", "0"))
    fit = options.get("fit", "clip").lower()
    if tw and th and fit in ("scale", "crop"):
        return tw, th
    if not (tw or th):
        return None
    # The binding side is met and libvips derives the other in its own arithmetic: a
    # 180x135 image to width 186 is 139.5 rows exactly, 139 in libvips' doubles (seed
    # 18747), as the engine declares it ("How the engine rounds a size").
    made = pyvips.Image.black(w, h).thumbnail_image(
        tw or UNBOUNDED, height=th or UNBOUNDED, size="down" if fit == "max" else "both"
    )
    return made.width, made.height


def _framed(name: str, options: dict[str, str], w: int, h: int) -> tuple[int, int] | None:
    if name == "border":
        width = _int(options.get("width", "2"))
        return w + 2 * width, h + 2 * width
    if name == "shadow":
        x, y = (int(v) for v in options.get("vector", "[4,4]").strip("[]").split(","))
        m = math.ceil(2 * float(options.get("blur", "4").strip('"')))
        return max(w, x + w + m) - min(0, x - m), max(h, y + h + m) - min(0, y - m)
    if name == "polaroid":
        turn = _int(options.get("rotate", "0"))
        frame = max(2, math.floor(0.06 * min(w, h) + 0.5))
        w, h = w + 2 * frame, h + 5 * frame
        return None if turn % 90 else (h, w) if turn % 180 == 90 else (w, h)
    return None


def expected_size(chain: Chain, source: Source) -> tuple[int, int] | None:
    """The size the documentation says ``chain`` makes of ``source``, or None."""
    w, h, orientation = source.width, source.height, source.orientation
    for name, options in chain.tasks:
        made: tuple[int, int] | None = (w, h)
        if name == "rotate" and _exif_turn(options):
            made = (h, w) if orientation >= 5 else (w, h)
            orientation = 1
            deg = options.get("deg", "0").strip('"').lower()
            made = None if deg != "exif" and _int(deg) % 90 else made
            if made and deg != "exif" and _int(deg) % 180 == 90:
                made = made[1], made[0]
        elif name == "rotate":
            deg = _int(options.get("deg", "0"))
            made = None if deg % 90 else (h, w) if deg % 180 == 90 else (w, h)
        elif name in ("resize", "smart_crop"):
            made = _resized(options if name == "resize" else {**options, "fit": "crop"}, w, h)
            made = (w, h) if made is None and name == "smart_crop" else made
        elif name == "crop":
            x, y, cw, ch = (int(v) for v in options["dim"].strip("[]").split(","))
            made = (min(cw, w - x), min(ch, h - y)) if x < w and y < h else None
        elif name == "upscale":
            kept = options.get("upscale", "true").lower() == "false"
            made = (w, h) if kept else (2 * w, 2 * h) if max(w, h) <= 5000 else None
        elif name not in SAME_SIZE | ANSWERS:
            made = _framed(name, options, w, h)
        if made is None:
            return None
        w, h = made
    return w, h


def expected_type(chain: Chain, source: Source) -> str | None:
    """The Content-Type the chain asks for, None where the request's Accept decides."""
    # The last task that makes the answer: request tasks after it (cache, ...) do not
    # (``detect_faces=e:true/cache=cache:true`` answers the faces' JSON).
    making = [t for t in chain.tasks if _kind(t[0]) is not Kind.REQUEST]
    last, options = making[-1] if making else ("", {})
    exported = last == "detect_faces" and options.get("export", "").lower() == "true"
    if last in ("imagesize", "metadata") or exported:
        return "application/json"
    if last == "ascii":
        return "text/html"
    asked = None
    for name, options in chain.tasks:
        if name == "auto_image":
            return None
        if name == "output" and "format" in options:
            asked = FORMATS.get(options["format"].lower(), "")
        asked = "image/jpeg" if name == "pjpg" else asked
    if asked is not None:
        return asked or None
    return "image/png" if source.mimetype == "image/svg+xml" else source.mimetype
