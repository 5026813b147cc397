"""The one grammar of the CDN path: every URL form the Filestack SDKs build and the
hosted service's documentation shows, parsed against the task table (``catalogue``).

    /<HANDLE>   /<HANDLE>/metadata   /[<H1>,<H2>]            (several sources)
    /<task>[/<task>...]/<HANDLE>                             (python SDK)
    /<APIKEY>/<tasks>/<HANDLE or URL>                        (js SDK; external sources)

A task is ``name`` or ``name=opt:value,opt:value``; an option is spelled by its long
name or a short one (``resize=w:300``). Values are whole and decimal numbers, ``true``/
``false``, names, ``"quoted text"`` (may hold ``/``, ``,`` and ``:``; the quotes may
come as ``%22``) and lists ``[a,b]``, nested at most two deep. Segments are split on
``/`` outside quotes and brackets, then percent-decoded. ``security``, ``cache`` and
``store`` are request tasks of the table: they are read into the parsed path.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import NamedTuple
from urllib.parse import unquote

from stowage import errors, words
from stowage.processing import (
    b64paths,
    catalogue,
    hostedlinks,
    listsources,
    storepaths,
)
from stowage.processing.base import Task, Value
from stowage.processing.params import Convert, NotGiven, Text
from stowage.processing.table import TaskSpec

_INT = re.compile(r"-?[0-9]{1,12}")
_FLOAT = re.compile(r"-?[0-9]{0,12}\.[0-9]{1,12}")
_QUOTE = re.compile("%22", re.IGNORECASE)
_URL = listsources.URL
#: ``"https://host/a.jpg"``: filestack-js quotes a source holding ``/`` (``escapeValue``).
_QUOTED_URL = re.compile(r'"(?:https?|src)(?::|%3A)', re.IGNORECASE | re.ASCII)
#: ``https:/host/a.jpg``: a proxy or CMS that merges slashes in paths has taken one.
_ONE_SLASH = re.compile(r"(https?):/(?!/)", re.IGNORECASE | re.ASCII)
MAX_TASK_LENGTH = 2048
MAX_NESTING = 2
MAX_SOURCES = 32
#: The tasks whose input is a ``[h1,h2]`` list, named in the refusal of any other.
LIST_READERS = sorted({s.name for s in catalogue.TABLE.values() if s.reads_list})


@dataclass
class CdnPath:
    """A CDN path, parsed: the source, the credentials and cache asks, and the tasks."""

    handle: str  # "" when the source is a URL or a list of handles
    api_key: str | None = None
    metadata: bool = False
    policy: str | None = None
    signature: str | None = None
    cache: bool | None = None  # None: the default; False: cache=false
    max_age: int | None = None  # cache=expiry:N
    tasks: list[str] = field(default_factory=list)  # processing tasks (store too), in order
    url: str | None = None  # an external source instead of a handle
    #: Sent as is, not percent-encoded: the query string is the URL's (http/transform.py).
    url_as_sent: bool = False
    #: An open double quote the query string closes: the query's last ``"`` is the quote's
    #: (a URL's, or a hosted CDN link's read as its handle).
    url_quote_open: bool = False
    #: A hosted CDN link's own query sent within its path; None: no such link.
    link_query: str | None = None
    handles: tuple[str, ...] = ()  # [h1,h2]: several sources (zip, collage, animate)
    urls: tuple[str, ...] = ()  # ["https://...","https://..."]: several URL sources
    store: Task | None = None  # a store task: the result becomes a new file
    preview: Task | None = None  # preview[=css:"URL"]: the viewer page (http/preview.py)
    playlist: bool = False  # video_playlist: a stored HLS playlist (http/playlist.py)

    @property
    def sources(self) -> tuple[str, ...]:
        """The handles the path names: one, or the list's (none for URLs)."""
        return self.handles or ((self.handle,) if self.handle else ())


def parse_path(raw_path: str) -> CdnPath:
    raw, url, refused = _read(raw_path)
    hosted = None
    if url is not None:
        hostedlinks.not_a_storage_alias(url.url)
        hosted = hostedlinks.read(url.url)  # the hosted CDN's link of a file: that file
        raw = tuple(hostedlinks.spliced(list(raw[: url.at]), hosted)) if hosted else raw[: url.at]
    elif refused is not None:
        raise errors.InvalidUrl(refused)
    raw_last = next((s for s in reversed(raw) if s), "")
    segments = [unquote(s) for s in raw if s]
    source = None if hosted else url
    metadata = source is None and len(segments) > 1 and segments[-1] == "metadata"
    if metadata:
        segments.pop()
    if not segments:
        raise errors.NotFound()
    found = CdnPath(handle="", metadata=metadata, url=source.url if source else None)
    found.url_as_sent = source is not None and source.as_sent
    found.url_quote_open = url is not None and url.quote_open
    found.link_query = hosted.query if hosted else None
    if source is None:
        _source(found, segments.pop(), raw_last)
    if segments and catalogue.names_no_task(segments[0]):
        found.api_key = segments.pop(0)
    for segment in segments:
        _apply(found, segment, parse_task(segment))
    if found.metadata and found.tasks:  # it would answer the image and drop /metadata
        raise errors.InvalidParameter("/metadata follows a handle alone", parameter="metadata")
    if (found.handles or found.urls) and not any(_reads_list(s) for s in found.tasks):
        # a list is no one file, and a task of one file would drop all but the first
        raise errors.InvalidParameter(
            f"a list of sources is read by {', '.join(LIST_READERS)}; no task here reads it",
            parameter="sources",
        )
    return found


@dataclass(frozen=True)
class DebugAsk:
    """A path that asks for ``debug``: what its report tells even when the path does not
    parse (the API key, the tasks as written but a ``security`` task), and the path
    without ``debug``, which is the transformation reported on."""

    api_key: str | None
    task_uri: str
    path: str


def debug_asked(raw_path: str) -> DebugAsk | None:
    """``debug`` anywhere before the source: first (the hosted documentation, Java,
    Ruby, which puts the API key after it), after the API key (PHP), or among the tasks.
    None when the path does not ask for it."""
    raw, url, _ = _read(raw_path)
    filled = [i for i, segment in enumerate(raw) if segment]
    before = [i for i in filled if i < url.at] if url else filled[:-1]
    at = next((i for i in before if words.word(unquote(raw[i])) == "debug"), None)
    if at is None:
        return None
    tasks = [unquote(raw[i]) for i in before if i != at]
    key = tasks.pop(0) if tasks and "=" not in tasks[0] and not catalogue.spec(tasks[0]) else None
    shown = [t for t in tasks if words.word(t.partition("=")[0]) != "security"]
    return DebugAsk(key, "/".join(shown), "/".join(raw[:at] + raw[at + 1 :]))


@functools.lru_cache(maxsize=256)
def _read(raw_path: str) -> tuple[tuple[str, ...], UrlSource | None, str | None]:
    """The path's raw segments, its URL source and why a source of another scheme is
    refused, read once for ``debug_asked`` and ``parse_path`` of one request, and for
    the same URL asked again (a cached derivative's request spent a tenth of its time
    here)."""
    raw = tuple(_segments(raw_path))
    url = _url_source(raw)
    return raw, url, None if url is not None else hostedlinks.other_scheme(raw)


def _reads_list(segment: str) -> bool:
    spec = catalogue.spec(parse_task(segment).name)
    return spec is not None and spec.reads_list


def _source(found: CdnPath, last: str, raw_last: str) -> None:
    """The path's source: ``last`` (its last segment, decoded) as a handle or a list.
    A list holding a URL as sent (``["https://h/a%20b.jpg"]``, as filestack-js writes
    it) is read from ``raw_last``, not decoded: each URL reaches its origin as the same
    URL alone would (``listsources``)."""
    if not (last.startswith("[") and last.endswith("]")):
        if "=" in last or '"' in last:  # a task, or an open quote that took the rest
            raise errors.InvalidParameter(
                "no file or URL follows the tasks (is a double quote left open?)",
                parameter="source",
            )
        if last.startswith("[") or last.endswith("]"):  # [h1 was a 404 naming "[h1"
            raise errors.InvalidParameter("a list needs both '[' and ']'", parameter="sources")
        found.handle = last
        return
    as_sent = listsources.SENT_URL.search(raw_last) is not None
    try:
        items = value(raw_last if as_sent else last, literal=True)  # a handle of digits: text
        items = listsources.listed(items, as_sent=as_sent)
    except ValueError as exc:
        raise errors.InvalidParameter(f"the list of sources: {exc}", parameter="sources") from exc
    if not isinstance(items, tuple) or not 0 < len(items) <= MAX_SOURCES:
        raise errors.InvalidParameter(
            f"a list of sources holds 1 to {MAX_SOURCES} handles (repeats included)",
            parameter="sources",
        )
    found.handles, found.urls = listsources.kinds(items)


class UrlSource(NamedTuple):
    url: str
    at: int  # the segment it starts at
    as_sent: bool  # sent as is, not percent-encoded: the query string is the URL's
    quote_open: bool = False  # in a double quote the query string closes


def _url_source(raw: tuple[str, ...]) -> UrlSource | None:
    """An external URL source: the rest of the path from its scheme on, or the last
    segment when it is a URL in double quotes (filestack-js). A scheme followed by one
    slash has lost the other on its way."""
    last = max((i for i, segment in enumerate(raw) if segment), default=0)
    for index, segment in enumerate(raw[1:], start=1):
        if index == last and _QUOTED_URL.match(segment):
            return _quoted_url(segment, index)
        if _URL.match(segment) and "=" not in segment.split(":")[0]:
            rest = "/".join(raw[index:])
            as_sent = "://" in rest or _ONE_SLASH.match(rest) is not None
            url = _ONE_SLASH.sub(r"\1://", rest if as_sent else unquote(rest), count=1)
            return UrlSource(listsources.bracketed_host(url), index, as_sent)
    return None


def _quoted_url(segment: str, index: int) -> UrlSource:
    """``"https://host/a.jpg"``: the URL within the quotes; its query string, if it had
    one, came as the request's, with the closing quote (the quote is left open here)."""
    closed = len(segment) > 1 and segment.endswith('"')
    inner = segment[1:-1] if closed else segment[1:]
    plain = "://" in inner or _ONE_SLASH.match(inner) is not None
    url = _ONE_SLASH.sub(r"\1://", inner if plain else unquote(inner), count=1)
    # an IPv6 host's brackets as clients encode them, as for a URL sent unquoted
    url = listsources.bracketed_host(url) if plain else url
    return UrlSource(url, index, as_sent=not closed, quote_open=not closed)


def _segments(raw_path: str) -> list[str]:
    """The path split on ``/`` outside quotes and brackets, its base64 parts read. A
    list source sent with its brackets percent-encoded (``/%5B"https://h/a.jpg"%5D``,
    as HTTP clients send ``[``) gets them back first (its URLs hold ``/``), unless a
    URL source comes before them: ``https://h/a/%5Bx%5D`` is that URL, as sent. A quote
    sent as ``%22`` is a quote, but in a list of URLs as sent only where it opens or
    closes an item (``listsources.marked_quotes``): ``/a%22b.png`` is the URL's."""
    opened = listsources.opening(raw_path)
    trimmed = raw_path.rstrip("/")
    close = 1 if trimmed.endswith("]") else 3 if trimmed[-3:].upper() == "%5D" else 0
    if opened is None or not close:
        path = _QUOTE.sub('"', raw_path)
    else:
        inner = trimmed[opened.end() : len(trimmed) - close]
        if listsources.SENT_URL.search(inner):
            inner = listsources.marked_quotes(inner)
        else:
            inner = _QUOTE.sub('"', inner)
        head, slashes = _QUOTE.sub('"', raw_path[: opened.start()]), raw_path[len(trimmed) :]
        path = f"{head}/[{inner}]{slashes}"
    return storepaths.rejoined(b64paths.expanded(split(path, "/")))


def _apply(found: CdnPath, segment: str, task: Task) -> None:
    """Request tasks go into the path's fields; the others stay tasks for the engine."""
    if task.name == "security":
        if found.policy is not None or found.signature is not None:  # each one sent is checked
            raise errors.InvalidParameter("security appears once in a path", parameter="security")
        found.policy = _text(task.get("policy"))
        found.signature = _text(task.get("signature"))
        return
    if task.name == "cache":
        if task.get("cache") is False:
            found.cache = False
        elif task.get("cache") is True and found.cache is None:
            found.cache = True
        expiry = task.get("expiry")
        found.max_age = expiry if isinstance(expiry, int) else found.max_age
        return
    if task.name == "preview":
        found.preview = task
        return
    if task.name == "debug":  # read before the path is parsed (debug_asked)
        return
    if task.name == "video_playlist":
        found.playlist = True
        return
    if task.name == "store":
        found.store = task
    found.tasks.append(segment)


@functools.lru_cache(maxsize=1024)  # a warm URL's tasks are read by several checks per hit
def parse_task(segment: str) -> Task:
    """``name`` or ``name=opt:value,...``, checked against the table: a 400 naming the
    task (``UNSUPPORTED_TASK``) or the option (``INVALID_PARAMETER``, ``task.option``).
    A ``Task`` is immutable, so one parse serves every caller."""
    if len(segment) > MAX_TASK_LENGTH:
        raise errors.InvalidParameter(f"a task is at most {MAX_TASK_LENGTH} characters")
    name, _, body = segment.partition("=")
    spec = catalogue.spec(name)
    if spec is None:
        shown = words.word(name)[:64]
        raise errors.UnsupportedTask(
            f"task {shown!r} is not supported; supported: {', '.join(catalogue.SUPPORTED)}",
            task=shown,
            supported=list(catalogue.SUPPORTED),
        )
    if spec.unavailable:
        raise errors.TaskNotAvailable(f"{spec.name}: {spec.unavailable}", task=spec.name)
    options: dict[str, Value] = {}
    seen: set[str] = set()
    for key, raw in pairs(body, spec):
        param = spec.param(key)
        if param is None:
            raise bad(spec.name, key, f"unknown option; {spec.name} takes {_names(spec)}")
        if spec.name == "security" and param.name in seen:  # each policy sent is checked
            raise bad(spec.name, param.name, "is given once (short and long names are one)")
        seen.add(param.name)
        try:
            options[param.name] = checked(param.check, raw)
        except NotGiven:
            continue
        except ValueError as exc:
            raise bad(spec.name, param.name, str(exc)) from exc
    needed = spec.needs_one_of
    if needed and not any(k in options for k in needed):
        raise bad(spec.name, needed[0], f"{spec.name} needs {' or '.join(needed)}")
    return Task(spec.name, tuple(sorted(options.items())))


def pairs(body: str, spec: TaskSpec) -> list[tuple[str, str]]:
    """The ``key:value`` items of a task's body, keys lower-cased; a body that is one
    value without a name (``cache=false``) sets the task's ``bare`` parameter. Empty
    items (``width:100,``, ``a:1,,b:2``) are none: a hand-written URL has them."""
    items = [item for item in split(body, ",") if words.trimmed(item)]
    if spec.bare and len(items) == 1 and ":" not in items[0]:
        return [(spec.bare, words.trimmed(items[0]))]
    found: list[tuple[str, str]] = []
    for item in items:
        key, sep, raw = item.partition(":")
        key = words.word(key)
        if not sep:
            raise bad(
                spec.name, key or item, f"an option is name:value; {spec.name} takes {_names(spec)}"
            )
        found.append((key, words.trimmed(raw)))
    return found


def checked(check: Convert, raw: str) -> Value:
    """``raw`` read and checked. A quoted value is the value unquoted (``expiry:"60"`` is
    60, ``base64decode:"true"`` is true), for every check at once rather than each check
    reading numbers out of text on its own: what a check refuses as quoted text it is
    given again with the quotes read away. Text parameters keep the text as sent."""
    literal = isinstance(check, Text)  # text as sent: "FALSE", "007"
    try:
        return check(value(raw, literal=literal))
    except ValueError as exc:
        if literal or '"' not in raw:
            raise
        first = exc
    try:
        return check(value(raw, unquote=True))
    except ValueError:
        raise first from None  # the reason for the value as written


def value(raw: str, depth: int = 0, *, literal: bool = False, unquote: bool = False) -> Value:
    """A parsed value: a list, quoted text, or (unless ``literal``) a boolean or number;
    with ``unquote``, quoted text is read as the same text without its quotes."""
    if raw.startswith("[") and raw.endswith("]"):
        if depth >= MAX_NESTING:
            raise ValueError(f"lists nest at most {MAX_NESTING} deep")
        inner = words.trimmed(raw[1:-1])
        items = split(inner, ",") if inner else []
        items = [words.trimmed(v) for v in items]
        return tuple(value(v, depth + 1, literal=literal, unquote=unquote) for v in items)
    if len(raw) >= 2 and raw.startswith('"') and raw.endswith('"'):
        return _scalar(words.trimmed(raw[1:-1])) if unquote else raw[1:-1]
    if literal:
        return raw
    return _scalar(raw)


def _scalar(raw: str) -> Value:
    """Unquoted text as a boolean, a number, or else the text."""
    if words.folded(raw) in ("true", "false"):
        return words.folded(raw) == "true"
    if _INT.fullmatch(raw) and str(int(raw)) == raw:  # "000000" stays text: a hex color
        return int(raw)
    if _FLOAT.fullmatch(raw) and len(raw.strip("-0").replace(".", "")) <= 15:
        return float(raw)  # longer stays text: params reads it exactly (half up)
    return raw


def split(text: str, separator: str) -> list[str]:
    """Split on ``separator`` outside double quotes and brackets."""
    parts: list[str] = []
    current: list[str] = []
    quoted, depth = False, 0
    for char in text:
        if char == '"':
            quoted = not quoted
        elif not quoted and char == "[":
            depth += 1
        elif not quoted and char == "]":
            depth = max(0, depth - 1)
        if char == separator and not quoted and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts


def bad(task: str, option: str, reason: str) -> errors.InvalidParameter:
    option = option[:64]
    return errors.InvalidParameter(
        f"{task} option {option!r}: {reason}", parameter=f"{task}.{option}", task=task
    )


def _names(spec: TaskSpec) -> str:
    return ", ".join(p.name for p in spec.params) if spec.params else "no options"


def _text(value: Value | None) -> str | None:
    return None if value is None else str(value)
