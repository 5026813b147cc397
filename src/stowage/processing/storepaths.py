"""A ``store`` task's ``path`` written with its slashes as they are.

filestack-swift writes option values unquoted, escaping only commas, so
``store=location:S3,path:my/custom/path/,filename:a.jpg/crop=.../<handle>`` (its own
test's URL) reaches the server split at the path's slashes: ``custom`` and ``path`` read
as tasks, and the URL was a 400. A quoted path (``path:"my/custom/path/"``) needs none of
this.

The pieces after a store segment whose last option is an unquoted path are taken back
into that path while they are not a task (a name of the task table, alone or with
``=``) and not the source (the last segment): up to a piece that begins with ``,`` (the
store's next option, after a path that ends with ``/``), up to an empty piece (a path
ending with ``/`` that was the store's last option), or up to the next task. So a path
piece named like a task (``path:a/flip/b``) still reads as that task: quote such paths.
"""

from __future__ import annotations

from stowage import words
from stowage.processing import catalogue


def rejoined(segments: list[str]) -> list[str]:
    """``segments`` with each unquoted store path whole again."""
    out: list[str] = []
    index = 0
    while index < len(segments):
        segment = segments[index]
        index += 1
        if _ends_with_a_path(segment):
            pieces, index = _path_pieces(segments, index)
            segment = "/".join([segment, *pieces])
        out.append(segment)
    return out


def _ends_with_a_path(segment: str) -> bool:
    """A store segment whose last option is a path without quotes or brackets."""
    if words.folded(segment[:6]) != "store=" or '"' in segment:
        return False
    name, colon, value = segment[6:].rsplit(",", 1)[-1].partition(":")
    return bool(colon) and words.word(name) in ("path", "p") and "[" not in value


def _path_pieces(segments: list[str], index: int) -> tuple[list[str], int]:
    """The pieces from ``index`` on that belong to the path, and the index after them."""
    pieces: list[str] = []
    last = len(segments) - 1
    while index < last and not _is_task(segments[index]):
        piece = segments[index]
        pieces.append(piece)
        index += 1
        if piece == "" or piece.startswith(","):
            break
    return pieces, index


def _is_task(piece: str) -> bool:
    name = piece.split("=", 1)[0]
    return bool(name) and catalogue.spec(name) is not None
