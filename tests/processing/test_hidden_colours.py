"""What a transparent pixel holds is never seen: two images that differ only in the
colour of their fully transparent pixels give the same result (in what is shown: colour
weighted by alpha), whatever the chain. A task that mixes neighbours (a blur, a
resample, block averages, a turn) on straight alpha mixed the hidden colour in: a blue
shape on transparent red came out edged with red."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import pyvips
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stowage import errors
from stowage.processing import chain, composite
from stowage.processing.vips import VipsEngine
from tests.processing.test_engine import LIMITS
from tests.processing.test_generated_chains import segments

SIDE = 96
#: Chains that mix neighbours, each tried on its own as well as in generated chains.
MIXING = [
    "blur=amount:5",
    "pixelate=amount:7",
    "partial_blur=objects:[[0,0,96,96]]",
    "partial_pixelate=objects:[[0,0,96,96]]",
    "rotate=deg:33,background:transparent",
    "upscale",
    "upscale=upscale:false",  # the sharpen alone, which ran on straight colours
    "enhance=preset:vivid",
    "polaroid=rotate:20,background:transparent",
    "resize=width:37",
    "sharpen=amount:10",
    "output=format:avif",  # AV1 codes colour in blocks, at half resolution
    "output=format:webp",  # VP8 too, its colour at half resolution
]


def pictures(folder: Path, hidden: tuple[int, int, int]) -> Path:
    """A soft-edged disc of gradients on a transparent background of ``hidden``."""
    xy = pyvips.Image.xyz(SIDE, SIDE)
    distance = ((xy[0] - SIDE / 2) ** 2 + (xy[1] - SIDE / 2) ** 2) ** 0.5
    alpha = ((SIDE / 3 - distance) * 40).maxpair(0).minpair(255)
    shown = (xy[0] * 2).bandjoin([xy[1] * 2, 200])
    colour = (alpha > 0).ifthenelse(shown, list(hidden))
    path = folder / f"disc-{'-'.join(map(str, hidden))}.png"
    colour.bandjoin(alpha).cast("uchar").copy(interpretation="srgb").pngsave(str(path))
    return path


def shown(path: Path) -> pyvips.Image:
    """The colour a viewer sees over black: each band weighted by alpha."""
    image = pyvips.Image.new_from_file(str(path))
    if not image.hasalpha():
        return image.cast("float")
    return image.premultiply()


def rendered(source: Path, segment_list: list[str], dest: Path) -> Path | None:
    try:
        parsed = chain.parse(segment_list)
        output = chain.output_for(parsed, "image/png")
        dest = dest.with_suffix(f".{output.extension}")
        VipsEngine(threads_per_job=1).render(source, parsed, output, dest, LIMITS)
    except errors.StowageError as exc:
        assert exc.status < 500, (segment_list, exc.code)
        return None
    return dest


def same_shown(tmp_path: Path, segment_list: list[str], hidden: tuple[int, int, int]) -> None:
    first = rendered(pictures(tmp_path, (0, 0, 0)), segment_list, tmp_path / "a")
    second = rendered(pictures(tmp_path, hidden), segment_list, tmp_path / "b")
    if first is None or second is None:
        assert first is None and second is None, segment_list
        return
    if first.suffix in (".json", ".html"):  # about the image (metadata, faces), ascii
        assert first.read_bytes() == second.read_bytes(), segment_list
        return
    a, b = shown(first), shown(second)
    assert (a.width, a.height, a.bands) == (b.width, b.height, b.bands), segment_list
    # A GIF's palette is chosen from every pixel, the hidden ones too: a level or two.
    limit = 12 if first.suffix == ".gif" else 2
    assert (a - b).abs().max() <= limit, (segment_list, (a - b).abs().max())


@pytest.mark.parametrize("segment", MIXING)
def test_a_mixing_task_never_shows_the_hidden_colour(tmp_path: Path, segment: str) -> None:
    same_shown(tmp_path, segment.split("/"), (255, 0, 0))


@pytest.mark.parametrize("seed", range(16))
def test_partial_effects_never_show_the_hidden_colour(tmp_path: Path, seed: int) -> None:
    """Random boxes over the disc's edge, rect and oval, feathered or not: partial_blur
    mixed its feathered edge with the source as straight colours, and a pixel between
    the blur and a transparent one took the hidden colour."""
    rng = random.Random(seed)
    boxes = []
    for _ in range(rng.randint(1, 4)):
        w, h = rng.randint(1, SIDE), rng.randint(1, SIDE)
        boxes.append(f"[{rng.randrange(SIDE)},{rng.randrange(SIDE)},{w},{h}]")
    name = rng.choice(["partial_blur", "partial_pixelate"])
    amount = rng.randint(2, 20) if name == "partial_pixelate" else rng.uniform(0.5, 20)
    blur = rng.choice([0, rng.uniform(0.5, 20)])
    segment = (
        f"{name}=objects:[{','.join(boxes)}],amount:{amount:.2f},blur:{blur:.2f},"
        f"type:{rng.choice(['rect', 'oval'])}"
    )
    hidden = (rng.randrange(256), rng.randrange(256), rng.randrange(256))
    same_shown(tmp_path, [segment], hidden)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    chosen=segments(),
    hidden=st.tuples(st.integers(0, 255), st.integers(0, 255), st.integers(0, 255)),
)
def test_no_chain_shows_the_hidden_colour(
    tmp_path: Path, chosen: list[str], hidden: tuple[int, int, int]
) -> None:
    same_shown(tmp_path, chosen, hidden)


OTHER = "O" * 20  # another file's handle in a chain


@pytest.mark.parametrize(
    ("segment", "listed"),
    [
        (f"watermark=file:{OTHER},size:50", 0),
        (f"watermark=file:{OTHER},size:170", 0),
        (f"collage=files:[{OTHER}],width:200,height:120", 0),
        ("animate=width:60", 1),
    ],
)
def test_another_files_hidden_colour_is_never_shown(
    tmp_path: Path, segment: str, listed: int
) -> None:
    """The same for a file placed on the image (a logo exported with colours under its
    transparent pixels): a watermark scaled by ``size`` mixed them in."""
    base = tmp_path / "base.png"
    pyvips.Image.black(SIDE, SIDE).new_from_image([90, 160, 90]).cast("uchar").pngsave(str(base))
    results = []
    for hidden in ((0, 0, 0), (255, 0, 0)):
        other = pictures(tmp_path, hidden)
        with composite.using(((OTHER, other),), LIMITS, listed, tmp_path / "out"):
            made = rendered(base, [segment], tmp_path / f"made-{hidden[0]}")
        assert made is not None, segment
        results.append(shown(made))
    assert (results[0] - results[1]).abs().max() <= 2, segment
