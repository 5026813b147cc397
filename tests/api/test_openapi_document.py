"""The OpenAPI document that the ``http/openapi*.py`` modules write, compared with the one
they wrote when it was one 686-line module (before the split by concern; issue 22).

What other modules feed into it is taken out of the comparison, so that it holds only what
the openapi modules write: the transformation routes (``openapi_processing``, owned by
the processing engine) and the list of error codes (``errors.py``).

An intended change to the documented API regenerates the stored copy:
``PYTHONPATH=src .venv/bin/python -m tests.api.test_openapi_document``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from stowage.config import Settings
from stowage.http.openapi import document
from stowage.http.openapi_processing import processing_paths

STORED = Path(__file__).resolve().parents[1] / "data" / "openapi-document.json"
SETTINGS = Settings(api_public_url="https://api.example.test", cdn_public_url="https://cdn.test")


def _written_here() -> dict[str, Any]:
    doc = document(SETTINGS)
    for path in processing_paths([]):
        doc["paths"].pop(path)
    code = doc["components"]["schemas"]["Error"]["properties"]["error"]["properties"]["code"]
    code.pop("enum")
    return doc


def test_the_document_is_the_one_written_before_the_split() -> None:
    stored = json.loads(STORED.read_text())
    assert _written_here() == stored, "the document changed; see this module's docstring"


def test_the_error_codes_are_the_live_ones() -> None:
    from stowage.errors import all_error_classes

    doc = document(SETTINGS)
    code = doc["components"]["schemas"]["Error"]["properties"]["error"]["properties"]["code"]
    assert code["enum"] == sorted({cls.code for cls in all_error_classes()})


if __name__ == "__main__":
    STORED.write_text(json.dumps(_written_here(), indent=1, sort_keys=True) + "\n")
