"""The walk that sums what librsvg draws (``svgdraw.Drawing.cost``): each element
counted as often as it is drawn, with the properties it inherits where it is drawn.

An element a ``<use>`` draws inherits the ``<use>``'s properties (and those around it),
not those of where it is defined: a pattern fill, a marker, a dashed or a painted
stroke given to a ``<use>`` (or a group around it) reach each shape of what it draws.
Counted from where they were defined, 10-60 rects drawn by a ``<use>`` inside a group
filled by a pattern of polygons were estimated at 0.04 s and took 0.4-0.56 s; a
polyline of 200-1,000 vertices marked through its ``<use>``: 0.05 s, took 0.38 s. So
each element is priced once for each set of inherited properties it is drawn with
(``Ctx``; the walk's states are held to ``MAX_STATES`` beyond the elements, past which
a ``<use>``'s target is priced as defined).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from stowage.processing import svgdash, svgpath, svgrefs, svgstroke
from stowage.processing.svgfilter import Filter
from stowage.processing.svgprice import Cost

GRADIENTS = frozenset({"lineargradient", "radialgradient"})
STROKED = frozenset({"rect", "circle", "ellipse", "line", "path", "polygon", "polyline"})
OUTLINED = frozenset({"path", "polygon", "polyline"})  # scanned along their edges
MAX_STATES = 10_000  # beyond 4 for each element
_EMPTY: Mapping[str, str] = MappingProxyType({})
#: What an element inherits: painted by attributes, and by ``<style>`` rules
Ctx = tuple[Mapping[str, str], Mapping[str, str]]
_Key = tuple[object, ...]
_State = tuple[int, _Key]
_NONE = Cost()


@dataclass
class Node:
    """One element, as ``svgdraw.Drawing`` read it."""

    own: Cost
    local: str
    attributes: Mapping[str, str]
    parent: int = -1
    children: list[int] = field(default_factory=list)
    target: str | None = None  # a <use>'s reference, a gradient's
    filter: str | None = None
    region: float = 1.0  # its box's fraction of the canvas
    area: float = 1.0  # what its transform multiplies areas by
    undrawn: bool = False
    css: Mapping[str, str] = field(default_factory=dict)  # what ``<style>`` rules declare for it
    stops: int = 0  # a gradient's
    glyphs: float = 0.0  # its text's
    size: float = 16.0  # its font's (text is laid out at the document's size)
    outline: svgpath.Outline | None = None  # read when its stroke asks


@dataclass
class _Info:
    out: Ctx  # what its children (a <use>'s target) inherit
    key: _Key  # and what of it changes a price (``Walk._key``)
    extra: Cost  # its stroke, dashes
    #: elements drawn for it: how they inherit, and how often (None: a <use>'s target)
    refs: list[tuple[int, Ctx, _Key, float | None]]


class Walk:
    """One sum of a drawing, at the ``scale`` it is drawn at (``svgfilter``)."""

    def __init__(
        self,
        nodes: list[Node],
        ids: Mapping[str, int],
        filters: Mapping[str, Filter],
        canvas: tuple[float, float],
        scale: float,
    ) -> None:
        self._nodes, self._ids, self._filters = nodes, ids, filters
        self._canvas, self._scale = canvas, scale
        self._keys: dict[int, tuple[Mapping[str, str], _Key]] = {}
        self._infos: dict[_State, _Info] = {}
        self._most = 4 * len(nodes) + MAX_STATES
        self._defined: list[Ctx] = []  # what each element inherits where it is defined
        for node in nodes:  # a parent before its children
            above = self._defined[node.parent] if node.parent >= 0 else (_EMPTY, _EMPTY)
            self._defined.append(_inherit(node, above))

    def total(self) -> Cost:
        """The root's cost."""
        nodes = self._nodes
        memo: dict[_State, Cost] = {}
        visiting: set[_State] = set()
        top = (_EMPTY, _EMPTY)
        stack: list[tuple[int, Ctx, _Key, bool]] = [(0, top, self._key(top), False)]
        while stack:
            index, ctx, key, done = stack.pop()
            state = (index, key)
            if state in memo:
                continue
            node, info = nodes[index], self._info(index, ctx, state)
            if not done:
                if state in visiting:  # a reference cycle: librsvg draws nothing of it
                    memo[state] = _NONE
                    continue
                visiting.add(state)
                stack.append((index, ctx, key, True))
                for child in node.children:
                    if (child, info.key) not in memo and (child, info.key) not in visiting:
                        stack.append((child, info.out, info.key, False))
                for ref, given, known, _ in info.refs:
                    if (ref, known) not in memo and (ref, known) not in visiting:
                        stack.append((ref, given, known, False))
                continue
            visiting.discard(state)
            total = node.own + info.extra + self._filtered(node)
            for child in node.children:
                if not nodes[child].undrawn:
                    total = total + memo.get((child, info.key), _NONE)
            for ref, _, known, times in info.refs:
                again = memo.get((ref, known), _NONE)
                if times is None:  # a <use> draws its target, even one in <defs>
                    total = total + again
                    continue
                again = again.times(times)  # drawn again for each element referring to it
                box = nodes[ref].local in GRADIENTS  # over the shape's box
                total = total + (again.scaled(node.region) if box else again)
            memo[state] = total.scaled(node.area) if node.area != 1.0 else total
        return memo.get((0, self._key(top)), _NONE)

    def _inherited(self, index: int) -> Ctx:
        parent = self._nodes[index].parent
        return self._defined[parent] if parent >= 0 else (_EMPTY, _EMPTY)

    def _info(self, index: int, ctx: Ctx, state: _State) -> _Info:
        found = self._infos.get(state)
        if found is not None:
            return found
        node = self._nodes[index]
        defined = self._inherited(index)
        same = ctx[0] is defined[0] and ctx[1] is defined[1]
        out = self._defined[index] if same else _inherit(node, ctx)
        shape = node.attributes if node.local in svgrefs.SHAPES else None
        named = svgrefs.referred(node.local, node.attributes, out[0], shape)
        if node.css or out[1]:
            named += svgrefs.referred(node.local, node.css, out[1], shape)
        used = self._filters.get(node.filter) if node.filter is not None else None
        named += [(image, 1.0) for image in (used.images if used else ())]
        refs: list[tuple[int, Ctx, _Key, float | None]] = []
        for ref, times in named:  # drawn where it is defined
            if ref in self._ids:
                given = self._inherited(self._ids[ref])
                refs.append((self._ids[ref], given, self._key(given), times))
        target = self._ids.get(node.target) if node.target is not None else None
        if target is not None:  # drawn with what the <use> gives it (within the bound)
            given = out if len(self._infos) < self._most else self._inherited(target)
            refs.append((target, given, self._key(given), None))
        painted = {**out[0], **out[1]} if out[1] else out[0]
        priced = painted or node.local in OUTLINED
        extra = self._painted(node, painted) if priced else _NONE
        info = _Info(out, self._key(out), extra, refs)
        self._infos[state] = info
        return info

    def _painted(self, node: Node, painted: Mapping[str, str]) -> Cost:
        """Its stroke, dashed or not, its outline's edges, and its text's."""
        outlined, stroked = node.local in OUTLINED, "stroke" in painted
        if node.local not in STROKED or not (stroked or outlined):
            return svgstroke.text(node.glyphs, node.size, painted)
        if node.outline is None:
            node.outline = svgpath.outline(node.local, node.attributes)
        cost = svgstroke.fill(node.outline, self._canvas) if outlined else _NONE
        if stroked:
            cost += Cost(svgdash.seconds(node.outline.length, painted))
            cost += svgstroke.shape(node.outline, painted, self._canvas)
        return cost

    def _filtered(self, node: Node) -> Cost:
        found = self._filters.get(node.filter) if node.filter is not None else None
        return Cost() if found is None else found.cost(node.region, self._scale)

    def _key(self, ctx: Ctx) -> _Key:
        """What of ``ctx`` changes a price: url()s, dashes, a stroke painted or not."""
        return (self._relevant(ctx[0]), self._relevant(ctx[1]))

    def _relevant(self, painted: Mapping[str, str]) -> _Key:
        known = self._keys.get(id(painted))
        if known is not None:
            return known[1]
        key = _relevant(painted) if painted else ()
        self._keys[id(painted)] = (painted, key)  # the mapping kept: its id stays its own
        return key


def _inherit(node: Node, ctx: Ctx) -> Ctx:
    painted = svgrefs.painted(node.attributes, ctx[0])
    return painted, svgrefs.painted(node.css, ctx[1], rules=True) if node.css else ctx[1]


def _relevant(painted: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    kept = []
    for name, value in painted.items():
        if name == "stroke" and "url(" not in value:
            value = "paint" if svgstroke.stroked(painted) else "none"
        elif name == "fill" and "url(" not in value:
            continue
        kept.append((name, value))
    return tuple(sorted(kept))
