"""``auto_image``'s reading of ``Accept`` (processing/accepts.py): the documented rule,
checked against a plain reading of it on generated headers, and the shipped VCL holding
the very same expressions (the edge's class is then the origin's choice)."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stowage.processing import accepts

VCL = Path(__file__).parents[2] / "deploy" / "varnish" / "stowage.vcl"
KINDS = ["image/avif", "image/webp", "IMAGE/AVIF", "image/webpx", "image/*", "*/*", "image/png"]
PARAMS = ["q=0", "q=0.0", "q = 0", "Q=0.000", "q=-1", "q=0e0", "q=0.5", "q=1", "q=.5", "q",
          "level=1", "sq=0", "qs=0", "q=0.001", "", " q=0 ", "q=1e-3"]  # fmt: skip
SPACE = st.sampled_from(["", " ", "\t", "  "])
ITEMS = st.builds(
    lambda pad, kind, params, tail: pad + kind + "".join(";" + p for p in params) + tail,
    SPACE,
    st.sampled_from(KINDS),
    st.lists(st.sampled_from(PARAMS), max_size=3),
    SPACE,
)
HEADERS = st.lists(ITEMS, max_size=5).map(",".join)


def random_header(rng: random.Random) -> str:
    """A header of the same shape as ``HEADERS``', for tests that cannot use ``given``."""
    spaces = ["", " ", "\t", "  "]
    items = (
        rng.choice(spaces)
        + rng.choice(KINDS)
        + "".join(";" + rng.choice(PARAMS) for _ in range(rng.randint(0, 3)))
        + rng.choice(spaces)
        for _ in range(rng.randint(0, 5))
    )
    return ",".join(items)


def reference(accept: str) -> str | None:
    """The module's rule, read the plain way: item by item, parameter by parameter."""
    for mimetype, fmt in accepts.AUTO_FORMATS:
        for item in accept.split(","):
            kind, *params = item.split(";")
            if kind.strip(" \t").lower() == mimetype and all(map(_keeps, params)):
                return fmt
    return None


def _keeps(param: str) -> bool:
    text = param.lstrip(" \t").lower()
    if not text.startswith("q") or text[1:2] not in ("", " ", "\t", "="):
        return True  # another parameter (sq, qs, level)
    return re.match(r"q[ \t]*=[ \t]*0*(\.0*)?[1-9]", text) is not None


@pytest.mark.parametrize(
    ("accept", "fmt"),
    [
        ("image/webp;level=1;q=0", None),  # the edge once read these three as WebP
        ("image/webp; q = 0", None),
        ("image/webpx", None),
        ("image/avif;q=-1,image/webp;q=0", None),
        ("image/webp;sq=0", "webp"),  # the origin once read sq=0 as q=0
        ("image/avif;q=0.001,image/webp", "avif"),
        ("image/*,*/*;q=0.8", None),
    ],
)
def test_each_q_parameter_is_read_as_a_whole(accept: str, fmt: str | None) -> None:
    assert accepts.accepted_format(accept) == fmt


@settings(max_examples=500)
@given(accept=HEADERS)
def test_the_expression_is_the_rule(accept: str) -> None:
    assert accepts.accepted_format(accept) == reference(accept)


def test_the_shipped_vcl_holds_the_same_expressions() -> None:
    vcl = VCL.read_text()
    for mimetype, _ in accepts.AUTO_FORMATS:
        assert f'req.http.Accept ~ "{accepts.pattern(mimetype)}"' in vcl, mimetype
