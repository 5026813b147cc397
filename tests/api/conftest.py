"""Fixtures of tests/api (defined in harness.py and sites.py)."""

from tests.api.harness import harness, settings
from tests.api.sites import image_site, origin_site, raw_origin

__all__ = ["harness", "image_site", "origin_site", "raw_origin", "settings"]
