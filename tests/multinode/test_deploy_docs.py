"""The deployment guide shows the very nginx file the multi-node tests run."""

from __future__ import annotations

from tests.multinode.conftest import NGINX_CONF, ROOT


def test_deployment_guide_shows_the_tested_nginx_config() -> None:
    guide = (ROOT / "docs" / "deployment.md").read_text()
    assert f"```nginx\n{NGINX_CONF.read_text()}```" in guide
