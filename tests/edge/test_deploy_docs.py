"""The deployment guide shows the very Varnish files the edge tests run."""

from __future__ import annotations

import pytest

from tests.servers.varnish import ROOT


@pytest.mark.parametrize(
    ("path", "lang"), [("varnish/stowage.vcl", "vcl"), ("varnish/override.conf", "ini")]
)
def test_deployment_guide_shows_the_tested_file(path: str, lang: str) -> None:
    guide = (ROOT / "docs" / "deployment.md").read_text()
    assert f"```{lang}\n{(ROOT / 'deploy' / path).read_text()}```" in guide, path
