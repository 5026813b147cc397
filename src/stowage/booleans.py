"""The one boolean parser: query flags, form and JSON fields, CDN tasks and settings.

Accepted (ASCII case-insensitive, surrounding ASCII spaces and tabs ignored): ``true 1 yes on`` and
``false 0 no off``. The OpenAPI document's ``BOOL`` schema lists the same words.
"""

from __future__ import annotations

from typing import Any

from stowage import errors, words

TRUE = ("true", "1", "yes", "on")
FALSE = ("false", "0", "no", "off")
WORDS = TRUE + FALSE


def parse(value: Any, name: str, *, default: bool = False) -> bool:
    """``value`` as a boolean; None and the empty string are ``default``; anything else
    that is not one of the words is a 400 naming the parameter."""
    if value is None or value is True or value is False:
        return default if value is None else bool(value)
    word = words.word(str(value))  # ASCII only: a no-break space is no blank here
    if word == "":
        return default
    if word in TRUE:
        return True
    if word in FALSE:
        return False
    raise errors.InvalidParameter(f"{name} must be one of {', '.join(WORDS)}", parameter=name)


def lenient(value: Any, *, default: bool = False) -> bool:
    """Like ``parse``, but a value that is no boolean word is ``default``: metadata
    selectors ignore what they cannot read."""
    try:
        return parse(value, "value", default=default)
    except errors.InvalidParameter:
        return default


def is_word(value: str | None) -> bool:
    return value is not None and words.word(value) in WORDS
