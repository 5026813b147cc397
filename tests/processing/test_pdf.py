"""The PDF engine's pieces without a server: the size a page is drawn at (the density,
or less for a resize that follows), the limits before drawing, and pdfconvert's page
ranges (generated)."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
import pyvips
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from stowage import errors
from stowage.processing import chain as chains
from stowage.processing import documents, pdf
from stowage.processing.base import Limits
from stowage.processing.vips import VipsEngine
from tests.processing import pdfs

LIMITS = Limits(100_000_000, 1 << 30, 10_000, 30)
LETTER = (612.0, 792.0)


@pytest.mark.parametrize(
    ("segments", "scale"),
    [
        (["output=format:png"], 1.0),
        (["output=format:png,density:144"], 2.0),
        (["output=format:png", "resize=width:306"], 0.5),
        (["output=format:png", "resize=height:36"], 36 / 792),
        (["output=format:png", "resize=width:300,height:300"], 300 / 612),  # covers both
        (["output=format:png,density:15", "resize=height:36"], 36 / 792),
        (["output=format:png,density:15", "resize=height:400"], 15 / 72),  # no upscale
        (["output=format:png", "resize=width:100,fit:max"], 1.0),  # depends on drawn size
        (["output=format:png", "flip", "resize=width:100"], 1.0),  # resize is not first
    ],
)
def test_the_drawn_scale(segments: list[str], scale: float) -> None:
    chain = chains.parse(segments)
    density = pdf._asked_page(chain)[1]
    assert pdf.drawn_scale(chain, LETTER, density) == pytest.approx(scale)


@given(st.floats(1, 20_000), st.floats(1, 20_000), st.integers(1, 500))
@example(1.0, 8.5, 72)  # a half: up, as the engine rounds
def test_the_limits_are_checked_from_the_box(width: float, height: float, density: int) -> None:
    scale = density / 72
    exact = [Fraction(side) * density / 72 for side in (width, height)]
    # Halves round up (round() takes them to even: 8.5 was 8 here and 9 in the engine);
    # a side within float error of a half may go either way (documents.to_pixels).
    off = [abs(e % 1 - Fraction(1, 2)) for e in exact]
    assume(all(o == 0 or o > Fraction(1, 10**6) for o in off))
    w, h = (max(1, math.floor(e + Fraction(1, 2))) for e in exact)
    fits = max(w, h) <= LIMITS.max_output_dimension and w * h <= LIMITS.max_input_pixels
    if fits:
        assert pdf.pixels((width, height), scale, LIMITS) == (w, h)
    else:
        with pytest.raises(errors.ImageTooLarge):
            pdf.pixels((width, height), scale, LIMITS)


@given(st.lists(st.tuples(st.integers(1, 50), st.integers(0, 50)), min_size=1, max_size=8))
def test_page_ranges_pick_the_pages_in_order(spans: list[tuple[int, int]]) -> None:
    texts = tuple(f"{first}-{first + extra}" for first, extra in spans)
    checked = documents.page_ranges(texts)
    assert isinstance(checked, tuple)
    wanted = [p for first, extra in spans for p in range(first, first + extra + 1)]
    count = 100
    assert pdf.pages(tuple(str(r) for r in checked), count) == wanted
    short = max(wanted) - 1
    if short >= 1:
        with pytest.raises(errors.InvalidParameter, match=f"no page {max(wanted)}"):
            pdf.pages(tuple(str(r) for r in checked), short)


def test_open_ended_ranges() -> None:
    assert documents.page_ranges(("3-", -2, 5)) == ("3-", "1-2", "5-5")
    assert pdf.pages(("3-", "1-2"), 4) == [3, 4, 1, 2]
    # A page is a whole number the schema types integer: a decimal is rounded half up.
    assert documents.page_ranges((1.5, 2.0, "+3", "4e0")) == ("2-2", "2-2", "3-3", "4-4")
    for bad in ("0", "4-2", "a", "1-2-3", 0.4, True):
        with pytest.raises(ValueError):
            documents.page_ranges((bad,))


@settings(max_examples=25, deadline=None)
@given(
    st.tuples(st.integers(36, 3000), st.integers(36, 3000)),
    st.integers(1, 300),
    st.sampled_from([pdfs.RED, pdfs.GREEN, pdfs.BLUE]),
)
@example(box=(36, 153), density=92, colour=pdfs.RED)  # 195.5 px, computed 195.4999...
def test_any_page_box_at_any_density_is_its_size_or_refused(
    tmp_path_factory: pytest.TempPathFactory,
    box: tuple[int, int],
    density: int,
    colour: pdfs.Colour,
) -> None:
    """A generated one-page PDF drawn through the engine: the image is the box at the
    density, in the page's colour, or IMAGE_TOO_LARGE when that passes the limits."""
    folder = tmp_path_factory.mktemp("pdf")
    source = folder / "p.pdf"
    source.write_bytes(pdfs.coloured([(float(box[0]), float(box[1]))], [colour]))
    limits = Limits(4_000_000, 1 << 30, 4000, 30)
    chain = chains.parse([f"output=format:png,density:{density}"])
    dest = folder / "p.png"
    # Halves round up: 153 pt at 92 DPI is 195.5 px, drawn 196 high.
    size = tuple(max(1, math.floor(side * density / 72 + 0.5)) for side in box)
    if max(size) > 4000 or size[0] * size[1] > 4_000_000:
        with pytest.raises(errors.ImageTooLarge):
            VipsEngine().render(source, chain, chains.output_for(chain, ""), dest, limits)
        return
    VipsEngine().render(source, chain, chains.output_for(chain, ""), dest, limits)
    image = pyvips.Image.new_from_file(str(dest))
    assert (image.width, image.height) == size
    centre = image.getpoint(image.width // 2, image.height // 2)
    assert [round(v / 255) for v in centre[:3]] == list(colour)
