"""Tasks that look for what a photo shows: ``smart_crop``, ``redeye``, and the
``metadata`` task (a JSON answer about the image at that step of the chain).

Where the hosted service uses machine-learned models (object detection for
``smart_crop=mode:object``, red-eye removal) these are the classical methods:
libvips' attention crop (luminance frequency, saturation, skin tones) and the face
finder's eye cascade with a redness threshold. docs/transformations.md says so.
"""

from __future__ import annotations

import functools
import json

import pyvips

from stowage.processing import decisions, faces, frames, ops
from stowage.processing.base import Task, Value
from stowage.processing.facetasks import JSON
from stowage.processing.geometry import (
    Scaler,
    cover_and_view,
    crop_cover,
    lazy_cover,
    proportional,
    search_view_size,
    view_size,
)
from stowage.processing.params import boolean, choice, color, half_up, text, whole
from stowage.processing.table import Answer, Kind, Param, TaskSpec

#: The fields ``metadata=params:[...]`` may name (filestack-js 4.3.8's schema).
METADATA_FIELDS = (
    "filename", "mimetype", "size", "width", "height", "writeable", "path", "container",
    "cloud", "exif", "source_url", "md5", "sha256", "sha1", "sha512",
)  # fmt: skip
#: A red-eye pixel is a saturated red: red over this many times the larger of green
#: and blue (a brown iris, skin or an eyebrow, 1.2-1.6 times, is not one) ...
REDNESS = 2.0
MIN_RED = 60  # ... bright enough to be one (dark reds are shadows) ...
#: ... and of a red hue, not orange or magenta: green and blue apart by at most this
#: share of red's lead over the smaller of them (about 15 degrees of hue either side).
HUE_SPREAD = 0.25


# -- smart_crop -----------------------------------------------------------------
def smart_crop(image: pyvips.Image, task: Task) -> pyvips.Image:
    scale = functools.partial(ops.scaled, image)
    return smart_crop_with(scale, task, image.width, image.height)


def smart_crop_with(scale: Scaler, task: Task, width: int, height: int) -> pyvips.Image:
    """Exactly width x height: the image scaled to cover that size, then the window on
    its faces (``face``, and ``auto`` when it finds any) or on the most interesting part
    (libvips' attention measure: ``object``, and ``auto`` without faces). ``scale`` shrinks
    on load when the task is first: a 2-megapixel JPEG to a 300-px crop decoded at 1/4."""
    want_w, want_h = _target(task, width, height)
    cover_w, cover_h = cover_size(task, width, height)
    if (want_w, want_h) == (width, height):
        return scale(cover_w, cover_h, "force")
    lazy = lazy_cover(width, height, cover_w, cover_h)
    if lazy or task.get("mode", "auto") != "object":
        # Faces are looked for in the picture at the finder's size: a cover at the
        # target's size shrank them under its smallest (a 150x150 cut of a 1000x700
        # group photo found none of its 88-134 px faces, and cut where attention was).
        # A lazy cover is never made whole: the limits and the estimate see the result
        # (a 54x135 photo to 10000x171 was refused for its 10000x25000 cover, 750 MB).
        cover, view = cover_and_view(scale, width, height, cover_w, cover_h)
    else:
        cover = view = scale(cover_w, cover_h, "force").copy_memory()  # read twice
    measured = view if lazy else cover  # where attention is measured
    left, top = decisions.decided(lambda: _window(cover, view, measured, task, want_w, want_h))
    return cover.extract_area(left, top, want_w, want_h)


def _window(
    cover: pyvips.Image,
    view: pyvips.Image,
    measured: pyvips.Image,
    task: Task,
    want_w: int,
    want_h: int,
) -> tuple[int, int]:
    """Where the window starts in ``cover``: on the faces looked for in ``view``, else on
    the most interesting part of ``measured`` (the cover, or a lazy cover's view)."""
    if task.get("mode", "auto") != "object":
        offset = faces.faces_offset(cover, want_w, want_h, view)
        if offset is not None:
            return offset
    seen_w = min(measured.width, max(1, half_up(want_w * measured.width / cover.width)))
    seen_h = min(measured.height, max(1, half_up(want_h * measured.height / cover.height)))
    cut = measured.smartcrop(seen_w, seen_h, interesting="attention")
    # extract_area's offsets are minus the start; scaled from what was measured to the cover
    left = half_up(-int(cut.xoffset) * cover.width / measured.width)
    top = half_up(-int(cut.yoffset) * cover.height / measured.height)
    return min(left, cover.width - want_w), min(top, cover.height - want_h)


def cover_size(task: Task, width: int, height: int) -> tuple[int, int]:
    """The image scaled to cover the target: the faces and the attention measure are
    looked for in it, held in memory, unless it enlarges the picture past the finder's
    size (``geometry.lazy_cover``: then in a view of it, and only the window is made)."""
    return crop_cover(*_target(task, width, height), width, height)


def faces_window(task: Task, width: int, height: int) -> tuple[int, int, int, int] | None:
    """The window smart_crop places on faces and the cover it cuts it from (want_w,
    want_h, cover_w, cover_h), or None with ``mode:object`` (no faces looked for)."""
    if task.get("mode", "auto") == "object":
        return None
    want_w, want_h = _target(task, width, height)
    return want_w, want_h, *crop_cover(want_w, want_h, width, height)


def worked_size(task: Task, width: int, height: int) -> tuple[int, int]:
    """The largest image smart_crop makes on the way (``works_on``): its cover, or for a
    lazy one the picture it holds or the view it searches, the larger; looking for faces,
    the picture at the finder's size too (``geometry.search_view_size``)."""
    cover_w, cover_h = cover_size(task, width, height)
    if lazy_cover(width, height, cover_w, cover_h):
        made = [(width, height), view_size(cover_w, cover_h)]
    elif task.get("mode", "auto") != "object":
        made = [(cover_w, cover_h), search_view_size(width, height, cover_w, cover_h)]
    else:
        made = [(cover_w, cover_h)]
    return max(made, key=lambda size: size[0] * size[1])


def _target(task: Task, width: int, height: int) -> tuple[int, int]:
    """width and height; 0 or absent: the image's own side, or in its proportion."""
    want_w, want_h = task.get("width") or 0, task.get("height") or 0
    assert isinstance(want_w, int) and isinstance(want_h, int)
    if want_w and not want_h:
        return want_w, proportional(height, width, want_w)
    if want_h and not want_w:
        return proportional(width, height, want_h), want_h
    return (want_w or width), (want_h or height)


def crop_on_faces(image: pyvips.Image, width: int, height: int) -> pyvips.Image:
    """A ``width`` x ``height`` window of ``image`` centred on its faces, or on its centre
    when none is found: what ``resize=fit:crop,align:faces`` crops a cover to."""
    image = ops.in_memory(image)  # read twice: by the finder, then by the crop
    left, top = decisions.decided(lambda: faces.anchor(image, width, height))
    return image.extract_area(left, top, width, height)


# -- redeye ---------------------------------------------------------------------
def redeye(image: pyvips.Image, task: Task) -> pyvips.Image:
    """In each eye found inside a face, the saturated red pixels turn a neutral grey of
    their green and blue's mean: the pupil turns dark, as the flash did not leave it.
    Every other pixel (skin, a brown iris, lashes, brows) is left as it is."""
    if image.bands < 3:
        return image  # grey: no red to remove
    image = ops.in_memory(image)
    for face in faces.detect(image):
        for eye in faces.eyes(image, face):
            patch = image.extract_area(eye.x, eye.y, eye.width, eye.height)
            image = image.insert(unreddened(patch), eye.x, eye.y)
    return image


def unreddened(patch: pyvips.Image) -> pyvips.Image:
    """``patch`` with its red-eye pixels (a saturated red: ``REDNESS``, ``MIN_RED``,
    ``HUE_SPREAD``) made grey at the mean of their green and blue; the rest unchanged.
    All three colour bands take that grey, so no cast is left (setting only red to the
    mean of a warm brown left green above red: a green iris)."""
    colour = patch.cast("float")
    red, green, blue = colour[0], colour[1], colour[2]
    above = green > blue
    top, low = above.ifthenelse(green, blue), above.ifthenelse(blue, green)
    spread = (green - blue).abs()
    red_eye = (red > top * REDNESS) & (red > MIN_RED) & (spread <= (red - low) * HUE_SPREAD)
    grey = ((green + blue) / 2).rint().cast(patch.format)
    fixed = red_eye.ifthenelse(grey.bandjoin([grey, grey]), patch.extract_band(0, n=3))
    if patch.bands > 3:
        fixed = fixed.bandjoin(patch.extract_band(3, n=patch.bands - 3))
    return fixed.cast(patch.format).copy(interpretation=patch.interpretation)


# -- metadata -------------------------------------------------------------------
def metadata_answer(image: pyvips.Image, task: Task) -> dict[str, int]:
    """The image's facts at this step: ``width`` and ``height`` (only those asked for
    with ``params``, when it names any). The file's own fields (filename, size, hashes,
    ...) are the service's to add: it has the file's record, a job process does not.
    Of a strip of frames (an animation), one frame's size."""
    return metadata_sizes(*frames.frame_size(image), task)


def metadata_sizes(width: int, height: int, task: Task) -> dict[str, int]:
    """``width`` and ``height`` as ``task`` (a ``metadata`` task) asks for them, in the
    order asked (``params:[height,width]`` answered width first: the service orders the
    answer only when it adds the file's own fields, ``recordfields.complete``)."""
    asked = task.get("params")
    out = {"width": width, "height": height}
    if isinstance(asked, tuple):
        return {name: out[name] for name in map(str, asked) if name in out}
    return out


def metadata_fields(value: Value) -> Value:
    items = value if isinstance(value, tuple) else (value,)
    checked = tuple(str(choice(*METADATA_FIELDS)(v)) for v in items)
    if len(set(checked)) != len(checked):
        raise ValueError("names a field twice")
    return checked


TASKS: tuple[TaskSpec, ...] = (
    TaskSpec(
        "smart_crop",
        (
            Param("mode", choice("face", "object", "auto"), ("m",), "auto"),
            # 0, which the schema allows, is not given, as resize's (params.Whole)
            Param("width", whole(1, 10_000, zero_unset=True), ("w",)),
            Param("height", whole(1, 10_000, zero_unset=True), ("h",)),
            Param("fill_color", color, (), "white"),
            Param("coords", boolean, (), False),
            Param("object", text),
        ),
        op=smart_crop,
        load_op=smart_crop_with,
        size=_target,
        works_on=worked_size,
        # neither side: the image's own size (filestack-js's schema lets {} through)
        random_access=True,
        doc="crops to exactly width x height around the faces or the most interesting part",
    ),
    TaskSpec(
        "redeye",
        op=redeye,
        random_access=True,
        doc="removes red eyes inside the faces found (classical: eye cascade, redness)",
    ),
    TaskSpec(
        "metadata",
        (Param("params", metadata_fields, ("p",)),),
        kind=Kind.ANSWER,
        doc="answers JSON facts about the file and the image at this step",
        answer=Answer(lambda image, task: metadata_text(image, task), JSON),
    ),
)


def metadata_text(image: pyvips.Image, task: Task) -> str:
    """The ``metadata`` task's answer as JSON text: the image's fields; the service adds
    the file's own (its record) when it answers."""
    return json.dumps(metadata_answer(image, task))
