"""Every task that draws a colour (a frame, a background, a shadow, a collage's margins)
draws the colour asked, its alpha included, whatever the source: grey, grey with alpha,
16-bit grey, CMYK, RGB, RGBA (processing/ops.py ``drawable``, ``over``). Red drawn on a
grey JPEG came out grey 54 or white 255, and ``circle=background:0000FF80`` came out
opaque blue."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest
import pyvips

from stowage.processing import params
from tests.processing.test_composite import render

WIDTH, HEIGHT = 400, 300  # large enough that a vignette's corner is all background
Point = Callable[[pyvips.Image], tuple[int, int]]
CORNER: Point = lambda image: (0, 0)  # noqa: E731
SHADOW_ONLY: Point = lambda image: (image.width - 1, image.height - 1)  # noqa: E731
TOP_RIGHT: Point = lambda image: (image.width - 1, 0)  # noqa: E731
IN_FRAME: Point = lambda image: (1, 1)  # noqa: E731
OTHER = "B" * 20  # a collage's second file
WEIGHTED = (
    -1
)  # scaled with colours weighted by alpha: within 255 / alpha levels (ops.premultiplied)

#: A chain drawing the colour ``{c}``, where it shows alone, and how close it must be.
CASES: tuple[tuple[str, Point, int], ...] = (
    ("border=width:10,color:{c}", CORNER, 1),
    ("rotate=deg:45,background:{c}", CORNER, 1),
    ("rotate=deg:30,background:{c}/resize=width:200", CORNER, WEIGHTED),
    ("circle=background:{c}", CORNER, 1),
    ("rounded_corners=radius:30,blur:0,background:{c}", CORNER, 1),
    ("rounded_corners=radius:max,blur:2,background:{c}", CORNER, 1),
    ("circle/output=background:{c}", CORNER, 1),
    ("shadow=blur:0,opacity:100,vector:[20,20],color:{c},background:transparent", SHADOW_ONLY, 1),
    ("shadow=blur:0,vector:[20,20],background:{c}", TOP_RIGHT, 1),
    ("polaroid=color:{c},background:transparent", IN_FRAME, 1),
    ("polaroid=rotate:45,background:{c}", CORNER, 1),
    ("torn_edges=spread:[5,10],background:{c}", CORNER, 1),
    ("vignette=amount:100,blurmode:linear,background:{c}", CORNER, 3),
    (f"collage=files:[{OTHER}],width:300,height:200,margin:20,color:{{c}}", CORNER, 1),
    ("monochrome/border=width:4,color:{c}", CORNER, 1),
)


def _pattern(bands: int) -> pyvips.Image:
    xy = pyvips.Image.xyz(WIDTH, HEIGHT)
    planes = [xy[0] % 256, xy[1] % 256, (xy[0] + xy[1]) % 256][:bands]
    return planes[0].bandjoin(planes[1:]) if bands > 1 else planes[0]


def source(tmp: Path, kind: str) -> Path:
    """A generated source of ``kind``; its alpha, where it has one, is opaque (the shadow
    then has the colour's own alpha) yet kept as a band."""
    grey = _pattern(1).cast("uchar").copy(interpretation="b-w")
    rgb = _pattern(3).cast("uchar").copy(interpretation="srgb")
    made = {
        "grey.jpg": grey,
        "greya.png": grey.bandjoin(255).copy(interpretation="b-w"),
        "grey16.png": (grey.cast("ushort") * 257).copy(interpretation="grey16"),
        "cmyk.jpg": rgb.icc_transform("cmyk", embedded=False),
        "rgb.jpg": rgb,
        "rgba.png": rgb.bandjoin(255).copy(interpretation="srgb"),
    }[kind]
    path = tmp / kind
    made.write_to_file(str(path))
    return path


def colours(seed: str, count: int) -> list[str]:
    """Named colours, greys and random hex ones, opaque, clear and partly transparent."""
    pick = random.Random(seed)
    names = ["red", "transparent", "none", "gray50", "white", "black"]
    made = []
    for _ in range(count):
        r, g, b = (pick.randrange(256) for _ in range(3))
        if pick.random() < 0.25:
            g = b = r  # a grey: it may leave a grey image grey
        alpha = pick.choice([255, 255, pick.randrange(64, 255), 0])
        made.append(f"{r:02x}{g:02x}{b:02x}" + ("" if alpha == 255 else f"{alpha:02x}"))
    return [pick.choice(names), *made]


def rgba_at(image: pyvips.Image, x: int, y: int) -> tuple[int, int, int, int]:
    values = [round(v) for v in image(x, y)]
    colour, alpha = (values[:-1], values[-1]) if image.bands in (2, 4) else (values, 255)
    r, g, b = colour if len(colour) == 3 else colour * 3
    return r, g, b, alpha


@pytest.mark.parametrize(
    "kind", ["grey.jpg", "greya.png", "grey16.png", "cmyk.jpg", "rgb.jpg", "rgba.png"]
)
def test_every_task_draws_the_colour_asked_with_its_alpha(tmp_path: Path, kind: str) -> None:
    path = source(tmp_path, kind)
    other = source(tmp_path, "rgb.jpg" if kind != "rgb.jpg" else "grey.jpg")
    for number, (template, point, within) in enumerate(CASES):
        for name in colours(f"{kind}/{number}", 2):
            chain = template.format(c=name)
            made = render(
                tmp_path, path, [*chain.split("/"), "output=format:png"], ((OTHER, other),)
            )
            got = rgba_at(made, *point(made))
            r, g, b, alpha = params.rgba(name)
            assert abs(got[3] - alpha) <= abs(within), (chain, kind, got)
            if alpha:  # a clear pixel's colour is no one's
                near = within if within != WEIGHTED else 1 + 255 / alpha
                assert max(abs(v - w) for v, w in zip(got[:3], (r, g, b), strict=True)) <= near, (
                    chain,
                    kind,
                    got,
                )


@pytest.mark.parametrize("seed", range(6))
def test_a_turn_draws_its_background_in_the_corners_only(tmp_path: Path, seed: int) -> None:
    """The background of ``rotate`` fills what the turn opens; the picture's own
    transparent pixels stay so, at any angle (a right angle opens nothing): it was drawn
    under the whole picture at other angles, a transparent logo turned 45 degrees came
    out on white."""
    rng = random.Random(seed)
    hole = pyvips.Image.black(WIDTH, HEIGHT).draw_rect(255, 150, 100, 100, 100, fill=True)
    picture = pyvips.Image.black(WIDTH, HEIGHT).new_from_image([200, 60, 20]).cast("uchar")
    source = tmp_path / "holed.png"
    picture.bandjoin((255 - hole).cast("uchar")).copy(interpretation="srgb").pngsave(str(source))
    colour = "".join(f"{rng.randrange(256):02x}" for _ in range(3))
    for deg in (rng.randint(1, 89), 90 * rng.randint(1, 3), rng.randint(91, 359)):
        made = render(tmp_path, source, [f"rotate=deg:{deg},background:{colour}"], ())
        centre = made(made.width // 2, made.height // 2)
        assert centre[3] == 0, (deg, centre)  # the hole, where the turn keeps the middle
        if deg % 90:
            corner = [round(v) for v in made(0, 0)]
            assert corner == [*params.rgba(colour)[:3], 255], (deg, corner)


#: The tasks whose colour is the ground under the whole picture (docs/transformations.md,
#: Colors), the colour ``{c}`` as that ground; ``{w}`` a border's width, ``{f}`` a frame's
#: colour, ``{v}`` a shadow's vector (its shadow clear: the ground is what is checked).
GROUNDS = (
    "circle=background:{c}",
    "rounded_corners=radius:40,background:{c}",
    "shadow=blur:0,opacity:0,vector:{v},background:{c}",
    "polaroid=color:{f},background:{c}",
    "torn_edges=spread:[2,12],background:{c}",
    "vignette=amount:100,background:{c}",
    "border=width:{w},color:{c}",
    "border=width:{w},color:{f},background:{c}",
    "output=background:{c}",
)


def _holed(tmp: Path, rng: random.Random, grey: bool) -> tuple[Path, list[tuple[int, int]]]:
    """A picture of one random colour, opaque, with a clear square and a partly
    transparent one near its middle; the squares' centres."""
    tone = [rng.randrange(256)] * 3 if grey else [rng.randrange(256) for _ in range(3)]
    alpha = pyvips.Image.black(WIDTH, HEIGHT) + 255
    alpha = alpha.draw_rect(0, 140, 110, 40, 40, fill=True)
    alpha = alpha.draw_rect(rng.randrange(1, 255), 220, 110, 40, 40, fill=True)
    picture = (pyvips.Image.black(WIDTH, HEIGHT) + tone[: 1 if grey else 3]).bandjoin(alpha)
    path = tmp / "holed.png"
    picture.cast("uchar").copy(interpretation="b-w" if grey else "srgb").pngsave(str(path))
    return path, [(160, 130), (240, 130)]


def _over(front: tuple[int, ...], ground: tuple[int, ...]) -> tuple[float, ...]:
    """``front`` (r, g, b, alpha) composited over ``ground``, straight alpha."""
    shown, under = front[3] / 255, ground[3] / 255 * (1 - front[3] / 255)
    total = shown + under
    if total == 0:
        return (0, 0, 0, 0)
    mixed = ((f * shown + g * under) / total for f, g in zip(front[:3], ground[:3], strict=True))
    return (*mixed, total * 255)


@pytest.mark.parametrize("seed", range(8))
def test_the_ground_colour_is_under_every_transparent_pixel(tmp_path: Path, seed: int) -> None:
    """Under a clear pixel of the picture shows the ground colour as asked; under a
    partly transparent one the picture composited over it (an opaque ground flattens).
    ``border`` left its middle clear, and ignored its ``background``."""
    rng = random.Random(seed)
    source, points = _holed(tmp_path, rng, grey=seed % 2 == 1)
    picture = pyvips.Image.new_from_file(str(source))
    for number, template in enumerate(GROUNDS):
        for name in colours(f"ground/{seed}/{number}", 2):
            frame = rng.choice(["red", "00ff0080", "transparent", "gray20"])
            vector = f"[{rng.randrange(0, 30)},{rng.randrange(0, 30)}]"
            chain = template.format(c=name, w=rng.randint(1, 30), f=frame, v=vector)
            made = render(tmp_path, source, [*chain.split("/"), "output=format:png"], ())
            # a frame is as wide on the left as on the right, and as deep at the top
            left = 0 if chain.startswith("shadow") else (made.width - WIDTH) // 2
            for x, y in points:
                want = _over(rgba_at(picture, x, y), params.rgba(name))
                got = rgba_at(made, x + left, y + left)
                assert abs(got[3] - want[3]) <= 1, (chain, want, got)
                near = 2 + 255 / want[3] if want[3] else 256
                assert max(abs(a - b) for a, b in zip(got[:3], want[:3], strict=True)) <= near, (
                    chain,
                    want,
                    got,
                )
