"""One code for one mistake (issue 22: a key naming no app was 403 ``INVALID_API_KEY`` on a
store and 400 ``UNKNOWN_API_KEY`` on a download; an unknown task was ``TASK_NOT_SUPPORTED``
on JSON ``/process`` and ``UNSUPPORTED_TASK`` on a URL), and docs/errors.md lists exactly
the codes of src/stowage/errors.py, each once, each with its own meaning."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from stowage import errors

DOC = Path(__file__).resolve().parents[1] / "docs" / "errors.md"
ROW = re.compile(r"^\| (\d{3}) \| `([A-Z0-9_]+)` \| (.+) \|$")

#: Mistakes that had two codes: exactly one code of each group may exist.
SYNONYMS = [
    ("a key that names no app", {"INVALID_API_KEY", "UNKNOWN_API_KEY"}),
    ("a task the service does not know", {"TASK_NOT_SUPPORTED", "UNSUPPORTED_TASK"}),
    ("a missing credential", {"AUTH_REQUIRED", "UNAUTHENTICATED", "MISSING_CREDENTIALS"}),
    ("a handle that names no file", {"HANDLE_NOT_FOUND", "FILE_NOT_FOUND", "UNKNOWN_HANDLE"}),
    ("a file over the size limit", {"PAYLOAD_TOO_LARGE", "FILE_TOO_LARGE"}),
]


def _codes() -> list[str]:
    """The code of every class that names one (a private subclass that keeps its parent's
    code, such as the pool's ``_Ended``, is that same mistake)."""
    return [cls.code for cls in errors.all_error_classes() if "code" in vars(cls)]


def _documented() -> list[tuple[int, str, str]]:
    rows = [ROW.match(line) for line in DOC.read_text().splitlines()]
    return [(int(m[1]), m[2], m[3].strip()) for m in rows if m]


def test_each_class_has_its_own_code() -> None:
    repeated = [code for code, n in Counter(_codes()).items() if n > 1]
    assert not repeated


def test_a_mistake_has_one_code() -> None:
    codes = set(_codes())
    for mistake, group in SYNONYMS:
        assert len(codes & group) == 1, f"{mistake}: {sorted(codes & group)}"


def test_the_docs_list_every_code_once_with_its_own_meaning() -> None:
    rows = _documented()
    documented = Counter(code for _, code, _ in rows)
    assert sorted(documented) == sorted(set(_codes())), "docs/errors.md and errors.py differ"
    assert [c for c, n in documented.items() if n > 1] == []
    meanings = Counter(meaning.lower() for _, _, meaning in rows)
    assert [m for m, n in meanings.items() if n > 1] == []


def test_the_docs_give_each_code_its_status() -> None:
    status = {cls.code: cls.status for cls in errors.all_error_classes()}
    assert [(c, s) for s, c, _ in _documented() if status.get(c) != s] == []
