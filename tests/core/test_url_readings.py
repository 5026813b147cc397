"""A policy's ``url`` rule against every reading of a URL an origin may make: as the
fetcher sends it (dot segments resolved), then decoded once, twice, ... with encoded
slashes and backslashes read as ``/`` (``/dir/..%2Fphoto.jpg`` is ``/photo.jpg`` to a
server that decodes ``%2F``)."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest

from stowage import errors
from stowage.core import security
from stowage.core.security import Credentials, Target

SECRET = "s3cr3t"
PREFIX = "http://127.0.0.1:8000/dir/"
RULE = r"http://127\.0\.0\.1:8000/dir/.*"


@dataclass(frozen=True)
class Piece:
    """A piece of a path and its text after each number of decodings (0: as the fetcher
    sends it); a separator is ``/`` from the decoding that makes it one."""

    sent: str
    texts: tuple[str, str, str]  # after 0, 1, 2 decodings (a slash: "/")


NAMES = [Piece("a", ("a", "a", "a")), Piece("dir", ("dir", "dir", "dir"))]
DOTS = [
    Piece(".", (".", ".", ".")),
    Piece("..", ("..", "..", "..")),
    Piece("%2E", (".", ".", ".")),
    Piece("%2E%2E", ("..", "..", "..")),
    Piece(".%2e", ("..", "..", "..")),
    Piece("%252E%252E", ("%252E%252E", "%2E%2E", "..")),
]
SEPARATORS = [
    Piece("/", ("/", "/", "/")),
    Piece("%2F", ("%2F", "/", "/")),
    Piece("%5C", ("%5C", "/", "/")),
    Piece("\\", ("%5C", "/", "/")),
    Piece("%252F", ("%252F", "%2F", "/")),
]


def _resolved(segments: list[list[Piece]], level: int) -> list[list[Piece]]:
    """Split at the pieces that are ``/`` at this level, then resolve dot segments."""
    split: list[list[Piece]] = []
    for segment in segments:
        split.append([])
        for piece in segment:
            if piece.texts[level] == "/":
                split.append([])
            else:
                split[-1].append(piece)
    kept: list[list[Piece]] = []
    for index, segment in enumerate(split):
        text = "".join(piece.texts[level] for piece in segment)
        if text in (".", ".."):
            if text == ".." and kept:
                kept.pop()
            if index == len(split) - 1:
                kept.append([])  # a path ending in a dot segment ends in "/"
        else:
            kept.append(segment)
    return kept


def _stays_under(pieces: list[Piece]) -> bool:
    """The test's own reading: every level's path still under ``/dir/``."""
    dir_piece = NAMES[1]
    segments: list[list[Piece]] = [[dir_piece], []]
    for piece in pieces:
        if piece.sent == "/":
            segments.append([])
        else:
            segments[-1].append(piece)
    for level in range(3):
        segments = _resolved(segments, level)
        texts = ["".join(p.texts[level] for p in s) for s in segments]
        if len(texts) < 2 or texts[0] != "dir":
            return False
    return True


def _random_path(rng: random.Random) -> list[Piece]:
    pieces: list[Piece] = []
    for _ in range(rng.randint(1, 6)):
        pieces.append(rng.choice(DOTS + NAMES if rng.random() < 0.7 else NAMES))
        pieces.append(rng.choice(SEPARATORS))
    if rng.random() < 0.5:
        pieces.append(rng.choice(NAMES))  # a file name, or a path ending in "/"
    return pieces


def _allowed(url: str) -> bool:
    policy = security.encode_policy({"expiry": 4_000_000_000, "url": RULE})
    creds = Credentials(policy=policy, signature=security.sign(SECRET, policy))
    try:
        security.authorize(SECRET, creds, "convert", Target(url=url), required=True, now=1)
    except errors.PolicyDenied:
        return False
    return True


def test_a_url_rule_holds_for_every_reading_of_the_path() -> None:
    rng = random.Random(20261201)
    seen = {True: 0, False: 0}
    for _ in range(1500):
        pieces = _random_path(rng)
        url = PREFIX + "".join(piece.sent for piece in pieces)
        expected = _stays_under(pieces)
        assert _allowed(url) is expected, url
        seen[expected] += 1
    assert min(seen.values()) > 100  # both answers were tried often


@pytest.mark.parametrize(
    "path",
    ["..%2Fphoto.jpg", "..%5Cphoto.jpg", "..\\photo.jpg", "%2E%2E%2Fphoto.jpg", "..%252Fphoto.jpg"],
)
def test_an_encoded_slash_does_not_climb_out(path: str) -> None:
    assert not _allowed(PREFIX + path)
    assert _allowed(PREFIX + "sub/" + path)  # one level down, it stays under /dir/


def test_a_segment_s_params_do_not_climb_out() -> None:
    """Tomcat and Jetty drop a segment's ``;params`` before they resolve ``..``:
    ``/dir/..;/x.jpg`` is ``/x.jpg`` to them (probe sec, note 5). Generated paths: dot
    segments with params, encoded or not, at random depths."""
    rng = random.Random(20261202)
    params = [";", ";x", ";jsessionid=1", "%3B", "%3Bx=1"]
    for _ in range(400):
        depth = rng.randrange(0, 3)
        climbs = rng.randrange(1, 3)
        middle = "".join(f"s{n}/" for n in range(depth))
        dots = "".join(f"..{rng.choice(params)}/" for _ in range(climbs))
        url = f"{PREFIX}{middle}{dots}photo.jpg"
        assert _allowed(url) is (climbs <= depth), url
    assert _allowed(PREFIX + "a;v=1/photo.jpg")  # a param alone stays where it is
