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

The error can reach this wrapper in disguise: an old-style hookwrapper inside
it (Hypothesis's) re-raises it, pluggy then warns ``PluggyTeardownRaisedWarning``
and the suite's ``filterwarnings = error`` turns that warning into the exception.
So the whole chain is searched for the race's message.
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
    except Exception as error:
        if not is_ast_race(error):
            raise
        return _report_again(item, call)
    return report


def is_ast_race(error: BaseException | None) -> bool:
    """Whether ``error``, or any error it was raised from or during, is the race."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if _AST_RACE in str(error):
            return True
        error = error.__cause__ or error.__context__
    return False


def _report_again(item: pytest.Item, call: pytest.CallInfo[None]) -> pytest.TestReport:
    for _ in range(_ATTEMPTS - 1):
        try:
            return pytest.TestReport.from_item_and_call(item, call)
        except Exception as error:
            if not is_ast_race(error):
                raise
    option = item.config.option
    style = option.tbstyle
    option.tbstyle = "native"
    try:
        return pytest.TestReport.from_item_and_call(item, call)
    finally:
        option.tbstyle = style
