"""Short parameter names through the CDN origin: a URL written with them answers the
bytes of the same URL written with the long names, rendered anew (``cache=false``), and
both are one derivative (one ETag). tests/processing/test_aliases.py holds the table."""

from __future__ import annotations

import pytest

from tests.api.harness import Harness
from tests.api.test_transform import decoded, get, picture, stored

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


@pytest.mark.parametrize(
    ("short", "long", "size"),
    [
        (
            "rotate=d:90,b:red/border=w:4,c:blue,b:white",
            "rotate=deg:90,background:red/border=width:4,color:blue,background:white",
            (128, 168),
        ),
        (
            "modulate=b:120,h:30,s:80/sepia=t:60/output=f:png,s:true",
            "modulate=brightness:120,hue:30,saturation:80/sepia=tone:60"
            "/output=format:png,strip:true",
            (160, 120),
        ),
    ],
    ids=["rotate-border", "modulate-sepia-output"],
)
async def test_short_names_give_the_long_names_bytes(
    harness: Harness, short: str, long: str, size: tuple[int, int]
) -> None:
    handle = await stored(harness, picture(160, 120))
    first, a = await get(harness, f"/{short}/{handle}")
    anew, b = await get(harness, f"/cache=false/{long}/{handle}")
    assert (decoded(a).width, decoded(a).height) == size
    assert a == b
    assert first.headers["ETag"] == anew.headers["ETag"]
