"""JSON read with each object's keys once.

``json.loads`` keeps the last value of a key an object repeats, so
``{"policy": A, "signature": a, "policy": B, "signature": b}`` would check B and carry A
unread (or the other way round, in another reader). Every JSON a client sends (an API
body, a b64 path's tasks, a policy) is read here, and a repeated key is refused: one
value per key, as one ``policy`` per query (docs/decisions.md).
"""

from __future__ import annotations

import json
from typing import Any


class DuplicateKey(ValueError):
    """An object holds ``key`` twice."""

    def __init__(self, key: str) -> None:
        self.key = key[:64] if key.isascii() and key.isprintable() else "?"
        super().__init__(f"the key {self.key!r} appears twice in one object")


def _once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise DuplicateKey(key)
        found[key] = value
    return found


def loads(text: str | bytes) -> Any:
    """``json.loads``, refusing an object that holds a key twice (``DuplicateKey``, a
    ``ValueError``)."""
    return json.loads(text, object_pairs_hook=_once)
