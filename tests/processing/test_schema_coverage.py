"""Every task of filestack-js's transformation schema is in the task table, except the
ones the documents and video work owns."""

from __future__ import annotations

import re
from pathlib import Path

from stowage.processing import catalogue

SCHEMA = Path(__file__).resolve().parents[2] / (
    ".test-servers/filestack-js/node_modules/filestack-js/src/schema/transforms.schema.ts"
)
ELSEWHERE = {"video_convert", "pdfinfo", "pdfconvert", "doc_to_images"}


def schema_tasks() -> set[str]:
    """The keys of the schema's top-level ``properties`` object (four spaces deep)."""
    text = SCHEMA.read_text(encoding="utf-8")
    body = text[text.index("properties: {") :]
    return set(re.findall(r"^    ([a-z_]+): \{", body, flags=re.MULTILINE))


def test_every_schema_task_is_in_the_table() -> None:
    names = schema_tasks()
    assert len(names) >= 50 and {"resize", "fallback", "minify_js", "tags"} <= names
    missing = sorted(n for n in names if n not in catalogue.TABLE and n not in ELSEWHERE)
    assert missing == []
