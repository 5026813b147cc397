"""List-valued request headers sent on several field lines.

RFC 9110 5.3: a recipient may combine field lines of one name into one value, joined by
commas, and lists (Accept, If-None-Match, If-Match) mean the same either way. aiohttp's
``headers.get`` answers the first line only: a browser's second Accept line, or a proxy's
second If-None-Match, was not read.
"""

from __future__ import annotations

from multidict import CIMultiDictProxy


def joined(headers: CIMultiDictProxy[str], name: str) -> str | None:
    """Every ``name`` line of ``headers``, joined by ", " as one list; None when absent."""
    lines = headers.getall(name, ())
    if not lines:
        return None
    return lines[0] if len(lines) == 1 else ", ".join(lines)
