"""The reliability totals (checks.TOTALS) of a whole run, however many processes ran it.

A plugin of the root conftest, so that the process that reports the run loads it: with
pytest-xdist (``scripts/test`` runs several processes) that process collects nothing
under tests/reliability. Each worker hands its counts of what the checks saw to it when
it ends (``workeroutput``); tests passed and failed are counted from the reports, which
every worker sends there too.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, fields
from typing import Any

import pytest

from tests.reliability.checks import OUTPUT, TOTALS

_KEY = "reliability_totals"
_SEEN = [f.name for f in fields(TOTALS) if f.name not in ("tests_passed", "tests_failed")]


def _worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if "tests/reliability/" not in report.nodeid.replace("\\", "/"):
        return
    if report.when == "call" or (report.when == "setup" and report.failed):
        if report.passed:
            TOTALS.tests_passed += 1
        elif report.failed:
            TOTALS.tests_failed += 1


def pytest_testnodedown(node: Any, error: object) -> None:
    """pytest-xdist's hook, in the process that reports: a worker has ended."""
    for name, value in getattr(node, "workeroutput", {}).get(_KEY, {}).items():
        if name in _SEEN:
            setattr(TOTALS, name, getattr(TOTALS, name) + value)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    if _worker(session.config):
        session.config.workeroutput[_KEY] = {name: getattr(TOTALS, name) for name in _SEEN}  # type: ignore[attr-defined]
        return
    if TOTALS.tests_passed + TOTALS.tests_failed == 0:
        return
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    data = {**asdict(TOTALS), "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    OUTPUT.write_text(json.dumps(data, indent=2) + "\n")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The totals line of docs/reliability.md, in the CI log of every run."""
    if _worker(terminalreporter.config) or TOTALS.tests_passed + TOTALS.tests_failed == 0:
        return
    figures = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in asdict(TOTALS).items())
    terminalreporter.write_sep("-", "reliability totals")
    terminalreporter.write_line(figures)
