"""Geometry tasks: resize, crop, rotate, flip, flop, declared beside their operations.

``resize`` first in a chain shrinks on load (``load_op``: the engine hands it a scaler
that asks the decoder for a smaller image); later in a chain it works on the pipeline.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import pyvips

from stowage import errors
from stowage.processing import decisions, faces, ops
from stowage.processing.base import Task
from stowage.processing.params import (
    align,
    boolean,
    choice,
    color,
    dims,
    either,
    half_up,
    whole,
)
from stowage.processing.table import Param, TaskSpec

Scaler = Callable[[int, int, str], pyvips.Image]  # width, height, libvips "size" mode
UNBOUNDED = 10_000_000  # libvips' largest coordinate: a side that does not constrain
SIZE = whole(1, 10_000, zero_unset=True)  # the SDK schema: a number from 0


def resize_box(task: Task, width: int, height: int) -> tuple[int, int]:
    want_w, want_h = task.get("width"), task.get("height")
    if want_w is None:
        assert isinstance(want_h, int)
        return proportional(width, height, want_h), want_h
    assert isinstance(want_w, int)
    if want_h is None:
        return want_w, proportional(height, width, want_w)
    assert isinstance(want_h, int)
    return want_w, want_h


def resize_with(scale: Scaler, task: Task, width: int, height: int) -> pyvips.Image:
    """``scale`` shrinks on load for the first task (``pyvips.Image.thumbnail``) and works
    on the pipeline for later ones (``thumbnail_image``)."""
    box_w, box_h = resize_box(task, width, height)
    fit = task.get("fit", "clip")
    if task.get("width") is None or task.get("height") is None:
        # One side given: it is met exactly and libvips derives the other. A box with the
        # other side rounded would bind first when that side was rounded down (640x480
        # to width 30 gives a 30x22 box, which a 29x22 image fits).
        by_width = task.get("width") is not None
        box_w, box_h = (box_w, UNBOUNDED) if by_width else (UNBOUNDED, box_h)
        made = scale(box_w, box_h, "down" if fit == "max" else "both")
        return _kept_aspect(made, width, height, by_width)
    if fit == "scale":
        return scale(box_w, box_h, "force")
    if fit != "crop":
        # The side that binds is met and the other derived from it, as from one side
        # given: shrunk on load, a 186x74 JPEG into 19x387 came out 19x7 (its PNG, and
        # width 19 alone, 19x8).
        made = scale(box_w, box_h, "down" if fit == "max" else "both")
        return _kept_aspect(made, width, height, binds_by_width(width, height, box_w, box_h))
    cover_w, cover_h = crop_cover(box_w, box_h, width, height)
    if faces_window(task, width, height) is not None:
        cover, seen = cover_and_view(scale, width, height, cover_w, cover_h)
        # an animation: the first frame's faces place every frame's box
        left, top = decisions.decided(lambda: face_anchor(cover, box_w, box_h, seen))
    else:
        cover = scale(cover_w, cover_h, "force")
        left, top = aligned(cover, task.get("align", "center"), box_w, box_h)
    return cover.extract_area(left, top, box_w, box_h)


def crop_cover(box_w: int, box_h: int, width: int, height: int) -> tuple[int, int]:
    """The ``width`` x ``height`` picture scaled to cover a ``box_w`` x ``box_h`` box."""
    factor = max(box_w / width, box_h / height)
    return max(box_w, half_up(width * factor)), max(box_h, half_up(height * factor))


def faces_window(task: Task, width: int, height: int) -> tuple[int, int, int, int] | None:
    """The box a resize places on faces and the cover it cuts it from (box_w, box_h,
    cover_w, cover_h), or None when it looks for none: ``align:faces`` is read by
    ``fit:crop`` with both sides given only. ``resize_with`` and the cost estimate both
    ask it, so that the two agree on when a search is made."""
    both = task.get("width") is not None and task.get("height") is not None
    if not aligns_on_faces(task) or task.get("fit", "clip") != "crop" or not both:
        return None
    box_w, box_h = resize_box(task, width, height)
    return box_w, box_h, *crop_cover(box_w, box_h, width, height)


def cover_and_view(
    scale: Scaler, width: int, height: int, cover_w: int, cover_h: int
) -> tuple[pyvips.Image, pyvips.Image]:
    """The cover, and the picture at the face finder's own size for it to search (both in
    memory: each is read twice, and what is scaled on load can be read once). A cover
    smaller than that hid faces under the finder's smallest (a 208-px face of a 3000x1000
    photo was 20 px in the 300x100 cover of a 100x100 cut): the cover is then made from
    that view."""
    if lazy_cover(width, height, cover_w, cover_h):
        # An enlargement: the cover left lazy for the cut to compute its rows only (a
        # 54x135 photo's 10000x25000 cover, 750 MB, was made in memory for a 10000x171
        # cut: 10-13 s, 0.06 s without align:faces).
        return held_cover(scale, width, height, cover_w, cover_h)
    view_w, view_h = search_view_size(width, height, cover_w, cover_h)
    if (view_w, view_h) == (cover_w, cover_h):
        cover = scale(cover_w, cover_h, "force").copy_memory()
        return cover, cover
    view = scale(view_w, view_h, "force").copy_memory()
    return ops.scaled(view, cover_w, cover_h, "force").copy_memory(), view


def search_view_size(width: int, height: int, cover_w: int, cover_h: int) -> tuple[int, int]:
    """The picture the finder searches for a cover that is not lazy: the cover itself
    when it is at least the finder's size (or the picture's), else the picture at the
    finder's size."""
    side = max(width, height)
    if max(cover_w, cover_h) >= min(side, faces.DETECT_SIDE):
        return cover_w, cover_h
    factor = min(1.0, faces.DETECT_SIDE / side)
    return max(1, half_up(width * factor)), max(1, half_up(height * factor))


def searched_size(width: int, height: int, cover_w: int, cover_h: int) -> tuple[int, int]:
    """The picture the finder searches for a cover of a ``width`` x ``height`` picture
    (``cover_and_view``): the view of a lazy cover, else ``search_view_size``'s."""
    if lazy_cover(width, height, cover_w, cover_h):
        return view_size(cover_w, cover_h)
    return search_view_size(width, height, cover_w, cover_h)


def lazy_cover(width: int, height: int, cover_w: int, cover_h: int) -> bool:
    """Whether a cover of ``cover_w`` x ``cover_h`` enlarges a ``width`` x ``height``
    picture past the finder's size: it is then never made whole (``held_cover``), and
    what the limits and the estimate see is the result, the picture and the view."""
    return cover_w * cover_h > width * height and max(cover_w, cover_h) > faces.DETECT_SIDE


def view_size(cover_w: int, cover_h: int) -> tuple[int, int]:
    """The cover at the face finder's size (its longest side ``faces.DETECT_SIDE``)."""
    shrink = faces.search_scale(cover_w, cover_h)
    return max(1, half_up(cover_w / shrink)), max(1, half_up(cover_h / shrink))


def held_cover(
    scale: Scaler, width: int, height: int, cover_w: int, cover_h: int
) -> tuple[pyvips.Image, pyvips.Image]:
    """A lazy ``lazy_cover`` and its view at the finder's size, in memory, to search:
    the picture is held at its own size and both are scaled from it, so a cut of the
    cover computes its own rows only."""
    held = scale(width, height, "force").copy_memory()
    view = ops.scaled(held, *view_size(cover_w, cover_h), "force").copy_memory()
    return ops.scaled(held, cover_w, cover_h, "force"), view


def _kept_aspect(image: pyvips.Image, width: int, height: int, by_width: bool) -> pyvips.Image:
    """The side derived from the one given, exactly as from the source itself. A JPEG or
    WebP shrunk on load keeps the aspect only roughly (libjpeg rounds each side of its
    1/8 scale up: 9x57 to width 1 came out 1x7, not 1x6; a 300x200 WebP to height 63
    came out 94x63 where a PNG of it is 95x63)."""
    given, other = (image.width, image.height) if by_width else (image.height, image.width)
    fixed = kept_side(given, width, height, by_width)
    if fixed == other:
        return image
    if by_width:
        return ops.scaled(image, given, fixed, "force")
    return ops.scaled(image, fixed, given, "force")


def binds_by_width(width: int, height: int, box_w: int, box_h: int) -> bool:
    """Whether a ``width`` x ``height`` image fitted inside ``box_w`` x ``box_h`` meets
    the box's width (libvips' thumbnail: the larger shrink binds, the width on a tie)."""
    return width / box_w >= height / box_h


def proportional(other: int, have: int, want: int) -> int:
    """``other`` scaled as a side of ``have`` pixels goes to ``want``, rounded as libvips'
    resize rounds it (half a pixel up, in its arithmetic): a task given one side derives
    the other as ``resize`` does (96x40 to width 30 is 30x13 in both). Shrunk, through
    the scale's round trip (reduce divides by the shrink); enlarged, the side times the
    scale (affine multiplies): 28x217 to width 98 is 759.5 rows, 760 as libvips makes
    it, where the round trip gave 759 (25 of 383 enlarged ties; this rule, 0 of 23,000
    generated sizes, 1,919 of them ties; found by a seed sweep of ``animate``)."""
    shrink = have / want
    if shrink < 1.0:
        return max(1, int(other * (1.0 / shrink) + 0.5))
    return max(1, int(other / (1.0 / (1.0 / shrink)) + 0.5))


def kept_side(given: int, width: int, height: int, by_width: bool) -> int:
    """The side a ``width`` x ``height`` source resized to ``given`` on the other side
    derives, as ``resize`` derives it from the whole source (``proportional``), whatever
    the shrink-on-load left (``_kept_aspect``; the Pillow path sizes its result with it
    too): every format of one picture gets the same size."""
    have, source_other = (width, height) if by_width else (height, width)
    return proportional(source_other, have, given)


def aligns_on_faces(task: Task) -> bool:
    """``align:faces``, alone or in a list: the face finder runs (the cost estimate asks)."""
    return "faces" in str(task.get("align"))


def aligned(image: pyvips.Image, align: object, box_w: int, box_h: int) -> tuple[int, int]:
    """Where a ``box_w`` x ``box_h`` cut of ``image`` starts for ``align`` (``faces``:
    ``resize_with``)."""
    names = set(align) if isinstance(align, tuple) else {str(align)}
    spare_w, spare_h = image.width - box_w, image.height - box_h
    left = 0 if "left" in names else spare_w if "right" in names else spare_w // 2
    top = 0 if "top" in names else spare_h if "bottom" in names else spare_h // 2
    return left, top


def center_anchor(image: pyvips.Image, box_w: int, box_h: int) -> tuple[int, int]:
    return (image.width - box_w) // 2, (image.height - box_h) // 2


#: ``align:faces`` calls this with the image, the box and the view searched; it answers
#: where the box starts: centred on the faces found, or on the image's centre when none.
FaceAnchor = Callable[[pyvips.Image, int, int, pyvips.Image | None], tuple[int, int]]
face_anchor: FaceAnchor = faces.anchor


def resize(image: pyvips.Image, task: Task) -> pyvips.Image:
    return resize_with(functools.partial(ops.scaled, image), task, image.width, image.height)


def crop(image: pyvips.Image, task: Task) -> pyvips.Image:
    dim = task.get("dim")
    assert isinstance(dim, tuple)
    x, y, w, h = (int(v) for v in dim)  # type: ignore[arg-type]
    if x >= image.width or y >= image.height:
        raise errors.InvalidParameter("crop dim starts outside the image", parameter="crop.dim")
    return image.extract_area(x, y, min(w, image.width - x), min(h, image.height - y))


def rotated_size(width: int, height: int, deg: int) -> tuple[int, int]:
    """The box that holds a ``width`` x ``height`` image turned by ``deg`` degrees, as
    libvips makes it: each side rounded to the nearest (1,486 of 1,486 random sizes and
    angles). Exact, so that the cost estimate takes the holds the engine takes (a pixel
    more each way, as it was, made a turn held by the engine look too large to hold)."""
    if deg % 180 == 90:
        return height, width
    if deg % 90 == 0:
        return width, height
    rad = math.radians(deg)
    cos, sin = abs(math.cos(rad)), abs(math.sin(rad))
    return half_up(width * cos + height * sin), half_up(width * sin + height * cos)


def turned(image: pyvips.Image, deg: int, background: list[float]) -> pyvips.Image:
    """``image`` turned ``deg`` degrees clockwise into the ``rotated_size`` box, about its
    centre: exact for right angles (``rot``), else bilinear with the picture's centre on
    the box's. libvips' ``rotate`` turned about a half-pixel-shifted centre: the picture
    sat up to 1.5 px off the box's centre (an empty column on one side, the picture cut
    on the other), and ``polaroid`` used it for right angles too (a 1-px shift)."""
    deg %= 360
    if deg % 90 == 0:
        return image if deg == 0 else image.rot(f"d{deg}")
    width, height = rotated_size(image.width, image.height, deg)
    rad = math.radians(deg)
    cos, sin = math.cos(rad), math.sin(rad)
    return image.affine(
        [cos, -sin, sin, cos],
        idx=-(image.width - 1) / 2,
        idy=-(image.height - 1) / 2,
        odx=(width - 1) / 2,
        ody=(height - 1) / 2,
        oarea=[0, 0, width, height],
        background=background,
    )


def _resize_size(task: Task, width: int, height: int) -> tuple[int, int]:
    """The size ``resize_with`` makes (the cost estimate's): the side that binds met, the
    other derived as libvips derives it (``kept_side``). Rounded from the scale alone,
    half a pixel went up where libvips' round trip of the scale takes it down (4000x3000
    to width 302 is 302x226, not 227; enlarged, 40x310 to width 98 is 98x759)."""
    want_w, want_h = task.get("width"), task.get("height")
    if not isinstance(want_w, int) and not isinstance(want_h, int):
        return width, height
    fit = task.get("fit", "clip")
    if isinstance(want_w, int) and isinstance(want_h, int):
        if fit in ("scale", "crop"):
            return want_w, want_h
        by_width = binds_by_width(width, height, want_w, want_h)
    else:
        by_width = isinstance(want_w, int)
    given = want_w if by_width else want_h
    assert isinstance(given, int)
    if fit == "max" and given >= (width if by_width else height):
        return width, height  # only ever made smaller
    other = kept_side(given, width, height, by_width)
    return (given, other) if by_width else (other, given)


def _crop_size(task: Task, width: int, height: int) -> tuple[int, int]:
    dim = task.get("dim")
    if isinstance(dim, tuple) and len(dim) == 4:
        x, y, w, h = (int(v) for v in dim)  # type: ignore[arg-type]
        return max(1, min(w, width - x)), max(1, min(h, height - y))
    return width, height


def _rotate_size(task: Task, width: int, height: int) -> tuple[int, int]:
    deg = task.get("deg", 0)
    return rotated_size(width, height, deg) if isinstance(deg, int) else (width, height)


def _rotate_holds(task: Task) -> bool:
    deg = task.get("deg", 0)
    return isinstance(deg, int) and deg % 90 != 0


def turns_by_exif(task: Task) -> bool:
    """``rotate=deg:exif`` or ``rotate=exif:true``: the image turned upright by its tag."""
    return task.name == "rotate" and (task.get("deg") == "exif" or task.get("exif") is True)


def rotate(image: pyvips.Image, task: Task) -> pyvips.Image:
    deg = task.get("deg", 0)
    if turns_by_exif(task):
        image = image.autorot()
    elif task.get("exif") is False:  # the tag set to 1 ("as stored"), the pixels left
        image = image.copy()
        image.set_type(pyvips.GValue.gint_type, "orientation", 1)
    if not isinstance(deg, int) or deg % 360 == 0:
        return image
    if deg % 90 == 0:
        return image.rot(f"d{deg % 360}")
    background = str(task.get("background", "white"))
    image = ops.drawable(image, background)
    if not image.hasalpha():
        return ops.held(turned(image, deg, ops.bands(image, background)))
    # Turned on clear corners, the colour then drawn in them only (as without alpha: the
    # picture's own transparent pixels stay so); libvips' rotate takes the background of
    # an image with alpha as premultiplied (0000ff80 came out 0000ff at alpha 128).
    clear = turned(image, deg, [0] * image.bands).cast("uchar")
    whole = pyvips.Image.black(image.width, image.height).linear(0, 255).cast("uchar")
    cover = turned(whole, deg, [0]).cast("uchar")
    return ops.held(ops.outside(clear, cover, background))


def flip(image: pyvips.Image, task: Task) -> pyvips.Image:
    return image.flip("vertical")


def flop(image: pyvips.Image, task: Task) -> pyvips.Image:
    return image.flip("horizontal")


TASKS: tuple[TaskSpec, ...] = (
    TaskSpec(
        "resize",
        (
            Param("width", SIZE, ("w",)),
            Param("height", SIZE, ("h",)),
            Param("fit", choice("clip", "crop", "scale", "max"), ("f",), "clip"),
            Param("align", align, ("a",), "center"),
        ),
        op=resize,
        load_op=resize_with,
        size=_resize_size,
        needs_one_of=("width", "height"),
        doc="resize to a box (fit: clip, max, scale, crop)",
    ),
    TaskSpec(
        "crop",
        (Param("dim", dims, ("d",)),),
        op=crop,
        size=_crop_size,
        needs_one_of=("dim",),
        doc="cut out [x,y,width,height]",
    ),
    TaskSpec(
        "rotate",
        (
            Param("deg", either(whole(0, 359, modulo=360), choice("exif")), ("d",), 0),
            Param("exif", boolean, ("e",)),
            Param("background", color, ("b",), "white"),
        ),
        op=rotate,
        size=_rotate_size,
        holds=_rotate_holds,
        random_access=True,
        doc="rotate by degrees or by the EXIF orientation",
    ),
    TaskSpec("flip", op=flip, random_access=True, doc="mirror top to bottom"),
    TaskSpec("flop", op=flop, doc="mirror left to right"),
)
