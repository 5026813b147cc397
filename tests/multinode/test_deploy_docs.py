"""The deployment guide shows the very files the tests run (deploy/)."""

from __future__ import annotations

import pytest

from tests.multinode.cluster import ROOT

DEPLOY = ROOT / "deploy"


@pytest.mark.parametrize(
    ("path", "lang"),
    [
        ("nginx/stowage.conf", "nginx"),
        ("single/nginx.conf", "nginx"),
        ("single/stowage.service", "ini"),
        ("single/stowage.toml", "toml"),
        ("cluster/node.toml", "toml"),
        ("cluster/nginx.conf", "nginx"),
        ("cname/nginx.conf", "nginx"),
        ("cname/stowage.toml", "toml"),
    ],
)
def test_deployment_guide_shows_the_tested_file(path: str, lang: str) -> None:
    guide = (ROOT / "docs" / "deployment.md").read_text()
    assert f"```{lang}\n{(DEPLOY / path).read_text()}```" in guide, path
