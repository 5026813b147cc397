"""/metrics is closed by default (issue 24): only the clients in ``metrics_allow`` (default:
the node itself) read it on the API port, and the shipped nginx config never forwards it,
since through a proxy on the node every client would come from 127.0.0.1."""

from __future__ import annotations

import ipaddress
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stowage.http.observe import metrics_allowed
from tests.multinode.cluster import Nginx, nginx_folder
from tests.servers.stowage_serve import StowageServe

SAMPLE = "stowage_http_requests_total"


def fetch(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read().decode()


@pytest.fixture(scope="module")
def behind_nginx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[StowageServe, Nginx]]:
    node = StowageServe(tmp_path_factory.mktemp("metrics") / "data")
    lb = Nginx(nginx_folder())
    node.start()
    try:
        lb.start([node, node, node])  # deploy/nginx/stowage.conf as shipped, one node thrice
        yield node, lb
    finally:
        lb.stop()
        node.stop_quietly()


@pytest.mark.parametrize("path", ["/metrics", "/metrics?x=1", "//metrics", "/%6Detrics"])
def test_the_shipped_nginx_config_does_not_forward_metrics(
    behind_nginx: tuple[StowageServe, Nginx], path: str
) -> None:
    node, lb = behind_nginx
    status, body = fetch(lb.api + path)
    assert status == 404 and SAMPLE not in body, body
    assert json.loads(body)["error"]["code"] == "NOT_FOUND"
    status, body = fetch(node.api + "/metrics")  # the node's own port, from the node
    assert status == 200 and SAMPLE in body


@pytest.mark.parametrize(
    ("allow", "served"),
    [("127.0.0.1, ::1", True), ("127.0.0.0/8", True), ("10.0.0.0/8", False), ("", False)],
)
def test_metrics_allow_decides_who_reads_them(tmp_path: Path, allow: str, served: bool) -> None:
    node = StowageServe(tmp_path / "data", env={"STOWAGE_METRICS_ALLOW": allow})
    node.start()
    try:
        status, body = fetch(node.api + "/metrics")
    finally:
        node.stop_quietly()
    assert (status, SAMPLE in body) == ((200, True) if served else (404, False)), body


@given(
    address=st.ip_addresses(v=4),
    network=st.ip_addresses(v=4),
    prefix=st.integers(min_value=0, max_value=32),
)
def test_an_address_is_allowed_exactly_when_a_listed_network_holds_it(
    address: ipaddress.IPv4Address, network: ipaddress.IPv4Address, prefix: int
) -> None:
    listed = ipaddress.ip_network(f"{network}/{prefix}", strict=False)
    assert metrics_allowed(f"::1, {listed}", str(address)) == (address in listed)
    assert metrics_allowed("", str(address)) is False
    assert metrics_allowed(str(listed), None) is False
