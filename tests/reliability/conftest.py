"""Fixtures of tests/reliability; the helpers they use are in checks.py."""

from __future__ import annotations

import pytest

from tests.api.harness import harness, settings
from tests.reliability.checks import TOTALS, Totals

__all__ = ["harness", "settings"]  # the API harness's fixtures, used here too


@pytest.fixture
def totals() -> Totals:
    return TOTALS
