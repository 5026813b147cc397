"""``pdfinfo=colorinfo:true`` on generated PDFs: a page filled with a colour, or carrying
a thin coloured line, is in colour; pages of greys (fills and thin lines, any grey) are
not; the answer lists every page in order."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stowage.processing import chain as chains
from stowage.processing.vips import VipsEngine
from tests.processing import pdfs
from tests.processing.test_pdf import LIMITS

GREY = st.floats(0, 1).map(lambda v: (v, v, v))
#: Colours whose channels differ by at least a fifth: clearly not a grey.
COLOUR = st.tuples(st.floats(0, 1), st.floats(0, 1), st.floats(0, 1)).filter(
    lambda c: max(c) - min(c) >= 0.25
)
BOX = st.tuples(st.integers(72, 2000), st.integers(72, 2000))


def line(colour: pdfs.Colour, width: float, height: float) -> bytes:
    """A white page crossed by one 1 pt line of ``colour``, corner to corner."""
    r, g, b = colour
    return b"%.3f %.3f %.3f RG 1 w 0 0 m %.2f %.2f l S" % (r, g, b, width, height)


def colour_info(tmp_path: Path, document: bytes) -> list[dict[str, object]]:
    source, dest = tmp_path / "d.pdf", tmp_path / "d.json"
    source.write_bytes(document)
    chain = chains.parse(["pdfinfo=colorinfo:true"])
    VipsEngine().render(source, chain, chains.output_for(chain, ""), dest, LIMITS)
    found = json.loads(dest.read_text())
    assert found["pages"] == len(found["colorinfo"])
    return list(found["colorinfo"])


@settings(max_examples=10, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.booleans(), BOX), min_size=1, max_size=4), st.data())
def test_each_page_is_colour_or_greys(
    tmp_path_factory: pytest.TempPathFactory,
    specs: list[tuple[bool, bool, tuple[int, int]]],
    data: st.DataObject,
) -> None:
    """Each page: coloured or grey, filled or one thin line, of any size."""
    contents, boxes = [], []
    for in_colour, filled, (width, height) in specs:
        colour = data.draw(COLOUR if in_colour else GREY)
        draw = pdfs.filled if filled else line
        contents.append(draw(colour, width, height))
        boxes.append((float(width), float(height)))
    found = colour_info(tmp_path_factory.mktemp("pdf"), pdfs.pages(boxes, contents))
    expected = [{"page": n, "color": c} for n, (c, _, _) in enumerate(specs, start=1)]
    assert found == expected


def test_a_huge_page_is_judged_small(tmp_path: Path) -> None:
    """A 200-inch page is drawn at most 1024 px a side: judged, not refused."""
    boxes = [(14_400.0, 14_400.0), pdfs.LETTER]
    contents = [line(pdfs.BLUE, *boxes[0]), pdfs.filled((0.5, 0.5, 0.5), *pdfs.LETTER)]
    found = colour_info(tmp_path, pdfs.pages(boxes, contents))
    assert found == [{"page": 1, "color": True}, {"page": 2, "color": False}]


def test_without_colorinfo_there_is_no_colour_answer(tmp_path: Path) -> None:
    source, dest = tmp_path / "d.pdf", tmp_path / "d.json"
    source.write_bytes(pdfs.three_pages())
    chain = chains.parse(["pdfinfo"])
    VipsEngine().render(source, chain, chains.output_for(chain, ""), dest, LIMITS)
    assert "colorinfo" not in json.loads(dest.read_text())
