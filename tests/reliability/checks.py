"""Reliability tests: shared fixtures, checks, and the totals written for docs/reliability.md.

Every check that can find a lost file, a partial file, an internal address reached or a
5xx answer to a client error counts what it saw *before* asserting, so the totals in
``test-output/reliability-totals.json`` are what the run really observed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import ClientResponse

from stowage.core.integrity import fsck
from stowage.core.service import Stowage

OUTPUT = Path(__file__).resolve().parents[2] / "test-output" / "reliability-totals.json"


@dataclass
class Totals:
    inputs_tried: int = 0
    faults_injected: int = 0
    files_lost: int = 0
    partial_files_seen: int = 0
    internal_addresses_reached: int = 0
    client_errors_answered_5xx: int = 0
    tests_passed: int = 0
    tests_failed: int = 0


TOTALS = Totals()


async def expect_error(
    resp: ClientResponse, status: int | tuple[int, ...], code: str | None = None
) -> dict[str, Any]:
    """A client input's answer: the expected status, the one error shape, never a 5xx
    for a 4xx case."""
    TOTALS.inputs_tried += 1
    wanted = (status,) if isinstance(status, int) else status
    if resp.status >= 500 and all(s < 500 for s in wanted):
        TOTALS.client_errors_answered_5xx += 1
    body = await resp.json(content_type=None)
    assert resp.status in wanted, (resp.status, body)
    assert set(body) == {"error"} and {"code", "message"} <= set(body["error"]), body
    if code is not None:
        assert body["error"]["code"] == code, body
    return dict(body)


async def assert_clean(service: Stowage) -> None:
    """No temporary file, no pending row, no object without a handle, no handle without
    its object."""
    report = await fsck(service.registry, service.providers)
    pending = await service.registry.pending(older_than=time.time() + 3600)
    TOTALS.partial_files_seen += len(report.orphans) + len(report.temporary) + len(pending)
    TOTALS.files_lost += len(report.missing)
    assert report.clean and not pending, (report, pending)


def assert_intact(actual: bytes, expected: bytes) -> None:
    """The previous version, whole."""
    if actual != expected:
        TOTALS.files_lost += 1
    assert actual == expected, (len(actual), len(expected))


def fault(n: int = 1) -> None:
    TOTALS.faults_injected += n
