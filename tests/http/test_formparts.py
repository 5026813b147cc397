"""The streaming multipart/form-data parser: exact bytes however the body is cut into
pieces, received pieces passed on without a copy, and malformed bodies refused."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Iterable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stowage import errors
from stowage.http import formparts
from stowage.http.formparts import FormParts

BOUNDARY = "B0und"
DELIM = b"\r\n--" + BOUNDARY.encode()
# Bytes that make near-misses of the delimiter likely: CR, LF, dashes, the boundary's own.
NEAR = st.binary(max_size=0) | st.sampled_from(
    [b"\r", b"\n", b"-", b"--", b"\r\n", b"\r\n-", b"\r\n--", b"B", b"B0un", b"x", b"\r\n--B0un"]
)
BODY = st.lists(NEAR | st.binary(max_size=6), max_size=12).map(b"".join)


async def pieces_of(parts: Iterable[bytes]) -> AsyncIterator[bytes]:
    for part in parts:
        if part:
            yield part


def form(parts: list[tuple[str, bytes]], preamble: bytes = b"", epilogue: bytes = b"") -> bytes:
    out = [preamble]
    for name, body in parts:
        out.append(
            b"--" + BOUNDARY.encode() + b"\r\n"
            b'Content-Disposition: form-data; name="' + name.encode() + b'"; filename="f.bin"\r\n'
            b"Content-Type: application/octet-stream\r\n\r\n" + body + b"\r\n"
        )
    out.append(b"--" + BOUNDARY.encode() + b"--\r\n" + epilogue)
    return b"".join(out)


def cut(data: bytes, at: list[int]) -> list[bytes]:
    points = sorted({min(max(0, a), len(data)) for a in at})
    edges = [0, *points, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(edges)]


async def parse(pieces: list[bytes]) -> list[tuple[str | None, bytes]]:
    parser = FormParts(pieces_of(pieces), BOUNDARY)
    found = []
    while (part := await parser.next_part()) is not None:
        found.append((part.name, b"".join([c async for c in parser.body()])))
    return found


def run(pieces: list[bytes]) -> list[tuple[str | None, bytes]]:
    return asyncio.run(parse(pieces))


@given(
    bodies=st.lists(BODY, min_size=1, max_size=3),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=8),
    preamble=st.sampled_from([b"", b"ignored\r\n", b"--B0un\r\n"]),
)
@settings(max_examples=400, deadline=None)
def test_every_part_comes_back_exactly_however_the_body_is_cut(
    bodies: list[bytes], cuts: list[int], preamble: bytes
) -> None:
    bodies = [b for b in bodies if DELIM not in b + b"\r\n"]  # a body may not hold the delimiter
    parts = [(f"p{i}", body) for i, body in enumerate(bodies)]
    data = form(parts, preamble=preamble, epilogue=b"epilogue " + DELIM)
    assert run(cut(data, cuts)) == parts


@pytest.mark.parametrize(
    "body", [b"", b"x" * 100, b"tail\r", b"tail\r\n", b"tail\r\n-", b"tail\r\n--B0un", b"\r\n--"]
)
def test_every_single_cut_of_a_delimiter_near_miss(body: bytes) -> None:
    data = form([("fileUpload", body), ("other", b"second")])
    for at in range(len(data) + 1):
        assert run(cut(data, [at])) == [("fileUpload", body), ("other", b"second")], at
    for first in range(len(data) - 60, len(data)):  # every pair of cuts around the end
        for second in range(first, len(data) + 1):
            assert run(cut(data, [first, second]))[0] == ("fileUpload", body)


def test_a_received_piece_without_a_boundary_is_passed_on_as_it_is() -> None:
    big = bytes(range(256)).replace(b"\r", b"r") * 4096  # 1 MiB, no CR anywhere

    async def go() -> list[bytes]:
        head = form([("fileUpload", b"")]).split(b"\r\n\r\n", 1)[0] + b"\r\n\r\n"
        tail = b"\r\n--" + BOUNDARY.encode() + b"--\r\n"
        parser = FormParts(pieces_of([head, big, big, tail]), BOUNDARY)
        assert await parser.next_part() is not None
        return [c async for c in parser.body()]

    chunks = asyncio.run(go())
    assert [c is big for c in chunks] == [True, True]


def test_names_filenames_and_headers() -> None:
    data = (
        b"--B0und\r\nContent-Disposition: form-data; "
        b"name=\"fileUpload\"; filename*=UTF-8''%C3%A9.txt\r\n"
        b"Content-Type: text/plain\r\nX-Other: 1\r\n\r\nhello\r\n--B0und--"
    )

    async def go() -> None:
        parser = FormParts(pieces_of([data]), BOUNDARY)
        part = await parser.next_part()
        assert part is not None
        assert (part.name, part.filename) == ("fileUpload", "é.txt")
        assert part.headers["content-type"] == "text/plain"
        assert not part.nested
        assert await parser.read(3) == b"hel"
        assert await parser.next_part() is None

    asyncio.run(go())


MALFORMED = {
    "no opening boundary": b"just some text\r\n",
    "another boundary": b"--WRONG\r\n\r\nx\r\n--WRONG--\r\n",
    "ends inside a part": b"--B0und\r\nContent-Disposition: form-data; name=a\r\n\r\nAAA",
    "ends inside the head": b"--B0und\r\nContent-Disposition: form-data",
    "text after a boundary": b"--B0und\r\n\r\nx\r\n--B0undxyz\r\n\r\n",
    "header line too long": b"--B0und\r\nX: " + b"a" * 9000 + b"\r\n\r\nx\r\n--B0und--",
    "too many headers": b"--B0und\r\n" + b"X: 1\r\n" * 200 + b"\r\nx\r\n--B0und--",
    "no header colon": b"--B0und\r\nnot a header\r\n\r\nx\r\n--B0und--",
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_bodies_are_bad_requests(case: str) -> None:
    with pytest.raises(errors.BadRequest):
        run([MALFORMED[case]])


@pytest.mark.parametrize("boundary", ["", "x" * 71])
def test_a_boundary_must_be_1_to_70_characters(boundary: str) -> None:
    with pytest.raises(errors.BadRequest):
        FormParts(pieces_of([]), boundary)


def test_padding_after_a_delimiter_and_an_empty_body() -> None:
    data = b"--B0und  \r\nContent-Disposition: form-data; name=a\r\n\r\n\r\n--B0und-- \r\n"
    assert run([data]) == [("a", b"")]


@given(haystack=BODY, needle=st.sampled_from([DELIM, b"\r", b"\r\n--", b"B0und", b"x" * 3]))
@settings(max_examples=300, deadline=None)
def test_the_boundary_search_agrees_with_bytes_find(haystack: bytes, needle: bytes) -> None:
    assert formparts._find(haystack, needle) == haystack.find(needle)
    assert formparts._find(haystack + needle, needle) == (haystack + needle).find(needle)
