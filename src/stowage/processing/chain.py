"""Task chains as URLs carry them, parsed, checked and normalised.

    resize=width:300,fit:crop,align:[top,left]/rotate=deg:90/flip/output=format:webp

A task is ``name`` or ``name=opt:value,opt:value``; values are numbers, booleans,
names, ``"quoted text"`` and lists ``[a,b]``. Options are sorted in the normalised
key, so ``resize=height:200,width:300`` and ``resize=width:300,height:200`` are one
chain (one cached derivative). Unknown task names are refused with
``UNSUPPORTED_TASK`` listing the supported ones; a bad option with a 400 naming it.
"""

from __future__ import annotations

import functools
import re

from stowage import errors
from stowage.processing import tasks
from stowage.processing.base import Chain, Output, Task, Value

_INT = re.compile(r"-?[0-9]{1,12}")
_FLOAT = re.compile(r"-?[0-9]{1,12}\.[0-9]{1,12}")
MAX_TASKS = 32
MAX_TASK_LENGTH = 2048
MAX_NESTING = 2
SUPPORTED = tuple(sorted(tasks.SPECS))
_OUTPUTS = {
    "jpg": Output("jpeg", "image/jpeg", "jpg"),
    "png": Output("png", "image/png", "png"),
    "webp": Output("webp", "image/webp", "webp"),
    "avif": Output("avif", "image/avif", "avif"),
    "gif": Output("gif", "image/gif", "gif"),
    "tiff": Output("tiff", "image/tiff", "tiff"),
}
_BY_MIMETYPE = {
    "image/jpeg": "jpg",
    "image/png": "png",
    "image/webp": "webp",
    "image/avif": "avif",
    "image/gif": "gif",
    "image/tiff": "tiff",
}
JSON = Output("json", "application/json", "json")


def parse(segments: list[str]) -> Chain:
    """``segments``: the task parts of a path, percent-decoded, left to right."""
    return _parse(tuple(segments))


@functools.lru_cache(maxsize=1024)  # a warm derivative's chain is parsed once, not per hit
def _parse(segments: tuple[str, ...]) -> Chain:
    if len(segments) > MAX_TASKS:
        raise errors.InvalidParameter(f"at most {MAX_TASKS} tasks in one chain")
    parsed = [parse_task(segment) for segment in segments]
    store = [t for t in parsed if t.name == "store"]
    image = tuple(t for t in parsed if t.name != "store")
    if len(store) > 1 or (store and parsed[-1].name != "store"):
        raise errors.InvalidParameter("store must be the last task, once", parameter="store")
    if any(t.name == "imagesize" for t in image[:-1]):
        raise errors.InvalidParameter("imagesize must be the last task", parameter="imagesize")
    if store and image and image[-1].name == "imagesize":
        raise errors.InvalidParameter("imagesize answers JSON; it cannot be stored")
    formats = [t.get("format") for t in image if t.name == "output" and t.get("format")]
    fmt = str(formats[-1]).replace("jpeg", "jpg") if formats else None
    return Chain(image, store[0] if store else None, fmt)


def output_for(chain: Chain, input_mimetype: str) -> Output:
    if chain.wants_size:
        return JSON
    fmt = chain.output_format or _BY_MIMETYPE.get(input_mimetype.split(";")[0].lower(), "png")
    return _OUTPUTS[fmt]


def parse_task(segment: str) -> Task:
    if len(segment) > MAX_TASK_LENGTH:
        raise errors.InvalidParameter(f"a task is at most {MAX_TASK_LENGTH} characters")
    name, _, body = segment.partition("=")
    name = tasks.ALIASES.get(name.strip().lower(), name.strip().lower())
    spec = tasks.SPECS.get(name)
    if spec is None:
        raise errors.UnsupportedTask(
            f"task {name[:64]!r} is not supported; supported: {', '.join(SUPPORTED)}",
            task=name[:64],
            supported=list(SUPPORTED),
        )
    options: dict[str, Value] = {}
    for item in split(body, ",") if body else []:
        key, sep, raw = item.partition(":")
        key = key.strip().lower()
        if not sep or key not in spec:
            raise _bad(name, key or item, f"unknown option; {name} takes {_names(spec)}")
        try:
            options[key] = spec[key](value(raw.strip()))
        except ValueError as exc:
            raise _bad(name, key, str(exc)) from exc
    needed = tasks.REQUIRED.get(name)
    if needed and not any(k in options for k in needed):
        raise _bad(name, needed[0], f"{name} needs {' or '.join(needed)}")
    return Task(name, tuple(sorted(options.items())))


def value(raw: str, depth: int = 0) -> Value:
    if raw.startswith("[") and raw.endswith("]"):
        if depth >= MAX_NESTING:
            raise ValueError(f"lists nest at most {MAX_NESTING} deep")
        inner = raw[1:-1].strip()
        return tuple(value(v.strip(), depth + 1) for v in split(inner, ",")) if inner else ()
    if len(raw) >= 2 and raw.startswith('"') and raw.endswith('"'):
        return raw[1:-1]
    if raw.lower() in ("true", "false"):
        return raw.lower() == "true"
    if _INT.fullmatch(raw):
        return int(raw)
    if _FLOAT.fullmatch(raw):
        return float(raw)
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


def _names(spec: dict[str, tasks.Convert]) -> str:
    return ", ".join(spec) if spec else "no options"


def _bad(task: str, option: str, reason: str) -> errors.InvalidParameter:
    option = option[:64]
    return errors.InvalidParameter(
        f"{task} option {option!r}: {reason}", parameter=f"{task}.{option}", task=task
    )
