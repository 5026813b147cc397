"""The edge tags of a transformation's answer: every stored file it reads, so that a write
to any of them purges it (``edge/headers.py`` tags the main file and the app)."""

from __future__ import annotations

from stowage import errors
from stowage.edge.headers import TAG_HEADER
from stowage.http.cdnpath import CdnPath
from stowage.processing import chain as chains


def read_handles(path: CdnPath) -> list[str]:
    """Every stored file the transformation reads: the main one, a list's, a watermark's
    and a collage's. The edge purges a result by each (a new watermark file was served
    stale for a day: only the main handle tagged it)."""
    try:
        named = chains.named_handles(chains.parse(path.tasks))
    except errors.StowageError:  # a chain refused (its fallback answers): none named
        named = []
    return [h for h in (path.handle, *path.handles, *named) if h]


def also(found: dict[str, str], varies: bool, handles: list[str]) -> dict[str, str]:
    """The answer's edge tags with ``handles`` added, and ``Vary: Accept`` when the chain
    negotiated its format (a fallback's file stands in for every format)."""
    if TAG_HEADER in found:
        tags = found[TAG_HEADER].split()
        found[TAG_HEADER] = " ".join(dict.fromkeys([*tags, *handles]))
    if varies:
        found["Vary"] = vary_with(found.get("Vary"), "Accept")
    return found


def vary_with(current: str | None, name: str) -> str:
    """A Vary header's value with ``name`` added, once."""
    names = [v.strip() for v in (current or "").split(",") if v.strip()]
    return ", ".join([*names, name] if name.lower() not in map(str.lower, names) else names)
