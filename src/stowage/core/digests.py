"""Client-supplied digests (``Content-MD5``, ``X-Content-SHA256``) checked as the body streams.

The check runs when the body ends, before the provider publishes the write, so a
mismatch raises ``BadDigest`` inside the write: nothing is stored and the previous
version stays (the storage interface's atomicity covers a source that raises).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
from collections.abc import AsyncIterator, Mapping

from stowage import errors

_HEX = {"sha256": re.compile(r"[0-9a-fA-F]{64}")}
HEADERS = {"Content-MD5": "md5", "X-Content-SHA256": "sha256"}


def expected(headers: Mapping[str, str]) -> dict[str, str]:
    """Algorithm -> lowercase hex digest the client announced; malformed values are 400."""
    found: dict[str, str] = {}
    for header, algorithm in HEADERS.items():
        value = headers.get(header)
        if value is not None:
            found[algorithm] = _parse(header, algorithm, value.strip())
    return found


def _parse(header: str, algorithm: str, value: str) -> str:
    if algorithm == "md5":  # RFC 1864: base64 of the 16 raw bytes
        try:
            raw = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raw = b""
        if len(raw) != 16:
            raise errors.InvalidParameter(f"{header} must be base64 of 16 bytes", parameter=header)
        return raw.hex()
    if not _HEX[algorithm].fullmatch(value):
        raise errors.InvalidParameter(f"{header} must be 64 hex digits", parameter=header)
    return value.lower()


async def checked(chunks: AsyncIterator[bytes], wanted: dict[str, str]) -> AsyncIterator[bytes]:
    hashers = {name: hashlib.new(name) for name in wanted}
    async for chunk in chunks:
        for hasher in hashers.values():
            hasher.update(chunk)
        yield chunk
    for name, hasher in hashers.items():
        if not hmac.compare_digest(hasher.hexdigest(), wanted[name]):
            raise errors.BadDigest(algorithm=name)
