"""The pieces of a resumable upload: which received pieces make each part, and the
signature that makes a part URL its own credential."""

from __future__ import annotations

import hashlib
import hmac

from stowage import errors
from stowage.registry.base import UploadPart, UploadSession


def sign_part(session: UploadSession, part: int, fields: dict[str, object]) -> str:
    values = (session.upload_id, part, *(fields[k] for k in ("offset", "size", "md5", "expires")))
    message = "\n".join(str(v) for v in values)
    return hmac.new(session.part_key.encode(), message.encode(), hashlib.sha256).hexdigest()


def part_chain(pieces: list[UploadPart]) -> list[UploadPart]:
    """A part's pieces that follow each other from offset 0 (one piece outside intelligent
    mode); pieces left over from retries with another chunk size are skipped."""
    by_offset = {p.offset: p for p in pieces}
    chain: list[UploadPart] = []
    offset = 0
    while (piece := by_offset.get(offset)) is not None:
        chain.append(piece)
        if piece.size == 0:
            break
        offset += piece.size
    return chain


def select(pieces: list[UploadPart], listed: list[tuple[int, str]] | None) -> list[UploadPart]:
    by_part: dict[int, list[UploadPart]] = {}
    for piece in pieces:
        by_part.setdefault(piece.part, []).append(piece)
    numbers = [n for n, _ in listed] if listed else sorted(by_part)
    if listed and numbers != sorted(set(numbers)):
        raise errors.InvalidParts("parts must be listed once each, in ascending order")
    selected: list[UploadPart] = []
    for index, number in enumerate(numbers):
        chain = part_chain(by_part.get(number, []))
        if not chain:
            raise errors.InvalidParts(f"part {number} was not uploaded", part=number)
        if listed and not _etag_matches(chain, listed[index][1]):
            raise errors.InvalidParts(f"part {number} has another ETag", part=number)
        selected.extend(chain)
    return selected


def _etag_matches(chain: list[UploadPart], etag: str) -> bool:
    given = etag.strip().strip('"').lower()
    return len(chain) == 1 and hmac.compare_digest(chain[0].etag.encode(), given.encode())
