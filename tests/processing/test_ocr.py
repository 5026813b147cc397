"""OCR with the real Tesseract (issue 26): text drawn by libvips comes back as words
in the hosted service's shape, for generated words; Tesseract runs with no network."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
from typing import Any

import pytest
import pyvips
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stowage import errors
from stowage.processing import ocr

pytestmark = pytest.mark.needs("tesseract", by="scripts/setup.d/78-tesseract.sh")
# English words in capitals: Tesseract reads with its language model, so strings of
# random letters are sometimes "corrected" (TRTA as TRIA); words are what OCR is for.
VOCABULARY = (
    *("APPLE", "BRIDGE", "CASTLE", "DANGER", "ENGINE", "FOREST", "GARDEN", "HARBOUR"),
    *("ISLAND", "JACKET", "KETTLE", "LADDER", "MARKET", "NUMBER", "ORANGE", "PLANET"),
    *("QUARTER", "RIVER", "SILVER", "TRAVEL", "UMBRELLA", "VALLEY", "WINDOW", "YELLOW"),
    *("ZEBRA", "STORAGE", "FILE", "IMAGE", "PAPER", "LETTER", "SUMMER", "WINTER"),
    *("MOUNTAIN", "COFFEE", "DOCTOR", "MONEY", "OFFICE", "PENCIL", "RABBIT", "OCEAN"),
)
WORD = st.sampled_from(VOCABULARY)


def drawn(lines: list[str], dpi: int = 300) -> pyvips.Image:
    """Black text on white, with a margin, as a 3-band sRGB image."""
    text = pyvips.Image.text("\n".join(lines), dpi=dpi, font="sans")
    page = (255 - text).embed(30, 30, text.width + 60, text.height + 60, extend="white")
    return page.colourspace("srgb").cast("uchar")


def read(image: pyvips.Image) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(ocr.render_ocr(image, None))  # type: ignore[arg-type]
    return found


@given(st.lists(st.lists(WORD, min_size=1, max_size=3), min_size=1, max_size=3))
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_drawn_words_come_back_line_by_line(lines: list[list[str]]) -> None:
    wanted = [" ".join(words) for words in lines]
    found = read(drawn(wanted))
    read_lines = [line for area in found["document"]["text_areas"] for line in area["lines"]]
    assert [line["text"] for line in read_lines] == wanted
    assert found["text"] == "\n".join(wanted)
    for line, words in zip(read_lines, lines, strict=True):
        assert [word["text"] for word in line["words"]] == words


def test_every_box_has_four_corners_clockwise_inside_the_image() -> None:
    image = drawn(["STOWAGE READS", "THIS PAGE"])
    found = read(image)
    areas = found["document"]["text_areas"]
    assert areas
    items = [*areas]
    for area in areas:
        items += area["lines"] + [w for line in area["lines"] for w in line["words"]]
    for item in items:
        (x0, y0), (x1, y1), (x2, y2), (x3, y3) = ((c["x"], c["y"]) for c in item["bounding_box"])
        assert x0 == x3 < x1 == x2 and y0 == y1 < y2 == y3
        assert x0 >= 0 and x1 <= image.width and y0 >= 0 and y2 <= image.height
    # the first word starts where the text was drawn: at the 30-pixel margin
    first = areas[0]["lines"][0]["words"][0]["bounding_box"][0]
    assert abs(first["x"] - 30) <= 4 and abs(first["y"] - 30) <= 4


def test_an_image_without_text_answers_no_areas() -> None:
    blank = pyvips.Image.black(300, 200).invert().colourspace("srgb").cast("uchar")
    assert read(blank) == {"document": {"text_areas": []}, "text": ""}


def test_alpha_is_flattened_onto_white() -> None:
    text = pyvips.Image.text("TRANSPARENT", dpi=300).embed(20, 20, 800, 200)
    ink = pyvips.Image.black(800, 200, bands=3).bandjoin(text).cast("uchar")  # black ink
    rgba = ink.copy(interpretation="srgb")
    assert read(rgba)["text"] == "TRANSPARENT"


def test_tesseract_past_its_deadline_is_a_timeout(tmp_path: Any) -> None:
    page = tmp_path / "page.png"
    drawn(["SLOW"] * 40, dpi=600).pngsave(str(page))
    with pytest.raises(errors.ProcessingTimeout):
        ocr._tesseract(page, 0.05)


def test_the_sandbox_prefix_reaches_no_listener() -> None:
    """What Tesseract runs under: a listener on the host's loopback sees no connection
    from inside, while the same probe from outside does reach it (the control)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    probe = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=1)"

    def connections(argv: list[str]) -> tuple[int, int]:
        done = subprocess.run(argv, capture_output=True, timeout=10, check=False)
        seen = 0
        with contextlib.suppress(OSError):
            while True:
                listener.accept()[0].close()
                seen += 1
        return done.returncode, seen

    try:
        assert connections([sys.executable, "-c", probe]) == (0, 1)
        code, seen = connections(ocr.sandboxed([sys.executable, "-c", probe], 5, 2 << 30))
        assert code != 0 and seen == 0
    finally:
        listener.close()


def test_the_sandbox_limits_memory() -> None:
    grab = "x = bytearray(600 * 1024 * 1024)"
    done = subprocess.run(
        ocr.sandboxed([sys.executable, "-c", grab], 5, 256 << 20),
        capture_output=True,
        timeout=10,
        check=False,
    )
    assert done.returncode != 0 and b"MemoryError" in done.stderr
