"""The first File API's convert query read as today's chain (processing/legacy.py):
every combination of its parameters makes a chain the grammar takes; a value or a
parameter it does not know is a 400 that names it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stowage import errors
from stowage.processing import chain, grammar, legacy

H2 = "W" * 20
VALUES = {
    "w": st.integers(1, 4000).map(str),
    "h": st.integers(1, 4000).map(str),
    "fit": st.sampled_from(["clip", "crop", "scale", "max"]),
    "align": st.sampled_from(["top", "bottom", "left", "right", "faces", "center", "top,left"]),
    "crop": st.tuples(*[st.integers(0, 500)] * 2, *[st.integers(1, 500)] * 2).map(
        lambda box: ",".join(map(str, box))
    ),
    "crop_first": st.sampled_from(["true", "false"]),
    "rotate": st.sampled_from(["0", "90", "180", "270", "45", "exif", "-30"]),
    "filter": st.sampled_from(["blur", "sharpen"]),
    "blurAmount": st.integers(1, 20).map(str),
    "sharpenAmount": st.integers(1, 20).map(str),
    "watermark": st.sampled_from(
        [
            H2,
            f"https://www.filepicker.io/api/file/{H2}",
            f"https://cdn.filestackcontent.com/{H2}",
            f"/api/file/{H2}",
            f"/{H2}",
        ]
    ),
    "watersize": st.integers(1, 500).map(str),
    "waterposition": st.sampled_from(["top", "middle,center", "bottom,right"]),
    "compress": st.sampled_from(["true", "false"]),
    "format": st.sampled_from(["jpg", "png", "webp", "gif"]),
    "quality": st.integers(1, 100).map(str),
    "cache": st.sampled_from(["true", "false"]),
}


@given(
    st.dictionaries(st.sampled_from(sorted(VALUES)), st.none()).flatmap(
        lambda keys: st.fixed_dictionaries({k: VALUES[k] for k in keys})
    )
)
def test_every_query_of_its_parameters_is_a_chain_the_grammar_takes(query: dict[str, str]) -> None:
    segments = legacy.chain_of(query)
    parsed = chain.parse(segments)
    names = [task.name for task in parsed.tasks]
    assert ("resize" in names) == ("w" in query or "h" in query)
    assert ("crop" in names) == ("crop" in query)
    assert ("watermark" in names) == ("watermark" in query)
    assert ("output" in names) == ("format" in query or "quality" in query)
    if "resize" in names and "crop" in names:
        first = "crop" if query.get("crop_first") == "true" else "resize"
        assert names.index(first) < names.index({"crop": "resize", "resize": "crop"}[first])
    # the old API's order, whatever the query's: resize, crop, watermark, filter, rotate
    ranks = {"resize": 0, "crop": 0, "watermark": 1, "blur": 2, "sharpen": 2, "rotate": 3}
    ranked = [ranks[name] for name in names if name in ranks]
    assert ranked == sorted(ranked)


NUMBERS = ("w", "h", "crop", "rotate", "blurAmount", "sharpenAmount", "watersize", "quality")


def _respelled(text: str, data: st.DataObject) -> str:
    """A whole number as a saved link or a program may write it: ``100.0``, ``0100``,
    ``100e0``, ``+100`` (a decimal is rounded half up: test_catalogue)."""
    if text == "exif":
        return text
    sign, digits = ("-", text[1:]) if text.startswith("-") else ("", text)
    spelled = data.draw(
        st.sampled_from([f"{digits}.0", f"0{digits}", f"{digits}e0", f"{digits}.000", f"+{digits}"])
    )
    if sign and spelled.startswith("+"):
        spelled = spelled[1:]
    return sign + spelled


@given(
    st.dictionaries(st.sampled_from(sorted(VALUES)), st.none()).flatmap(
        lambda keys: st.fixed_dictionaries({k: VALUES[k] for k in keys})
    ),
    st.data(),
)
def test_a_number_spelled_as_the_chain_takes_it_is_that_number(
    query: dict[str, str], data: st.DataObject
) -> None:
    """``w=100.0``, ``w=1e2``, ``rotate=90.0``, ``crop=10,10,100.5,80`` were 400 here while
    the chain takes them (and rounds half up)."""
    other = {
        k: ",".join(_respelled(part, data) for part in v.split(",")) if k in NUMBERS else v
        for k, v in query.items()
    }
    expected = chain.parse(legacy.chain_of(query)).key()
    assert chain.parse(legacy.chain_of(other)).key() == expected, other


_TEXT = st.text(
    st.characters(blacklist_characters='"', blacklist_categories=("Cs", "Cc")), min_size=1
).filter(str.strip)  # a query's text: UTF-8, no quote (the store task quotes it)


@given(
    path=_TEXT,
    location=st.sampled_from(["S3", "azure", "gcs", "dropbox", "rackspace"]),
    filename=_TEXT,
)
def test_a_post_stores_where_its_query_says(path: str, location: str, filename: str) -> None:
    query = {"w": "10", "location": location, "path": path, "filename": filename}
    segments = legacy.chain_of(query, storing=True)
    found = grammar.parse_path("/" + "/".join([*segments, H2]))
    assert found.store is not None and found.handle == H2
    assert (
        found.store.get("path") == path.strip(" \t")  # only ASCII blanks are trimmed
        and found.store.get("filename") == filename.strip(" \t")
    )
    assert found.store.get("location") == location.lower()
    with pytest.raises(errors.InvalidParameter):
        legacy.chain_of(query)  # a GET stores nothing: these are not its parameters


def test_the_sdks_url_reads_as_its_tasks() -> None:
    query = {"w": "160", "h": "120", "fit": "crop", "align": "faces", "format": "png"}
    assert legacy.chain_of(query) == [
        "resize=width:160,height:120,fit:crop,align:faces",
        "output=format:png",
    ]
    assert legacy.chain_of(
        {"watermark": f"https://x/api/file/{H2}", "waterposition": "top,left"}
    ) == [f"watermark=file:{H2},position:[top,left]"]
    assert legacy.chain_of({"policy": "p", "signature": "s", "cache": "false"}) == []


@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ({"w": "100", "zoom": "2"}, "zoom"),
        ({"w": "10/flip"}, "w"),
        ({"crop": "1,2,3"}, "crop"),
        ({"rotate": "90,fit:crop"}, "rotate"),
        ({"watermark": "https://example.com/logo.png"}, "watermark"),
        ({"watermark": f"https://evil.example.com/{H2}"}, "watermark"),  # was taken as H2
        ({"watermark": f"https://evil.example.com/x/{H2}?sig=1"}, "watermark"),
        ({"watermark": f"https://cdn.filestackcontent.com.evil.net/{H2}"}, "watermark"),
        ({"filter": "sepia"}, "filter"),
        ({"fit": "crop/x"}, "fit"),
        ({"w": "\u00a0100"}, "w"),  # only ASCII blanks are trimmed
        ({"rotate": "\u3000exif"}, "rotate"),
        ({"fit": "\u2028crop"}, "fit"),
        ({"format": "png\u2029"}, "format"),
        ({"crop_first": "\u0085true"}, "crop_first"),
        ({"fit": "cro\u212a"}, "fit"),  # KELVIN SIGN: lower-cased it is "k"
        ({"filter": "blur", "blurAmount": "\uff11"}, "blurAmount"),  # a fullwidth 1
    ],
)
def test_what_it_does_not_know_is_a_400_naming_it(query: dict[str, str], parameter: str) -> None:
    with pytest.raises(errors.InvalidParameter) as refused:
        legacy.chain_of(query)
    assert refused.value.details["parameter"] == parameter
