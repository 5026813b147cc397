"""A fetched body's ``Content-Encoding``, undone as it streams.

Fetches ask for ``identity``, but some origins compress whatever is asked: kept as sent,
a gzip of a PNG would be stored as the PNG. gzip and deflate are read here, each chunk
inflated at most ``limit`` bytes at a time, so a small bomb is refused at the limit
without ever being held; any other coding is refused as the origin's failure.
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator

from stowage import errors

_GZIP = 16 + zlib.MAX_WBITS
_ZLIB = zlib.MAX_WBITS
_RAW = -zlib.MAX_WBITS
IDENTITY = frozenset({"", "identity"})
READ = frozenset({"gzip", "x-gzip", "deflate"})


def coding_of(header: str | None) -> str:
    """The one coding a ``Content-Encoding`` names, lower-cased; refused when there are
    several or one this module cannot undo."""
    codings = [c.strip().lower() for c in (header or "").split(",") if c.strip()]
    codings = [c for c in codings if c not in IDENTITY]
    if not codings:
        return "identity"
    if len(codings) > 1 or codings[0] not in READ:
        raise errors.UpstreamError(
            f"the url answered with Content-Encoding {', '.join(codings)}: only gzip and "
            "deflate are read"
        )
    return codings[0]


async def decoded(chunks: AsyncIterator[bytes], coding: str, limit: int) -> AsyncIterator[bytes]:
    """``chunks`` undone from ``coding`` (``identity``: as they are); more than ``limit``
    decoded bytes is 413, a body that is no valid stream 502."""
    if coding == "identity":
        total = 0
        async for chunk in chunks:
            total += len(chunk)
            if total > limit:
                raise errors.PayloadTooLarge("the url's file is larger than allowed")
            yield chunk
        return
    inflater: zlib._Decompress | None = zlib.decompressobj(_GZIP) if coding != "deflate" else None
    total, head = 0, b""
    try:
        async for chunk in chunks:
            data = chunk
            if inflater is None:  # "deflate" is zlib's wrapping; some send it raw
                head += chunk
                if len(head) < 2:
                    continue
                inflater, data = zlib.decompressobj(_ZLIB if _is_zlib(head) else _RAW), head
            while data and not inflater.eof:
                piece = inflater.decompress(data, limit - total + 1)
                total += len(piece)
                if total > limit:
                    raise errors.PayloadTooLarge("the url's file is larger than allowed")
                data = inflater.unconsumed_tail
                if piece:
                    yield piece
        if inflater is None or not inflater.eof:
            raise errors.UpstreamError(f"the url's {coding} body ended early")
    except zlib.error as exc:
        raise errors.UpstreamError(f"the url's body is no valid {coding} stream") from exc


def _is_zlib(head: bytes) -> bool:
    return len(head) >= 2 and head[0] & 0x0F == 8 and (head[0] << 8 | head[1]) % 31 == 0
