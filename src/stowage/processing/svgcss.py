"""The drawing properties an SVG's ``<style>`` rules give its elements, for the cost
estimate (``svgdraw``): a filter, a clip path, a mask, a pattern or a marker chosen by
a CSS rule draws as one named in an attribute does; so does a dashed stroke.

Not a CSS engine: a selector is matched by its last compound only (``g .a > rect.b``
by ``rect.b``), without pseudo-classes or attribute conditions, and every matching
rule is taken whatever its order or specificity, in ``@media`` blocks and with
``!important`` too (librsvg 2.6x skips those). That matches more elements than
librsvg styles, never fewer: the estimate may be high, not low. A probe's SVG of 200
rects clipped by 200 polygons through ``rect { clip-path: url(#c) }`` was estimated at
0.15 s and took 16.7 s.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from stowage.processing.svgdash import STROKING

#: The properties whose ``url(#id)`` draws another element (``svgdraw``).
PROPERTIES = frozenset({"filter", "clip-path", "mask", "fill", "stroke", "marker"})
PROPERTIES |= {"marker-start", "marker-mid", "marker-end", *STROKING}
_COMMENT = re.compile(r"/\*.*?(?:\*/|$)", re.S)
_RULE = re.compile(r"([^{}]*)\{([^{}]*)\}")  # innermost blocks: @media's rules too
_DECLARATION = re.compile(r"([A-Za-z-]+)\s*:\s*([^;]+)")
_COMPOUND = re.compile(r"[^\s>+~]+$")
_PARTS = re.compile(r"([.#]?)(-?[A-Za-z_][\w-]*|\*)")


@dataclass(frozen=True)
class _Rule:
    tag: str | None  # None: any element
    classes: frozenset[str]
    id: str | None
    declared: tuple[tuple[str, str], ...]

    def matches(self, local: str, classes: frozenset[str], ident: str | None) -> bool:
        if self.tag is not None and self.tag != local:
            return False
        return self.classes <= classes and (self.id is None or self.id == ident)


class Rules:
    """The rules of an SVG's ``<style>`` elements that set a drawing property."""

    def __init__(self) -> None:
        self._rules: list[_Rule] = []

    def __bool__(self) -> bool:
        return bool(self._rules)

    def add(self, css: str) -> None:
        """The rules of one ``<style>`` element's text."""
        for selectors, body in _RULE.findall(_COMMENT.sub(" ", css)):
            declared = tuple(
                (name.strip().lower(), value.replace("!important", "").strip())
                for name, value in _DECLARATION.findall(body)
                if name.strip().lower() in PROPERTIES
                and ("url(" in value or name.strip().lower() in STROKING)
            )
            if not declared:
                continue
            for selector in selectors.split(","):
                rule = _parsed(selector, declared)
                if rule is not None:
                    self._rules.append(rule)

    def declared(self, local: str, attributes: Mapping[str, str]) -> dict[str, str]:
        """The drawing properties the rules give an element (``url(...)`` values only)."""
        classes = frozenset(attributes.get("class", "").split())
        ident = attributes.get("id")
        found: dict[str, str] = {}
        for rule in self._rules:
            if rule.matches(local, classes, ident):
                found.update(rule.declared)
        return found


def _parsed(selector: str, declared: tuple[tuple[str, str], ...]) -> _Rule | None:
    """The rule of a selector's last compound (``None``: nothing an element can match)."""
    selector = re.sub(r"\[[^\]]*\]|::?[\w-]+(\([^)]*\))?", "", selector).strip()
    last = _COMPOUND.search(selector)
    if last is None:
        return None
    tag, classes, ident = None, set(), None
    for kind, name in _PARTS.findall(last.group(0)):
        if kind == ".":
            classes.add(name)
        elif kind == "#":
            ident = name
        elif name != "*":
            tag = name.lower()
    return _Rule(tag, frozenset(classes), ident, declared)
