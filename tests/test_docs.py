"""Docs that are generated from code must match it; the README must keep its two commands."""

from __future__ import annotations

from pathlib import Path

from stowage.config import setting_fields
from stowage.docs import cli_markdown, configuration_markdown

ROOT = Path(__file__).resolve().parents[1]


def test_configuration_reference_is_current() -> None:
    doc = (ROOT / "docs" / "configuration.md").read_text()
    assert doc == configuration_markdown(), "run: .venv/bin/python -m stowage.docs"
    for f in setting_fields():
        assert f"`{f.name}`" in doc


def test_cli_reference_is_current() -> None:
    assert (ROOT / "docs" / "cli.md").read_text() == cli_markdown()


def test_readme_starts_with_the_two_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    head = readme[: readme.index("## ", 10)]
    assert "scripts/serve" in head
    assert "scripts/test" in head
    assert "scripts/test" in (ROOT / ".ci" / "run").read_text()


def test_spec_coverage_points_at_existing_tests() -> None:
    import re

    doc = (ROOT / "docs" / "spec-coverage.md").read_text()
    refs = re.findall(r"`(tests/[\w/]+\.py)::(\w+)", doc)
    assert len(refs) > 40
    for path, name in refs:
        source = (ROOT / path).read_text()
        assert f"def {name}(" in source, f"{path}::{name} does not exist"
