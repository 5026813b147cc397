"""A bounded schemathesis run: inputs generated from the OpenAPI document a real
``stowage serve`` publishes (/api/openapi.json), sent to that server. No client input may
get a 5xx, and every answer must match the document (a status it documents for that
operation, content type, body schema).
Bounded by ``EXAMPLES`` per operation (a few hundred requests in all)."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
import schemathesis.specs.openapi.schemas
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis.checks import response_schema_conformance, status_code_conformance
from schemathesis.core.failures import FailureGroup

from tests.reliability.checks import TOTALS
from tests.reliability.serve import Serve

EXAMPLES = 20
# schemathesis loads its OpenAPI modules on first use, and pytest rewrites them with
# ast.parse then. On CPython 3.11.7 that parse can fail with "AST constructor recursion
# depth mismatch" late in a long run (a CPython bug, fixed in later 3.11 releases), so they
# are loaded at collection, before any test runs.


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Serve, str]]:
    server = Serve(Path(tmp_path_factory.mktemp("fuzz")) / "data")
    server.env["STOWAGE_FETCH_ALLOW_PRIVATE"] = "false"  # the guard as deployed
    key, _ = server.create_app()
    server.start()
    try:
        yield server, key
    finally:
        server.stop_quietly()


def test_no_client_input_gets_a_5xx(live: tuple[Serve, str]) -> None:
    """Every operation of the document, EXAMPLES generated cases each."""
    server, key = live
    with urllib.request.urlopen(f"{server.api}/api/openapi.json", timeout=10) as resp:
        document = json.load(resp)
    document["servers"] = [{"url": server.api}]
    failures: list[str] = []
    operations = [
        result.ok() for result in schemathesis.openapi.from_dict(document).get_all_operations()
    ]
    assert len(operations) >= 8
    on_cdn = {path for path, item in document["paths"].items() if "servers" in item}
    for operation in operations:
        origin = server.cdn if operation.path in on_cdn else server.api
        _fuzz(operation, origin, key, failures)
    assert failures == []


def _about_the_source(response: Any) -> bool:
    """502/504 UPSTREAM_*: a generated url could not be fetched (no network here). That is
    the documented answer about a third party (checklist 34), not a server fault."""
    try:
        code = response.json()["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return False
    return response.status_code in (502, 504) and code in ("UPSTREAM_ERROR", "UPSTREAM_TIMEOUT")


def _fuzz(operation: Any, origin: str, key: str, failures: list[str]) -> None:
    """``origin``: the API's or, for the operations the document places there, the CDN's."""

    @given(case=operation.as_strategy())
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    def run(case: Any) -> None:
        if case.query is not None and "key" in case.query:
            case.query["key"] = key  # a real app: inputs reach past the key check
        response = case.call(base_url=origin, timeout=30)
        TOTALS.inputs_tried += 1
        try:
            case.validate_response(
                response, checks=[response_schema_conformance, status_code_conformance]
            )
        except FailureGroup as exc:
            failures.append(f"{case.method} {case.formatted_path}: schema: {str(exc)[:300]}")
        if response.status_code >= 500 and not _about_the_source(response):
            TOTALS.client_errors_answered_5xx += 1
            failures.append(
                f"{case.method} {case.formatted_path}: {response.status_code} {response.text[:300]}"
            )

    run()
