"""Last-Modified that is never later than the answer's Date (RFC 9110 8.8.2.1), and
If-Modified-Since judged against the very value sent.

aiohttp rounds a file's time *up* to the second (its own If-Modified-Since compare needs
that) while its Date is the current second rounded *down*: a file written during this
second was served with a Last-Modified one second after the Date. Here a time is rounded
down and held to the current second (a store's clock may run ahead of this one), and
``keep_in_order`` corrects any answer whose Last-Modified was set elsewhere (aiohttp's
static files) once its Date is known.
"""

from __future__ import annotations

import email.utils
import functools
import math
import time

from aiohttp import web


def modified_second(modified: float, now: float | None = None) -> int:
    """The second a Last-Modified names: the time rounded down, never after ``now``."""
    return min(math.floor(modified), math.floor(time.time() if now is None else now))


def last_modified(modified: float) -> str:
    return email.utils.formatdate(modified_second(modified), usegmt=True)


def not_modified_since(request: web.BaseRequest, modified: float) -> bool:
    """If-Modified-Since holds: a GET or HEAD without If-None-Match (RFC 9110 13.1.3),
    with a date no earlier than the Last-Modified this answer would carry. A date that
    cannot be read is ignored."""
    header = request.headers.get("If-Modified-Since")
    if header is None or "If-None-Match" in request.headers:
        return False
    if request.method not in ("GET", "HEAD"):
        return False
    since = _epoch(header)
    return since is not None and modified_second(modified) <= since


@functools.lru_cache(maxsize=512)  # one Date a second, one Last-Modified a file
def _epoch(header: str) -> float | None:
    try:
        return email.utils.parsedate_to_datetime(header).timestamp()
    except (TypeError, ValueError, IndexError):
        return None


async def keep_in_order(request: web.BaseRequest, response: web.StreamResponse) -> None:
    """Runs once the Date is set, before the headers leave: a Last-Modified after it
    becomes the Date (every answer, whoever set the header)."""
    modified = response.headers.get("Last-Modified")
    date = response.headers.get("Date")
    if modified is None or date is None or modified == date:
        return
    sent, now = _epoch(modified), _epoch(date)
    if sent is not None and now is not None and sent > now:
        response.headers["Last-Modified"] = date


def install(app: web.Application) -> None:
    app.on_response_prepare.append(keep_in_order)
