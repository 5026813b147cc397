"""The API test suite (tests/api), sent through nginx to three nodes on PostgreSQL.

Every File API test runs there; the processing modules (transformations, documents,
OCR, screenshots, preview, video) do not (``ONE_NODE_ONLY``): a rendering is one request
computed by whichever node gets it, and what processing shares between nodes has tests
of its own, on several nodes (``test_transform_shared.py``: derivatives in a shared
store; ``test_video_nodes.py`` and ``tests/multinode``: jobs on any node). Running them
three nodes deep doubled their time for no request that could depend on the node. Nor do
the metadata tests of images whose size lies past the first MiB (``test_metadata_far_*``,
37 s of the lane's 256 on a quiet machine, three times that in CI): each is one request's
reading of one file's headers on every provider; the metadata of a file stored through
another node stays in the lane (``test_metadata.py``, ``test_metadata_sizes.py``).

It runs in its own pytest process with ``STOWAGE_TEST_THROUGH_NGINX=1``, which makes the
suite's ``harness`` start three nodes behind nginx for every test (tests/api/balanced.py).
It passes only if every test of the suite ran there and passed: none failed, none was
skipped, as many ran as the suite has, and every node served a share of the requests.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ONE_NODE_ONLY = (
    "tests/api/test_transform*.py",
    "tests/api/test_documents.py",
    "tests/api/test_doc_to_images.py",
    "tests/api/test_pdfcreate.py",
    "tests/api/test_preview.py",
    "tests/api/test_office*.py",
    "tests/api/test_ocr.py",
    "tests/api/test_svg.py",
    "tests/api/test_screenshot*.py",
    "tests/api/test_video*.py",
    "tests/api/test_metadata_far_*.py",
)
PYTEST = [
    *(sys.executable, "-m", "pytest", "tests/api", "-p", "no:cacheprovider"),
    *(f"--ignore-glob={pattern}" for pattern in ONE_NODE_ONLY),
]


def _collected() -> int:
    listing = subprocess.run(
        [*PYTEST, "--collect-only", "-q"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    found = re.search(r"^(\d+) tests? collected", listing.stdout, re.M)
    assert found, listing.stdout[-2000:]
    return int(found[1])


@pytest.mark.timeout(1600)  # its own pytest run is bounded at 1500 s
def test_the_api_suite_passes_through_nginx(tmp_path: Path) -> None:
    expected = _collected()
    report = tmp_path / "api-through-nginx.xml"
    served_log = tmp_path / "served.jsonl"
    env = {
        **os.environ,
        "STOWAGE_TEST_THROUGH_NGINX": "1",
        "STOWAGE_TEST_SERVED_LOG": str(served_log),
    }
    run = subprocess.run(
        [*PYTEST, "-q", f"--junitxml={report}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1500,
    )
    tail = (run.stdout + run.stderr)[-6000:]
    suite = ET.parse(report).getroot().find("testsuite")
    assert suite is not None, tail
    counts = {k: int(suite.get(k, "0")) for k in ("tests", "failures", "errors", "skipped")}
    print(f"tests/api through nginx: {counts}")
    assert run.returncode == 0, tail
    assert counts == {"tests": expected, "failures": 0, "errors": 0, "skipped": 0}, tail
    per_test = [json.loads(line) for line in served_log.read_text().splitlines()]
    per_node = [sum(col) for col in zip(*per_test, strict=True)]
    print(f"requests served per node: {per_node}")
    # A few tests need no server (the OpenAPI document's own checks): they start no nodes.
    assert len(per_test) > expected // 2, len(per_test)
    # least_conn spreads the load; each node must have taken a real share of it.
    assert min(per_node) >= sum(per_node) // 10, per_node
