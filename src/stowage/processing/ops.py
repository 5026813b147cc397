"""The image tasks on libvips: each takes an image and a checked ``Task`` and returns a
new (lazy) image. Nothing is computed until the result is saved, so a chain is one
libvips pipeline that streams the image through in strips where its operations allow.
"""

from __future__ import annotations

from collections.abc import Callable

import pyvips

from stowage import errors
from stowage.processing.base import Task
from stowage.processing.tasks import rgba

Scaler = Callable[[int, int, str], pyvips.Image]  # width, height, libvips "size" mode
UNBOUNDED = 10_000_000  # libvips' largest coordinate: a side that does not constrain


def srgb(image: pyvips.Image) -> pyvips.Image:
    """Every task works on 8-bit sRGB (or grey), with or without alpha."""
    if image.interpretation not in ("srgb", "b-w"):
        image = image.colourspace("srgb")
    if image.format != "uchar":
        image = image.cast("uchar")
    return image


def resize_box(task: Task, width: int, height: int) -> tuple[int, int]:
    want_w, want_h = task.get("width"), task.get("height")
    if want_w is None:
        assert isinstance(want_h, int)
        return max(1, round(width * want_h / height)), want_h
    assert isinstance(want_w, int)
    if want_h is None:
        return want_w, max(1, round(height * want_w / width))
    assert isinstance(want_h, int)
    return want_w, want_h


def resize(scale: Scaler, task: Task, width: int, height: int) -> pyvips.Image:
    """``scale`` shrinks on load for the first task (``pyvips.Image.thumbnail``) and works
    on the pipeline for later ones (``thumbnail_image``)."""
    box_w, box_h = resize_box(task, width, height)
    fit = task.get("fit", "clip")
    if task.get("width") is None or task.get("height") is None:
        # One side given: it is met exactly and libvips derives the other. A box with the
        # other side rounded would bind first when that side was rounded down (640x480
        # to width 30 gives a 30x22 box, which a 29x22 image fits).
        box_w, box_h = (box_w, UNBOUNDED) if task.get("width") is not None else (UNBOUNDED, box_h)
        return scale(box_w, box_h, "down" if fit == "max" else "both")
    if fit == "scale":
        return scale(box_w, box_h, "force")
    if fit != "crop":
        return scale(box_w, box_h, "down" if fit == "max" else "both")
    factor = max(box_w / width, box_h / height)
    cover = scale(max(box_w, round(width * factor)), max(box_h, round(height * factor)), "force")
    left, top = _aligned(task.get("align", "center"), cover.width - box_w, cover.height - box_h)
    return cover.extract_area(left, top, box_w, box_h)


def _aligned(align: object, spare_w: int, spare_h: int) -> tuple[int, int]:
    names = set(align) if isinstance(align, tuple) else {str(align)}
    left = 0 if "left" in names else spare_w if "right" in names else spare_w // 2
    top = 0 if "top" in names else spare_h if "bottom" in names else spare_h // 2
    return left, top


def crop(image: pyvips.Image, task: Task) -> pyvips.Image:
    dim = task.get("dim")
    assert isinstance(dim, tuple)
    x, y, w, h = (int(v) for v in dim)  # type: ignore[arg-type]
    if x >= image.width or y >= image.height:
        raise errors.InvalidParameter("crop dim starts outside the image", parameter="crop.dim")
    return image.extract_area(x, y, min(w, image.width - x), min(h, image.height - y))


def rotate(image: pyvips.Image, task: Task) -> pyvips.Image:
    deg = task.get("deg", 0)
    if deg == "exif" or task.get("exif") is True:
        image = image.autorot()
    if not isinstance(deg, int) or deg % 360 == 0:
        return image
    if deg % 90 == 0:
        return image.rot(f"d{deg % 360}")
    background = str(task.get("background", "white"))
    if rgba(background)[3] < 255:
        image = with_alpha(image)
    return image.rotate(deg, background=bands(image, background))


def flip(image: pyvips.Image, task: Task) -> pyvips.Image:
    return image.flip("vertical")


def flop(image: pyvips.Image, task: Task) -> pyvips.Image:
    return image.flip("horizontal")


def blur(image: pyvips.Image, task: Task) -> pyvips.Image:
    return image.gaussblur(float(task.get("amount", 2)))  # type: ignore[arg-type]


def sharpen(image: pyvips.Image, task: Task) -> pyvips.Image:
    return image.sharpen(sigma=float(task.get("amount", 2)) / 2)  # type: ignore[arg-type]


def monochrome(image: pyvips.Image, task: Task) -> pyvips.Image:
    return image.colourspace("b-w")


def blackwhite(image: pyvips.Image, task: Task) -> pyvips.Image:
    grey = image.colourspace("b-w")[0]
    limit = float(task.get("threshold", 50)) * 255 / 100  # type: ignore[arg-type]
    return (grey > limit).ifthenelse(255, 0).cast("uchar")


def sepia(image: pyvips.Image, task: Task) -> pyvips.Image:
    tone = float(task.get("tone", 80)) / 100  # type: ignore[arg-type]
    colour, alpha = _split_alpha(srgb(image).colourspace("srgb"))
    matrix = [[0.393, 0.769, 0.189], [0.349, 0.686, 0.168], [0.272, 0.534, 0.131]]
    toned = colour.recomb(matrix) * tone + colour * (1 - tone)
    return _join_alpha(toned.cast("uchar"), alpha)


def negative(image: pyvips.Image, task: Task) -> pyvips.Image:
    colour, alpha = _split_alpha(image)
    return _join_alpha(colour.invert(), alpha)


def modulate(image: pyvips.Image, task: Task) -> pyvips.Image:
    colour, alpha = _split_alpha(srgb(image).colourspace("srgb"))
    brightness = float(task.get("brightness", 100)) / 100  # type: ignore[arg-type]
    saturation = float(task.get("saturation", 100)) / 100  # type: ignore[arg-type]
    hue = float(task.get("hue", 0))  # type: ignore[arg-type]
    lch = colour.colourspace("lch") * [brightness, saturation, 1] + [0, 0, hue]
    return _join_alpha(lch.colourspace("srgb").cast("uchar"), alpha)


def pixelate(image: pyvips.Image, task: Task) -> pyvips.Image:
    amount = int(task.get("amount", 2))  # type: ignore[arg-type]
    amount = min(amount, image.width, image.height)
    small = image.shrink(amount, amount)
    big = small.zoom(amount, amount)
    if big.width < image.width or big.height < image.height:
        big = big.embed(0, 0, image.width, image.height, extend="copy")
    return big.extract_area(0, 0, image.width, image.height)


def circle(image: pyvips.Image, task: Task) -> pyvips.Image:
    xy = pyvips.Image.xyz(image.width, image.height)
    rx, ry = image.width / 2, image.height / 2
    inside = ((xy[0] + 0.5 - rx) / rx) ** 2 + ((xy[1] + 0.5 - ry) / ry) ** 2 <= 1
    return _masked(image, inside, task)


def rounded_corners(image: pyvips.Image, task: Task) -> pyvips.Image:
    limit = min(image.width, image.height) / 2
    radius = task.get("radius", 10)
    r = limit if radius == "max" else min(float(radius), limit)  # type: ignore[arg-type]
    xy = pyvips.Image.xyz(image.width, image.height) + 0.5
    x, y = xy[0], xy[1]
    dx = (x < r).ifthenelse(r - x, (x > image.width - r).ifthenelse(x - (image.width - r), 0))
    dy = (y < r).ifthenelse(r - y, (y > image.height - r).ifthenelse(y - (image.height - r), 0))
    inside = (dx * dx + dy * dy) <= r * r
    softness = float(task.get("blur", 0.3))  # type: ignore[arg-type]
    if softness > 0:
        inside = inside.gaussblur(softness)
    return _masked(image, inside, task)


def border(image: pyvips.Image, task: Task) -> pyvips.Image:
    width = int(task.get("width", 2))  # type: ignore[arg-type]
    colour = str(task.get("color", "black"))
    if rgba(colour)[3] < 255:
        image = with_alpha(image)
    return image.embed(
        width,
        width,
        image.width + 2 * width,
        image.height + 2 * width,
        extend="background",
        background=bands(image, colour),
    )


def _masked(image: pyvips.Image, mask: pyvips.Image, task: Task) -> pyvips.Image:
    colour, alpha = _split_alpha(image)
    shape = mask.cast("uchar")  # relational results are 0/255 already
    alpha = shape if alpha is None else (alpha * (shape / 255)).cast("uchar")
    shaped = colour.bandjoin(alpha)
    background = task.get("background")
    if background is None:
        return shaped
    return flatten(shaped, str(background))


def flatten(image: pyvips.Image, colour: str) -> pyvips.Image:
    if not image.hasalpha():
        return image
    r, g, b, _ = rgba(colour)
    plain = image.flatten(background=[r, g, b] if image.bands > 2 else [r])
    return plain.cast("uchar")


def with_alpha(image: pyvips.Image) -> pyvips.Image:
    return image if image.hasalpha() else image.bandjoin(255)


def bands(image: pyvips.Image, colour: str) -> list[float]:
    r, g, b, a = rgba(colour)
    grey = 0.2126 * r + 0.7152 * g + 0.0722 * b
    base: list[float] = [r, g, b] if image.bands >= 3 else [grey]
    return [*base, a] if image.hasalpha() else base


def _split_alpha(image: pyvips.Image) -> tuple[pyvips.Image, pyvips.Image | None]:
    if image.hasalpha():
        return image.extract_band(0, n=image.bands - 1), image[image.bands - 1]
    return image, None


def _join_alpha(image: pyvips.Image, alpha: pyvips.Image | None) -> pyvips.Image:
    return image if alpha is None else image.bandjoin(alpha)


OPS: dict[str, Callable[[pyvips.Image, Task], pyvips.Image]] = {
    "crop": crop,
    "rotate": rotate,
    "flip": flip,
    "flop": flop,
    "blur": blur,
    "sharpen": sharpen,
    "monochrome": monochrome,
    "blackwhite": blackwhite,
    "sepia": sepia,
    "negative": negative,
    "modulate": modulate,
    "pixelate": pixelate,
    "circle": circle,
    "rounded_corners": rounded_corners,
    "border": border,
}
#: Tasks that only change how the result is saved.
SAVE_ONLY = {"output", "quality", "compress", "no_metadata", "imagesize"}
