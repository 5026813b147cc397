"""Fixtures of tests/reliability; the helpers they use are in checks.py."""

from __future__ import annotations

import json
import time
from dataclasses import asdict

import pytest

from tests.api.harness import harness, settings
from tests.reliability.checks import (
    OUTPUT,
    TOTALS,
    Totals,
)

__all__ = ["harness", "settings"]  # the API harness's fixtures, used here too


@pytest.fixture
def totals() -> Totals:
    return TOTALS


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if "tests/reliability/" not in report.nodeid.replace("\\", "/"):
        return
    if report.when == "call" or (report.when == "setup" and report.failed):
        if report.passed:
            TOTALS.tests_passed += 1
        elif report.failed:
            TOTALS.tests_failed += 1


def pytest_sessionfinish(session: pytest.Session) -> None:
    if TOTALS.tests_passed + TOTALS.tests_failed == 0:
        return
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    data = {**asdict(TOTALS), "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    OUTPUT.write_text(json.dumps(data, indent=2) + "\n")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The totals line of docs/reliability.md, in the CI log of every run."""
    if TOTALS.tests_passed + TOTALS.tests_failed == 0:
        return
    figures = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in asdict(TOTALS).items())
    terminalreporter.write_sep("-", "reliability totals")
    terminalreporter.write_line(figures)
