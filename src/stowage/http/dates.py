"""Last-Modified that is never later than the answer's Date (RFC 9110 8.8.2.1), and
If-Modified-Since judged against the very value sent.

aiohttp rounds a file's time *up* to the second while its Date is the current second
rounded *down*: a file written during this second was served with a Last-Modified one
second after the Date. Here the time is still rounded up (so that any later version,
even one written in the same second, names a later second), but held to the current
second; ``keep_in_order`` corrects any answer whose Last-Modified was set elsewhere
(aiohttp's static files) once its Date is known.

Why never a stale 304: a Last-Modified L sent at time t is at most t's second, and a
version written after t has a time past L, so it rounds up past L too. A version written
in the second it was read is sent with that (earlier) second and revalidated with a 200.
"""

from __future__ import annotations

import email.utils
import functools
import math
import time

from aiohttp import web

from stowage.core.reading import LOCAL_CLOCK

FILE_CLOCK_LAG = LOCAL_CLOCK.slack or 0.0


def modified_second(modified: float) -> int:
    """The second a version is judged by: its time rounded up."""
    return math.ceil(modified)


def sent_second(modified: float, now: float | None = None) -> int:
    """The second a Last-Modified names: ``modified_second``, never after ``now`` less the
    file clock's lag. The kernel stamps a file's time from its coarse clock, up to a tick
    behind ``time.time()``: a version written just after a read at 12:00:00.002 could be
    stamped 11:59:59.999, rounding up to the 12:00:00 sent with the old one (a 304 for it)."""
    clock = time.time() if now is None else now
    return min(modified_second(modified), math.floor(clock - FILE_CLOCK_LAG))


def last_modified(modified: float) -> str:
    return http_date(sent_second(modified))


@functools.lru_cache(maxsize=256)  # on every GET's path; a second's text is the same
def http_date(second: int) -> str:
    return email.utils.formatdate(second, usegmt=True)


def not_modified_since(request: web.BaseRequest, modified: float) -> bool:
    """If-Modified-Since holds: a GET or HEAD without If-None-Match (RFC 9110 13.1.3),
    with a date no earlier than the version's second (rounded up: never a 304 for a
    version written after the date sent). A date that cannot be read is ignored, and so
    is a date later than now (RFC 7232 3.3: invalid; Varnish ignores it too, so a hit at
    the edge and the origin agree) and the header when the store does not know the
    version's time (0: a stale 304)."""
    header = request.headers.get("If-Modified-Since")
    if header is None or "If-None-Match" in request.headers or not modified:
        return False
    if request.method not in ("GET", "HEAD"):
        return False
    since = _epoch(header)
    return since is not None and since <= time.time() and modified_second(modified) <= since


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
