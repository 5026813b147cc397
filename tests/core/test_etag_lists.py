"""Entity-tag lists of If-Match, If-None-Match and If-Range (``conditions.matches``):
strong comparison for If-Match and If-Range, weak for If-None-Match, and a list that
is no entity-tag list matches nothing (RFC 9110 8.8.3, 13.1)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from stowage.core.conditions import matches

HEX = st.text("0123456789abcdef", min_size=1, max_size=32)
ITEM = st.tuples(st.booleans(), HEX)  # (weak, opaque)
SPACE = st.sampled_from(["", " ", "  ", "\t"])


@given(items=st.lists(ITEM, max_size=5), etag=HEX, pad=SPACE, data=st.data())
def test_a_list_matches_by_its_tags(
    items: list[tuple[bool, str]], etag: str, pad: str, data: st.DataObject
) -> None:
    header = f",{pad}".join(f'{"W/" if weak else ""}"{opaque}"' for weak, opaque in items)
    header = data.draw(st.sampled_from([header, f"{pad}{header}{pad}", f"{header},"]))
    assert matches(header, etag) == any(opaque == etag for _, opaque in items)
    expected = any(opaque == etag and not weak for weak, opaque in items)
    assert matches(header, etag, strong=True) == expected


@given(etag=HEX, spoil=st.sampled_from(["{}", '"{}', '{}"', "W/{}", 'w/"{}"', "'{}'"]))
def test_a_tag_without_its_quotes_is_no_tag(etag: str, spoil: str) -> None:
    for header in (spoil.format(etag), f'"other", {spoil.format(etag)}'):
        assert not matches(header, etag) and not matches(header, etag, strong=True)


@given(etag=HEX, strong=st.booleans())
def test_a_star_matches_any_tag(etag: str, strong: bool) -> None:
    assert matches(" * ", etag, strong=strong)
