"""Range header parsing (checklist item 35)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stowage import errors
from stowage.http.responses import disposition, parse_range


@pytest.mark.parametrize(
    ("header", "size", "expected"),
    [
        ("bytes=4-7", 10, (4, 7)),
        ("bytes=4-", 10, (4, 9)),
        ("bytes=-7", 10, (3, 9)),
        ("bytes=0-0", 10, (0, 0)),
        ("bytes=9-9", 10, (9, 9)),
        ("bytes=0-", 10, (0, 9)),
        ("bytes=4-100", 10, (4, 9)),
        ("bytes=-100", 10, (0, 9)),
        ("bytes=-10", 10, (0, 9)),
        ("bytes=-1", 10, (9, 9)),
        ("bytes=0-0", 1, (0, 0)),
        ("bytes=-1", 1, (0, 0)),
        ("  bytes=4-7  ", 10, (4, 7)),
        ("bytes=004-007", 10, (4, 7)),
        ("bytes=0-" + "9" * 5000, 10, (0, 9)),
        ("bytes=-" + "9" * 5000, 10, (0, 9)),
        ("bytes=0-18446744073709551616", 10, (0, 9)),
    ],
)
def test_satisfiable_ranges(header: str, size: int, expected: tuple[int, int]) -> None:
    assert parse_range(header, size) == expected


@pytest.mark.parametrize("header", [None, ""])
def test_no_range(header: str | None) -> None:
    assert parse_range(header, 10) is None


@pytest.mark.parametrize(
    "header",
    ["bytes=0-1,2-3", "bytes=0-1, 4-5", "bytes=-1,0-0", "bytes=0-0,0-0,0-0"],
)
def test_multiple_ranges_are_ignored(header: str) -> None:
    assert parse_range(header, 10) is None


def _assert_416(header: str, size: int) -> None:
    with pytest.raises(errors.RangeNotSatisfiable) as info:
        parse_range(header, size)
    assert info.value.headers["Content-Range"] == f"bytes */{size}"
    assert info.value.status == 416


@pytest.mark.parametrize(
    "header",
    [
        "bytes=10-",
        "bytes=10-20",
        "bytes=11-",
        "bytes=" + "9" * 5000 + "-",
        "bytes=" + "9" * 5000 + "-" + "9" * 5000,
        "bytes=7-4",
        "bytes=-0",
        "bytes=-",
    ],
)
def test_unsatisfiable_ranges_are_416_with_content_range(header: str) -> None:
    _assert_416(header, 10)


@pytest.mark.parametrize("header", ["bytes=0-", "bytes=0-0", "bytes=-1", "bytes=-5", "bytes=1-"])
def test_any_range_on_an_empty_object_is_416(header: str) -> None:
    _assert_416(header, 0)


@pytest.mark.parametrize(
    "header",
    [
        "bytes=",
        "bytes=abc",
        "bytes=a-b",
        "bytes=1",
        "bytes=1-2-3",
        "bytes=-1-2",
        "bytes=+1-2",
        "bytes=1-+2",
        "bytes=0x1-2",
        "bytes= 1-2",
        "bytes=1 -2",
        "bytes=\u0663-\u0665",
        "bytes=\uff11-\uff12",
        "bytes=1-2\x00",
        "bytes=1-2\nbytes=3-4",
    ],
)
def test_malformed_ranges_are_416(header: str) -> None:
    _assert_416(header, 10)


@pytest.mark.parametrize(
    "header", ["items=0-5", "0-5", "bytes", "none=1-2", "bytes=0-1,4-5", "bytes=0-1, 3-"]
)
def test_unknown_units_and_several_ranges_are_ignored(header: str) -> None:
    """RFC 9110 14.2: an unknown unit is ignored; several ranges get the whole file."""
    assert parse_range(header, 10) is None


@pytest.mark.parametrize("unit", ["Bytes", "BYTES", "bYtEs"])
def test_the_unit_is_case_insensitive(unit: str) -> None:
    assert parse_range(f"{unit}=0-3", 10) == (0, 3)


@given(st.text(max_size=40), st.integers(0, 1000))
@settings(max_examples=300, deadline=None)
def test_any_header_gives_a_range_none_or_416(header: str, size: int) -> None:
    try:
        span = parse_range(header, size)
    except errors.RangeNotSatisfiable as exc:
        assert exc.headers["Content-Range"] == f"bytes */{size}"
        return
    if span is not None:
        start, end = span
        assert 0 <= start <= end < size


@given(
    size=st.integers(1, 10**12),
    first=st.integers(0, 10**13) | st.none(),
    last=st.integers(0, 10**13) | st.none(),
)
@settings(max_examples=400, deadline=None)
def test_valid_ranges_stay_inside_the_object(
    size: int, first: int | None, last: int | None
) -> None:
    header = f"bytes={'' if first is None else first}-{'' if last is None else last}"
    try:
        span = parse_range(header, size)
    except errors.RangeNotSatisfiable:
        unsatisfiable = (
            (first is None and last is None)
            or (first is None and last == 0)
            or (first is not None and first >= size)
            or (first is not None and last is not None and last < first)
        )
        assert unsatisfiable, header
        return
    assert span is not None
    start, end = span
    assert 0 <= start <= end < size
    if first is not None:
        assert start == first
        assert end == (size - 1 if last is None else min(last, size - 1))
    else:
        assert last is not None
        assert end == size - 1 and end - start + 1 == min(last, size)


# --- Content-Disposition (checklist item 18) ------------------------------------------------


@pytest.mark.parametrize(
    "filename",
    ['a"b.txt', "a\r\nSet-Cookie: x=1.txt", "a\\b.txt", "ünïcode.txt", "a;b=c.txt", ""],
)
def test_disposition_never_breaks_out_of_the_header(filename: str) -> None:
    value = disposition("attachment", filename)
    assert "\r" not in value and "\n" not in value
    assert all(0x20 <= ord(c) < 0x7F for c in value)
    fallback = value.split('filename="', 1)[1].split('"', 1)[0]
    assert '"' not in fallback and "\\" not in fallback
    assert value.startswith('attachment; filename="')
    assert "filename*=UTF-8''" in value
