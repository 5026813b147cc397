"""Reading a request body as the chunks aiohttp received, without copying them again.

``StreamReader.iter_chunked(n)`` joins the received pieces into chunks of exactly ``n``
bytes: a copy of nearly every byte (pieces rarely line up with ``n``). ``readchunk``
hands each received piece on as it is. The reader's buffer limit is raised to
``BUFFER`` so that aiohttp pauses and resumes the socket (an ``epoll_ctl`` each time)
once per few MiB instead of every 128 KiB.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from aiohttp import StreamReader

BUFFER = 4 * 1024 * 1024


async def pieces(content: StreamReader) -> AsyncIterator[bytes]:
    content.set_read_chunk_size(BUFFER)
    while True:
        piece, http_chunk_end = await content.readchunk()
        if piece:
            yield piece
        elif not http_chunk_end or content.at_eof():
            # (b"", False) ends a body; aiohttp's shared empty body, once read, answers
            # (b"", True) for ever after
            return
