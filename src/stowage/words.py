"""A client's words read one way: only ASCII spaces and tabs are trimmed, and only ASCII
letters are folded to lower case. Python's ``strip()`` trims every Unicode space (a
no-break space, U+2028, U+3000) and ``lower()`` folds every script (the KELVIN SIGN is
``k``), so ``width:\\u00a0100`` or ``color:blac\\u212a`` read as the plain words did;
now they are no word of the grammar, and refused."""

from __future__ import annotations

#: What the grammar trims around a name or a value: ASCII space and tab.
BLANK = " \t"


def trimmed(text: str) -> str:
    return text.strip(BLANK)


def folded(text: str) -> str:
    """``text`` lower-cased when it is ASCII; else as it is, which no ASCII name matches."""
    return text.lower() if text.isascii() else text


def word(text: str) -> str:
    """``text`` trimmed and folded: a name, option, choice or boolean word as sent."""
    return folded(trimmed(text))
