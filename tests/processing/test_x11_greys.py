"""``gray0`` to ``gray100`` are X11's greys (``rgb.txt``, which ImageMagick, the hosted
service's drawer, copies): N x 2.55 rounded half up in floating point. Rounded half to
even, gray30, gray50, gray70 and gray90 were drawn a level off (gray50 as 128 where
every X11 and ImageMagick colour list says 127, 7F7F7F): found by drawing generated
colours with ``border``, ``collage`` and ``rounded_corners`` and reading the pixels."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
import pyvips

from stowage.processing import params
from tests.processing.test_spellings import picture, rendered

H = "A" * 20
RGB_TXT = Path("/usr/share/X11/rgb.txt")


def x11_grey(n: int) -> int:
    """X11's rule for ``grayN``: the product in floating point, plus a half, truncated
    (``50 * 2.55`` is 127.49999999999999 there, so gray50 is 127 and gray30 77)."""
    return int(n * 2.55 + 0.5)


@pytest.mark.parametrize("n", range(101))
def test_each_grey_is_x11s(n: int) -> None:
    level = x11_grey(n)
    assert params.rgba(f"gray{n}") == (level, level, level, 255)


@pytest.mark.skipif(not RGB_TXT.is_file(), reason="no X11 rgb.txt on this machine")
def test_the_rule_is_the_one_rgb_txt_holds() -> None:
    listed = dict(
        (int(m.group(2)), int(m.group(1)))
        for m in re.finditer(r"^\s*(\d+)\s+\d+\s+\d+\s+gray(\d+)$", RGB_TXT.read_text(), re.M)
    )
    assert len(listed) == 101 and all(listed[n] == x11_grey(n) for n in listed)


@pytest.mark.parametrize("seed", range(3))
def test_a_grey_is_drawn_at_its_level(tmp_path: Path, seed: int) -> None:
    """A drawn frame of a generated grey (the ties among them) has that level."""
    pick = random.Random(seed)
    n = pick.choice([30, 50, 70, 90, pick.randrange(101)])
    width = pick.randint(1, 6)
    source = picture(tmp_path / "in.png", pick.randint(8, 40), pick.randint(8, 40))
    task = pick.choice(
        [f"border=width:{width},color:gray{n}", f"rounded_corners=background:gray{n}"]
    )
    image: pyvips.Image = rendered(tmp_path, source, f"/{task}/{H}", "image/png")
    level = x11_grey(n)
    assert [round(v) for v in image(0, 0)][:3] == [level, level, level], task
