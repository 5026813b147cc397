"""The report guard: a CPython AST race while reporting a failure must not end the run."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

RACING_CONFTEST = """
import _pytest.reports

pytest_plugins = {plugins}
_original = _pytest.reports.TestReport.from_item_and_call.__func__
_raised = []


def _racing(cls, item, call):
    if call.excinfo is not None and len(_raised) < {raises}:
        _raised.append(item.nodeid)
        raise SystemError("AST constructor recursion depth mismatch (before=129, after=184)")
    return _original(cls, item, call)


_pytest.reports.TestReport.from_item_and_call = classmethod(_racing)
"""

TESTS = """
def test_fails():
    assert 1 + 1 == 3


def test_after_the_failure_still_runs():
    assert True
"""


def run_pytest(tmp_path: Path, plugins: list[str], raises: int, strict: bool = False) -> str:
    """``strict`` runs as the suite does: warnings are errors, so the race reaches the
    guard as pluggy's PluggyTeardownRaisedWarning from Hypothesis's old-style wrapper."""
    conftest = RACING_CONFTEST.format(plugins=plugins, raises=raises)
    (tmp_path / "conftest.py").write_text(textwrap.dedent(conftest))
    (tmp_path / "test_sample.py").write_text(TESTS)
    ini = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"
    ini += "filterwarnings = error\n" if strict else ""
    (tmp_path / "pytest.ini").write_text(ini)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rf", str(tmp_path)],
        cwd=tmp_path,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.stdout + done.stderr


@pytest.mark.parametrize("strict", [False, True], ids=["plain", "warnings-are-errors"])
@pytest.mark.parametrize("raises", [1, 3])
def test_failure_is_reported_and_the_run_goes_on(tmp_path: Path, raises: int, strict: bool) -> None:
    output = run_pytest(tmp_path, ["tests.report_guard"], raises, strict)
    assert "INTERNALERROR" not in output
    assert "1 failed, 1 passed" in output
    assert "FAILED test_sample.py::test_fails" in output


@pytest.mark.parametrize("strict", [False, True], ids=["plain", "warnings-are-errors"])
def test_without_the_guard_the_race_ends_the_run(tmp_path: Path, strict: bool) -> None:
    output = run_pytest(tmp_path, [], 1, strict)
    assert "INTERNALERROR" in output


def test_the_race_is_found_behind_a_warning() -> None:
    from tests.report_guard import is_ast_race

    try:
        try:
            raise SystemError("AST constructor recursion depth mismatch (before=1, after=2)")
        except SystemError:
            raise UserWarning("A plugin raised an exception during teardown") from None
    except UserWarning as wrapped:
        # ``from None`` hides the cause from printing but keeps __context__.
        assert is_ast_race(wrapped)
    assert not is_ast_race(ValueError("other"))
