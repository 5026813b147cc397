"""docs/reliability.md keeps its promise: every checklist item (1-51) and every item the
service adds has a row, and every test a row names exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "reliability.md"
CHECKLIST_ITEMS = range(1, 52)
_ROW = re.compile(r"^\| (\d+) \| (.*`.*)$", re.MULTILINE)  # item rows name tests in `...`
_TEST = re.compile(r"`(tests/[\w/]+\.py)::(test_\w+)`")


def _rows() -> dict[int, list[tuple[str, str]]]:
    return {int(n): _TEST.findall(rest) for n, rest in _ROW.findall(DOC.read_text())}


def test_row_numbers_are_unique() -> None:
    numbers = [int(n) for n, _ in _ROW.findall(DOC.read_text())]
    assert sorted(numbers) == sorted(set(numbers)), "two rows share a number"


def test_every_checklist_item_has_existing_tests() -> None:
    rows = _rows()
    assert set(CHECKLIST_ITEMS) <= set(rows), sorted(set(CHECKLIST_ITEMS) - set(rows))
    missing: list[str] = []
    for number, tests in sorted(rows.items()):
        if not tests:
            missing.append(f"item {number}: no test named")
        for path, name in tests:
            source = ROOT / path
            if not source.exists() or not re.search(rf"def {name}\(", source.read_text()):
                missing.append(f"item {number}: {path}::{name}")
    assert missing == []


def test_the_totals_line_reads_zero_where_it_must() -> None:
    text = DOC.read_text()
    header = "| inputs tried | faults injected | files lost | partial files seen |"
    line = text[text.index(header) :].splitlines()[2]
    cells = [c.strip().strip("*") for c in line.strip("|").split("|")]
    assert int(cells[0]) > 0 and int(cells[1]) > 0
    assert cells[2:] == ["0", "0", "0", "0"]
