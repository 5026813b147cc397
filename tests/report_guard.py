"""Keep one failing test's report from ending the whole session.

CPython 3.11 before 3.11.8 keeps the AST builder's depth counter in state
shared by every thread (gh-106905). When a server thread in this process
formats a traceback (3.11 parses source lines for the caret marks) while
pytest parses the failing test's source for its report, the counter is
overwritten and ``ast.parse`` raises ``SystemError: AST constructor
recursion depth mismatch``. pytest then stops with INTERNALERROR and prints
no summary, so the failure that caused it is never named. The counter is
reset on every parse, so building the report again succeeds; the last
attempt uses the plain native traceback style.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

_AST_RACE = "AST constructor recursion depth mismatch"
_ATTEMPTS = 3


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, pytest.TestReport]:
    try:
        report: pytest.TestReport = yield
    except SystemError as error:
        if _AST_RACE not in str(error):
            raise
        return _report_again(item, call)
    return report


def _report_again(item: pytest.Item, call: pytest.CallInfo[None]) -> pytest.TestReport:
    for _ in range(_ATTEMPTS - 1):
        try:
            return pytest.TestReport.from_item_and_call(item, call)
        except SystemError as error:
            if _AST_RACE not in str(error):
                raise
    option = item.config.option
    style = option.tbstyle
    option.tbstyle = "native"
    try:
        return pytest.TestReport.from_item_and_call(item, call)
    finally:
        option.tbstyle = style
