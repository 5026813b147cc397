"""The ascii task: the image as an HTML page of characters, as the hosted service answers.

Two steps, so that the pixels go through the pipeline like any task's and only a small
image reaches Python:

- ``ascii_grid`` (lazy, like every operation) shrinks the image to one pixel per
  character: ``size`` columns (10-100), half as many rows as the aspect ratio gives,
  because a character cell is about twice as tall as it is wide; flattened onto the
  page's background, 8-bit sRGB;
- ``ascii_html`` reads that grid (at most 100 columns) and writes the page: a ``<pre>``
  of characters from dense to light by brightness (``reverse`` swaps the order), in the
  foreground color, or each in its pixel's color when ``colored``.

``render_ascii`` does both. It is declared with ``Answer`` in its task spec, with the answer's type
(``text/html; charset=utf-8``): the engine calls it with the chain's image in place of
saving an image, and saves the text it returns as UTF-8.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from fractions import Fraction

import pyvips

from stowage.processing import params
from stowage.processing.base import Output, Task
from stowage.processing.effects import whole
from stowage.processing.ops import srgb
from stowage.processing.table import Answer, Kind, Param, TaskSpec

OUTPUT = Output("html", "text/html; charset=utf-8", "html")
#: From the most ink to the least: a dark pixel is a dense character on a light page.
CHARACTERS = "@%#*+=-:. "
MAX_ROWS = 500  # a very tall image still makes a page of bounded size
#: An answer's renderer: the image the task's operation made -> the answer's text.
Renderer = Callable[[pyvips.Image, Task], str]


def grid_size(width: int, height: int, columns: int) -> tuple[int, int]:
    rows = params.half_up(Fraction(columns * height, width * 2))
    return columns, max(1, min(MAX_ROWS, rows))


def ascii_grid(image: pyvips.Image, task: Task) -> pyvips.Image:
    columns, rows = grid_size(image.width, image.height, whole(task, "size", 100))
    image = srgb(image)
    if image.bands < 3:
        image = image.colourspace("srgb")
    if image.hasalpha():
        r, g, b, _ = params.rgba(str(task.get("background", "ffffff")))
        image = image.flatten(background=[r, g, b]).cast("uchar")
    scaled = image.resize(columns / image.width, vscale=rows / image.height)
    return scaled.cast("uchar")


def _css(name: str) -> str:
    r, g, b, a = params.rgba(name)
    return f"rgba({r},{g},{b},{a / 255:.3g})"


def ascii_html(grid: pyvips.Image, task: Task) -> str:
    characters = CHARACTERS[::-1] if task.get("reverse") is True else CHARACTERS
    colored = task.get("colored") is True
    pixels = bytes(grid.write_to_memory())  # columns x rows x 3 bytes: at most 150 kB
    lines = []
    for y in range(grid.height):
        cells = []
        for x in range(grid.width):
            at = (y * grid.width + x) * 3
            r, g, b = pixels[at], pixels[at + 1], pixels[at + 2]
            level = (2126 * r + 7152 * g + 722 * b) // 10_000  # luminance, 0-255
            char = html.escape(characters[level * len(characters) // 256])
            cells.append(
                f'<span style="color:#{r:02x}{g:02x}{b:02x}">{char}</span>' if colored else char
            )
        lines.append("".join(cells))
    page = _css(str(task.get("background", "ffffff")))
    ink = _css(str(task.get("foreground", "000000")))
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>ascii</title>'
        f"<style>body{{background:{page};margin:0}}"
        f"pre{{color:{ink};font:10px/10px monospace;letter-spacing:1px;margin:0}}</style>"
        "</head><body><pre>\n" + "\n".join(lines) + "\n</pre></body></html>\n"
    )


def render_ascii(image: pyvips.Image, task: Task) -> str:
    """The answer: the chain's image (lazy) in, the page out. Only the grid is computed."""
    return ascii_html(ascii_grid(image, task).copy_memory(), task)


#: Tasks whose answer is not an image, by name: the renderer the engine calls with the
#: chain's image (the tasks before this one applied) in place of saving an image, and
#: the answer's type. The text is saved as UTF-8 in place of the image.

TASKS: tuple[TaskSpec, ...] = (
    TaskSpec(
        "ascii",
        (
            Param("background", params.color, short=("b",), default="ffffff"),
            Param("foreground", params.color, short=("f",), default="000000"),
            Param("colored", params.boolean, short=("c",), default=False),
            Param("size", params.integer(10, 100), short=("s",), default=100),
            Param("reverse", params.boolean, short=("r",), default=False),
        ),
        kind=Kind.ANSWER,
        answer=Answer(render_ascii, OUTPUT),
        doc="an HTML page of characters: size columns, in one color or the image's",
    ),
)
