"""Where the bytes of a store or an overwrite come from, made ready to write."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from stowage import errors
from stowage.core import filetypes, streams
from stowage.core.fetch import Allowed, Fetcher
from stowage.core.urlguard import canonical_url


@dataclass
class Source:
    """Where new content comes from: a stream of bytes or a URL to fetch."""

    chunks: AsyncIterator[bytes] | None = None
    url: str | None = None
    filename: str | None = None
    content_type: str | None = None
    raw: bool = False  # a raw body (unknown types default to text/plain, as the spec says)


@dataclass
class Prepared:
    chunks: AsyncIterator[bytes]
    head: bytes
    content_type: str | None
    filename: str | None
    source_url: str | None = None
    digest: streams.Digest = field(default_factory=streams.Digest)


async def prepare(
    fetcher: Fetcher,
    source: Source,
    decode: bool,
    max_bytes: int,
    allowed: Allowed | None = None,
    owner: str | None = None,
) -> Prepared:
    """The bytes to write: fetched (``allowed`` asked about each redirect) or received,
    decoded, limited to ``max_bytes``, their head read for type sniffing, and hashed as
    they pass. ``owner``: the app whose fetch it is (its share of the fetch slots)."""
    if source.url is not None:
        fetched = await fetcher.open(source.url, allowed=allowed, owner=owner)
        chunks, declared, filename = fetched.chunks, fetched.content_type, fetched.filename
    elif source.chunks is not None:
        chunks, declared, filename = source.chunks, source.content_type, source.filename
    else:
        raise errors.MissingFile()
    if decode:
        chunks = streams.base64_decoded(chunks)
        declared = None
    chunks = streams.limited(chunks, max_bytes, "the file is larger than allowed")
    head, chunks = await streams.peek(chunks, filetypes.SNIFF_BYTES)
    # the URL as fetched (escaped): a NUL sent in a store's url was kept as it came, and
    # PostgreSQL refuses a NUL in text (500 on every node of a PostgreSQL registry)
    fetched_url = None if source.url is None else canonical_url(source.url)
    prepared = Prepared(chunks, head, declared, filename, fetched_url)
    prepared.chunks = prepared.digest.tap(chunks)
    return prepared
