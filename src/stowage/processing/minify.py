"""``minify_js`` and ``minify_css``: the source is text (a stored script or style sheet),
not an image. Run in the job processes like every task (``worker.py``), after the
service has held the source to the input size limit.

The minifiers are ``rjsmin`` and ``rcssmin``: they remove comments and white space. They
are not parsers and sometimes change what the code does, so each result is checked
against its source with a real parser (``samecode``); a result that differs, or a
source that cannot be checked (one that does not parse, one longer than
``JS_CHECKED_CHARS`` or ``CSS_CHECKED_CHARS``), is answered unchanged. The hosted
service's other options (``mangle``,
``merge_vars``, ``remove_console``, ``use_babel_polyfill``, ``targets``, ...) belong to a
JavaScript compiler: they are accepted, so saved URLs keep working, and not applied
(``docs/transformations.md``). ``gzip`` is left to the HTTP layer's compression.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import rcssmin
import rjsmin

from stowage import errors
from stowage.processing import samecode
from stowage.processing.base import Chain, Job, Output, Rendered, Task
from stowage.processing.params import boolean, integer, text
from stowage.processing.table import Answer, Kind, Param, TaskSpec

JS = Output("js", "application/javascript", "js")
CSS = Output("css", "text/css", "css")


#: The longest sources checked (characters); a longer one is answered unchanged rather
#: than unchecked. Checking walks both trees in Python: real scripts take 0.15-0.8 s a
#: million characters, the densest (``a+a+...``) 1.6 s and 450 MB; tinycss2 is pure
#: Python, 2.5 s a million characters of real CSS (docs/decisions.md).
JS_CHECKED_CHARS = 2_000_000
CSS_CHECKED_CHARS = 1_000_000


def _js(source: Any, task: Task) -> str:
    return _checked(str(source), rjsmin.jsmin, samecode.same_js, JS_CHECKED_CHARS)


def _css(source: Any, task: Task) -> str:
    return _checked(str(source), rcssmin.cssmin, samecode.same_css, CSS_CHECKED_CHARS)


def _checked(
    source: str, minify: Callable[..., str], same: Callable[[str, str], bool], most: int
) -> str:
    """The minified source when it means what the source means, else the source."""
    if len(source) > most:
        return source
    result = str(minify(source, keep_bang_comments=False))
    return result if same(source, result) else source


#: The hosted options (filestack-js's schema), then babel-minify's, which filestack-swift
#: sends in camelCase (``mergeVars``, read lower-cased): each name with that spelling.
_JS_FLAGS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("use_babel_polyfill", ()),
    ("keep_fn_name", ("keepfnname",)),
    ("keep_class_name", ("keepclassname",)),
    ("mangle", ()),
    ("merge_vars", ("mergevars",)),
    ("remove_console", ("removeconsole",)),
    ("remove_undefined", ("removeundefined",)),
    ("booleans", ()),
    ("built_ins", ("builtins",)),
    ("consecutive_adds", ("consecutiveadds",)),
    ("deadcode", ()),
    ("evaluate", ()),
    ("flip_comparisons", ("flipcomparisons",)),
    ("guards", ()),
    ("infinity", ()),
    ("member_expressions", ("memberexpressions",)),
    ("numeric_literals", ("numericliterals",)),
    ("property_literals", ("propertyliterals",)),
    ("regexp_constructors", ("regexpconstructors",)),
    ("remove_debugger", ("removedebugger",)),
    ("simplify", ()),
    ("simplify_comparisons", ("simplifycomparisons",)),
    ("type_constructors", ("typeconstructors",)),
    ("undefined_to_void", ("undefinedtovoid",)),
)

TASKS: tuple[TaskSpec, ...] = (
    TaskSpec(
        "minify_js",
        (
            Param("gzip", boolean, (), False),
            *(Param(name, boolean, spellings) for name, spellings in _JS_FLAGS),
            Param("targets", text),
        ),
        kind=Kind.TEXT,
        answer=Answer(_js, JS),
        doc="JavaScript without comments and white space (rjsmin)",
    ),
    TaskSpec(
        "minify_css",
        (Param("gzip", boolean, (), False), Param("level", integer(1, 2), (), 1)),
        kind=Kind.TEXT,
        answer=Answer(_css, CSS),
        doc="CSS without comments and white space (rcssmin)",
    ),
)
_BY_NAME = {spec.name: spec for spec in TASKS}


def applies(chain: Chain) -> bool:
    return len(chain.tasks) == 1 and chain.tasks[0].name in _BY_NAME


def render(job: Job) -> Rendered:
    """The job's source, minified into its destination."""
    task = job.chain.tasks[0]
    answer = _BY_NAME[task.name].answer
    assert answer is not None
    if job.source.stat().st_size > job.limits.max_input_bytes:
        raise errors.PayloadTooLarge(max_bytes=job.limits.max_input_bytes)
    try:
        source = Path(job.source).read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise errors.UnsupportedMediaType(f"{task.name} takes UTF-8 text") from exc
    if "\x00" in source:
        raise errors.UnsupportedMediaType(f"{task.name} takes text, not binary data")
    job.dest.write_text(answer.render(source, task), encoding="utf-8")
    return Rendered(answer.output)
