"""Policy restrictions (``path``, ``container``, ``url``) matched in linear time.

Python's ``re`` backtracks: ``(a+)+b`` against thirty ``a`` runs for seconds on the event
loop and stalls every tenant. RE2 guarantees time linear in the input, at the price of
no backreferences and no lookaround; a pattern RE2 cannot compile is refused (400), never
passed to another engine. Pattern and value lengths are bounded as well, so even linear
work stays small.
"""

from __future__ import annotations

import functools
from typing import Any

import re2

from stowage import errors

MAX_PATTERN_CHARS = 1024
MAX_VALUE_CHARS = 4096
_MAX_PROGRAM_BYTES = 1 << 20  # RE2's own memory budget for one compiled pattern


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False  # a client's bad pattern is not worth a line on stderr
    options.max_mem = _MAX_PROGRAM_BYTES
    return options


_OPTIONS = _options()


@functools.lru_cache(maxsize=512)
def compiled(pattern: str) -> Any:
    """The RE2 program for ``pattern``; InvalidPolicyPattern if RE2 cannot compile it."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise errors.InvalidPolicyPattern(
            f"a policy pattern is over {MAX_PATTERN_CHARS} characters"
        )
    try:
        return re2.compile(pattern, _OPTIONS)
    except (re2.error, TypeError, ValueError, UnicodeError) as exc:
        raise errors.InvalidPolicyPattern(
            "the policy pattern is not one RE2 accepts (no backreferences or lookaround)"
        ) from exc


def full_match(pattern: str, value: str) -> bool:
    """True when ``value`` as a whole matches ``pattern``; over-long values never match."""
    if len(value) > MAX_VALUE_CHARS:
        return False
    try:
        return compiled(pattern).fullmatch(value) is not None
    except UnicodeError:  # a lone surrogate cannot be matched; nothing legitimate has one
        return False
