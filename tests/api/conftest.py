"""Fixtures of tests/api (defined in harness.py)."""

from tests.api.harness import harness, settings

__all__ = ["harness", "settings"]
