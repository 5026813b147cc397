"""What a new user reads first works as written (issue 24): every Markdown table renders
(a separator row under its header, no row twice in a row), every curl URL with brackets
has ``-g``, and the README's quick start sets each variable before it uses it."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SEPARATOR = re.compile(r"^\|(\s*:?-+:?\s*\|)+$")


def _cells(line: str) -> int:
    return len(re.split(r"(?<!\\)\|", line.strip().strip("|")))


def _outside_code(text: str) -> list[str]:
    lines, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        lines.append("" if fenced or line.startswith("```") else line)
    return lines


def _tables(lines: list[str]) -> list[list[str]]:
    tables, current = [], []
    for line in [*lines, ""]:
        if line.startswith("|"):
            current.append(line)
        elif current:
            tables.append(current)
            current = []
    return tables


@pytest.mark.parametrize("path", DOCS, ids=[p.name for p in DOCS])
def test_every_table_renders(path: Path) -> None:
    for table in _tables(_outside_code(path.read_text())):
        assert len(table) >= 2 and SEPARATOR.match(table[1]), f"{path.name}: {table[0]}"
        assert _cells(table[1]) == _cells(table[0]), f"{path.name}: {table[0]}"
        repeated = [a for a, b in itertools.pairwise(table) if a == b]
        assert not repeated, f"{path.name}: a row twice: {repeated}"


@pytest.mark.parametrize("path", DOCS, ids=[p.name for p in DOCS])
def test_curl_with_brackets_in_its_url_uses_globoff(path: Path) -> None:
    for line in path.read_text().splitlines():
        command = line.split("#", 1)[0]
        urls = re.findall(r'"(https?://[^"]*)"', command) if "curl " in command else []
        if any("[" in url or "]" in url for url in urls):
            assert re.search(r"curl\b.*\s(-g|--globoff)\b", command), line


def test_the_quick_start_sets_what_it_uses() -> None:
    readme = (ROOT / "README.md").read_text()
    start = readme.split("## Quick start", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    lines = start.splitlines()
    for name in ("KEY", "SECRET", "HANDLE", "Q"):
        uses = [i for i, line in enumerate(lines) if f"${name}" in line.split("#", 1)[0]]
        sets = [i for i, line in enumerate(lines) if re.search(rf"(^|;\s*){name}=", line)]
        assert uses and sets and min(sets) < min(uses), name
    for file in re.findall(r"@([\w.]+)", start):  # the files it sends exist or are made
        assert file in ("photo.jpg", "new.txt") or f"> {file}" in start, file
    deletes = [i for i, line in enumerate(lines) if "/remove?" in line or "-X DELETE" in line]
    between = lines[deletes[0] + 1 : deletes[-1]]
    assert len(deletes) == 2 and any(line.startswith("# or") for line in between)


@pytest.mark.parametrize("path", DOCS, ids=[p.name for p in DOCS])
def test_the_error_codes_the_docs_name_exist(path: Path) -> None:
    """A status with a code (`400 UNSUPPORTED_TASK`) names a code of errors.py: a stale
    one (`TASK_NOT_SUPPORTED`, gone in issue 22) fails here."""
    from stowage.errors import all_error_classes

    codes = {cls.code for cls in all_error_classes()} | {"OK"}
    named = re.findall(r"\b[1-5]\d\d `?([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)`?", path.read_text())
    assert sorted(set(named) - codes) == [], path.name
