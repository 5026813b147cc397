"""Whether a minified script or style sheet still means what its source meant.

``rjsmin`` and ``rcssmin`` are fast, but they are not parsers: a backtick inside a
template substitution (`` `${"`"}` ``) throws ``rjsmin`` off for the rest of the file,
``2 .toString()`` loses the space it needs, and ``rcssmin`` removes the spaces inside a
quoted ``url("a b.png")`` (found by a prober: 24 of 80 generated programs and 43 of 60
sheets changed). So ``minify`` checks each result with a real parser of the language and
answers the source unchanged when they differ (``docs/decisions.md``):

- JavaScript: both are parsed by tree-sitter's JavaScript grammar and must give the
  same syntax tree (every node's type and nesting, the text of every token; comments
  left out). The tree, not only the tokens: a removed line break changes automatic
  semicolon insertion (``return /*\\n*/ x``) with the same tokens.
- CSS: both are parsed by ``tinycss2`` (CSS Syntax Level 3, as browsers read it) and
  must give the same rules, declarations and component values, strings and ``url()``
  values by their decoded value; white space counts where it can carry meaning.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import zip_longest
from typing import Any

import tinycss2
import tree_sitter
import tree_sitter_javascript

_JS = tree_sitter.Language(tree_sitter_javascript.language())

#: Leaves that may hold ``<!--`` or ``-->`` as text. Anywhere else these may be Annex
#: B's HTML-like comments, which scripts honour and tree-sitter does not (``x<!--y`` is
#: ``x`` in a browser, ``x < !--y`` to tree-sitter): such code is left as it is.
_TEXT_LEAVES = frozenset({"comment", "string_fragment", "regex_pattern", "jsx_text"})
_OPEN_COMMENT = b"<!--"
#: ``-->`` opens a comment only first on its line (after spaces or a ``*/``): ``n-->0``
#: is ``n-- > 0``.
_CLOSE_COMMENT = b"-->"
_LINE_ENDS = re.compile(b"[\n\r]|\xe2\x80[\xa8\xa9]")
_CLOSE = -1


def same_js(source: str, result: str) -> bool:
    """Whether ``result`` parses to the syntax tree ``source`` parses to."""
    trees = [_js_tree(text.encode("utf-8")) for text in (source, result)]
    if any(tree is None for tree in trees):
        return False
    steps = zip_longest(*(_js_steps(tree) for tree in trees if tree is not None))
    return all(one == other for one, other in steps)


def _js_tree(text: bytes) -> tree_sitter.Tree | None:
    """The tree of ``text``, or None when it has errors or HTML-like comments."""
    tree = tree_sitter.Parser(_JS).parse(text)
    if tree.root_node.has_error or _html_comments(tree, text):
        return None
    return tree


def _html_comments(tree: tree_sitter.Tree, text: bytes) -> bool:
    for mark in (_OPEN_COMMENT, _CLOSE_COMMENT):
        at = text.find(mark)
        while at >= 0:
            node = tree.root_node.descendant_for_byte_range(at, at + len(mark))
            in_text = node is not None and not node.child_count and node.type in _TEXT_LEAVES
            if not in_text and (mark == _OPEN_COMMENT or _first_on_line(text, at)):
                return True
            at = text.find(mark, at + 1)
    return False


def _first_on_line(text: bytes, at: int) -> bool:
    """Whether only white space or the end of a comment stands before ``at`` on its line
    (read back 4 kB at most: a line that long before it holds code, or is all spaces)."""
    line = _LINE_ENDS.split(text[max(0, at - 4096) : at])[-1]
    code = line.decode("utf-8", "ignore").replace("\ufeff", " ").strip()  # JS's spaces
    return not code or code.endswith("*/")


def _js_steps(tree: tree_sitter.Tree) -> Iterator[Any]:
    """The tree in pre-order: each node's kind, each leaf's text, a mark at each close."""
    cursor = tree.walk()
    while True:
        node = cursor.node
        assert node is not None
        if not node.is_extra:  # comments (white space is in no node)
            if node.child_count:
                yield node.kind_id
                cursor.goto_first_child()
                continue
            yield node.kind_id, node.text
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return
            yield _CLOSE


#: Where white space between two tokens never matters: next to these, and at the start
#: and end of a block, a function's arguments, a prelude or a value.
_SPACE_FREE = frozenset({",", ";"})
#: In a selector the combinators too; in a ``()`` block (``@media (width : 1px)``) ``:``.
_SPACE_FREE_IN_SELECTOR = _SPACE_FREE | {">", "+", "~"}
_SPACE_FREE_IN_PARENS = _SPACE_FREE | {":"}
_SPACE = ("space",)


def same_css(source: str, result: str) -> bool:
    """Whether ``result`` parses to the rules, declarations and values ``source`` does
    (not when they nest too deep to compare)."""
    try:
        return _css_rules(source) == _css_rules(result)
    except RecursionError:
        return False


def _css_rules(text: str) -> list[Any]:
    rules = tinycss2.parse_stylesheet(text, skip_comments=True, skip_whitespace=True)
    return [_css_node(rule) for rule in rules]


def _css_node(node: Any) -> Any:
    """A rule, declaration or parse error as comparable values."""
    if node.type == "qualified-rule":
        return ("rule", _values(node.prelude, _SPACE_FREE_IN_SELECTOR), _block(node.content))
    if node.type == "at-rule":
        content = None if node.content is None else _block(node.content)
        return ("at", node.lower_at_keyword, _values(node.prelude, _SPACE_FREE), content)
    if node.type == "declaration":
        return ("decl", node.name, node.important, _values(node.value, _SPACE_FREE))
    return ("error", node.kind)


def _block(tokens: list[Any]) -> list[Any]:
    """A ``{}`` block's declarations and nested rules."""
    found = tinycss2.parse_blocks_contents(tokens, skip_comments=True, skip_whitespace=True)
    return [_css_node(node) for node in found]


def _values(tokens: list[Any], space_free: frozenset[str]) -> list[Any]:
    """Component values without comments; a run of white space is one mark, dropped
    where it cannot matter."""
    out: list[Any] = []
    for token in tokens:
        if token.type == "comment":
            continue
        value = _value(token, space_free)
        if value == _SPACE and (not out or out[-1] == _SPACE or _frees(out[-1], space_free)):
            continue
        if out and out[-1] == _SPACE and _frees(value, space_free):
            out.pop()
        out.append(value)
    if out and out[-1] == _SPACE:
        out.pop()
    return out


def _frees(value: Any, space_free: frozenset[str]) -> bool:
    return bool(value[0] == "literal" and value[1] in space_free)


def _value(token: Any, space_free: frozenset[str]) -> Any:
    kind = token.type
    if kind == "whitespace":
        return _SPACE
    if kind == "function":
        return (kind, token.name, _values(token.arguments, space_free))
    if kind == "() block":
        return (kind, _values(token.content, _SPACE_FREE_IN_PARENS))
    if kind in ("[] block", "{} block"):
        return (kind, _values(token.content, space_free))
    if kind in ("number", "percentage", "dimension"):
        return (kind, token.representation, getattr(token, "unit", None))
    if kind == "hash":
        return (kind, token.value, token.is_identifier)
    if kind == "unicode-range":
        return (kind, token.start, token.end)
    if kind == "error":
        return (kind, token.kind)
    return (kind, token.value)  # ident, at-keyword, string, url, literal
