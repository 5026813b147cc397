"""What ``stowage import`` reads: the handles to move in, with whatever the old side's
export says of each file (docs/operations.md "Import" lists the accepted forms).

- a list: one handle or file URL a line (``#`` starts a comment);
- CSV with a header row naming a ``handle`` (or ``url``) column;
- JSON: an array of objects, an object holding one (``files``, ``data``, ``items``), or
  JSON lines; each object with ``handle`` (or ``url``) and optional fields.

Field names are matched without case, ``-`` or ``_``; a few spellings are accepted for
each (``mimetype``/``type``/``content_type``, ``uploaded``/``created_at``/...). Upload
times may be epoch seconds, epoch milliseconds or ISO 8601.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from stowage.core import names

_FIELDS: dict[str, tuple[str, ...]] = {
    "handle": ("handle", "id", "fileid", "url", "link", "fileurl", "cdnurl"),
    "filename": ("filename", "name", "originalfilename", "originalname"),
    "mimetype": ("mimetype", "type", "contenttype", "mime"),
    "size": ("size", "bytes", "filesize", "length"),
    "uploaded": ("uploaded", "uploadtime", "uploadedat", "createdat", "created", "timestamp"),
    "md5": ("md5",),
    "sha256": ("sha256",),
}
_LISTS = ("files", "data", "items", "results")


@dataclass(frozen=True)
class Entry:
    """One file to import; None: the old side's metadata tells it."""

    handle: str
    filename: str | None = None
    mimetype: str | None = None
    size: int | None = None
    uploaded: float | None = None  # epoch milliseconds
    md5: str | None = None
    sha256: str | None = None

    def complete(self) -> bool:
        """Whether the export says all a file keeps, so no metadata request is needed."""
        known = (self.filename, self.mimetype, self.size, self.uploaded)
        return all(v is not None for v in known) and bool(self.md5 or self.sha256)


def read_entries(text: str) -> list[Entry]:
    """The entries of ``text``, each handle once (the first mention wins)."""
    stripped = text.lstrip("\ufeff \t\r\n")
    if stripped.startswith(("[", "{")):
        rows = _json_rows(stripped)
    elif _looks_like_csv(stripped):
        rows = list(csv.DictReader(io.StringIO(stripped)))
    else:
        rows = [{"handle": line.strip()} for line in stripped.splitlines()]
        rows = [r for r in rows if r["handle"] and not r["handle"].startswith("#")]
    seen: dict[str, Entry] = {}
    for row in rows:
        entry = _entry(row)
        seen.setdefault(entry.handle, entry)
    return list(seen.values())


def _json_rows(text: str) -> list[dict[str, Any]]:
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError:  # JSON lines
        data = [json.loads(line) for line in text.splitlines() if line.strip()]
    if isinstance(data, dict):
        data = next((data[k] for k in _LISTS if isinstance(data.get(k), list)), [data])
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise ValueError("a JSON export must be an array of objects (or JSON lines)")
    return data


def _looks_like_csv(text: str) -> bool:
    header = text.split("\n", 1)[0]
    columns = {_key(c) for c in next(csv.reader([header]), [])}
    return "," in header and bool(columns & set(_FIELDS["handle"]))


def _key(name: str) -> str:
    return name.strip().lower().replace("_", "").replace("-", "").replace(" ", "")


def _entry(row: dict[str, Any]) -> Entry:
    by_key = {_key(str(k)): v for k, v in row.items() if v not in (None, "")}
    found: dict[str, Any] = {}
    for field, spellings in _FIELDS.items():
        found[field] = next((by_key[s] for s in spellings if s in by_key), None)
    if found["handle"] is None:
        raise ValueError(f"an entry has no handle or url: {row!r}")
    return Entry(
        handle=handle_of(str(found["handle"])),
        filename=_text(found["filename"]),
        mimetype=_text(found["mimetype"]),
        size=int(found["size"]) if found["size"] is not None else None,
        uploaded=epoch_ms(found["uploaded"]),
        md5=_text(found["md5"]),
        sha256=_text(found["sha256"]),
    )


def handle_of(value: str) -> str:
    """A handle, or the handle a file URL ends with (``https://cdn.../<HANDLE>``, also
    ``.../file/<HANDLE>`` and URLs with tasks before the handle). Anything else is kept as
    it is, to be reported as not a handle."""
    value = value.strip()
    if "/" not in value:
        return value
    path = value.split("?", 1)[0].rstrip("/")
    segments = path.split("/")
    for segment in reversed(segments):
        if names.is_handle(segment):
            return segment
    return value


def _text(value: Any) -> str | None:
    return None if value is None else str(value).strip() or None


def epoch_ms(value: Any) -> float | None:
    """Epoch milliseconds from seconds, milliseconds or an ISO 8601 time."""
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        text = str(value).strip().replace("Z", "+00:00")
        when = datetime.fromisoformat(text)
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return when.timestamp() * 1000
    # 1e11 ms is 1973; 1e11 s is the year 5138: anything above it is milliseconds.
    return number if number > 1e11 else number * 1000
