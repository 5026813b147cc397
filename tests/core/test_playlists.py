"""``video_playlist``'s rewrite: each Filestack CDN link of a handle (hosted, or this
server's) in a playlist's lines and ``URI="..."`` attributes becomes this server's link
of that handle; every other byte is kept."""

from __future__ import annotations

import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stowage import errors
from stowage.core import playlists

OWN = "127.0.0.1:8081"
HANDLES = st.text(string.ascii_letters + string.digits + "_-", min_size=20, max_size=20)
HOSTS = st.sampled_from(["cdn.filestackcontent.com", "CDN.filestackcontent.com", OWN])
OTHER = st.sampled_from(
    ["seg-00001.ts", "https://example.com/a.ts", "#EXTINF:6.0,", "#EXT-X-ENDLIST", "", "x y"]
)


def _link(handle: str) -> str:
    return f"https://here.example/{handle}?policy=P&signature=S"


@given(
    lines=st.lists(
        st.one_of(
            st.tuples(HOSTS, HANDLES, st.sampled_from(["", "?cache=true"])).map(
                lambda t: ("link", t)
            ),
            OTHER.map(lambda line: ("other", line)),
        ),
        max_size=12,
    ),
    crlf=st.booleans(),
)
def test_each_link_is_rewritten_and_nothing_else(
    lines: list[tuple[str, object]], crlf: bool
) -> None:
    end = "\r\n" if crlf else "\n"
    written, expected = ["#EXTM3U"], ["#EXTM3U"]
    for kind, item in lines:
        if kind == "link":
            host, handle, query = item  # type: ignore[misc]
            written.append(f"https://{host}/{handle}{query}")
            expected.append(_link(handle))
        else:
            written.append(str(item))
            expected.append(str(item))
    got = playlists.rewritten(end.join(written), OWN, _link)
    assert got == end.join(expected)


@given(handle=HANDLES)
def test_a_tags_uri_is_rewritten_too(handle: str) -> None:
    text = f'#EXTM3U\n#EXT-X-MAP:URI="https://cdn.filestackcontent.com/{handle}",BYTERANGE="9"\n'
    assert playlists.rewritten(text, OWN, _link) == (
        f'#EXTM3U\n#EXT-X-MAP:URI="{_link(handle)}",BYTERANGE="9"\n'
    )


@pytest.mark.parametrize(
    "kept",
    [
        "https://cdn.filestackcontent.com/short",  # no handle
        "https://cdn.filestackcontent.com/AAAAAAAAAAAAAAAAAAAA/extra.ts",  # a longer path
        "https://evil.example/AAAAAAAAAAAAAAAAAAAA",  # another host
        "https://filestackcontent.com.evil.example/AAAAAAAAAAAAAAAAAAAA",
    ],
)
def test_other_urls_are_kept(kept: str) -> None:
    text = f"#EXTM3U\n{kept}\n"
    assert playlists.rewritten(text, OWN, _link) == text


def test_a_file_that_is_no_playlist_is_refused() -> None:
    with pytest.raises(errors.UnsupportedMediaType, match="EXTM3U"):
        playlists.rewritten(f"hello\nhttps://cdn.filestackcontent.com/{'A' * 20}", OWN, _link)
