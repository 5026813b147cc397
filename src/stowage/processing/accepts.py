"""Which image format a client's ``Accept`` header takes, for ``auto_image``.

One rule, written as a regular expression per format so that the shipped Varnish VCL
(``deploy/varnish/stowage.vcl``) holds the very same text and its four cache classes
can never differ from the origin's choice (``tests/edge/test_auto_image.py``). A format
is taken when an item of the header names its exact media type and none of the item's
parameters is a ``q`` whose value has no non-zero digit (``q=0``, ``q = 0.000``, a
negative or non-numeric ``q`` refuse it; ``q=0.5``, ``level=1``, ``sq=0`` do not).
``image/*`` and ``*/*`` take neither: those browsers get the input's format.
"""

from __future__ import annotations

import re

#: A parameter that refuses the item: a ``q`` (after the ``;`` and blanks) with no
#: non-zero digit in its leading number; a parameter that only begins with q is another.
_REFUSES = r";[ \t]*+q(?![^;,= \t]|[ \t]*=[ \t]*0*(\.0*)?[1-9])"


def pattern(mimetype: str) -> str:
    """The expression an Accept header that takes ``mimetype`` matches. PCRE and Python's
    ``re`` read it alike, in linear time and without a repeated group: an item naming the
    type, then a look-ahead over the rest of that item (up to its comma) for a refusing
    parameter. A repeated group over the parameters (the expression before) needed PCRE2
    JIT stack per parameter: about 340 of them made Varnish fail the request (503)."""
    kind = re.escape(mimetype).replace("\\/", "/")
    return rf"(?i)(^|,)[ \t]*{kind}[ \t]*+(?=[;,]|$)(?![^,]*{_REFUSES})"


#: ``auto_image``'s choices, best first, and the Accept headers that take each.
AUTO_FORMATS = (("image/avif", "avif"), ("image/webp", "webp"))
#: ``re.ASCII``: PCRE folds ASCII letters only; Python's ``re`` would take U+0131 for an i.
_TAKES = [(re.compile(pattern(mimetype), re.ASCII), fmt) for mimetype, fmt in AUTO_FORMATS]


def accepted_format(accept: str | None, besides: str = "") -> str | None:
    """The best of ``AUTO_FORMATS`` (but ``besides``) that ``accept`` takes, or None."""
    taken = (fmt for takes, fmt in _TAKES if fmt != besides and takes.search(accept or ""))
    return next(taken, None)
