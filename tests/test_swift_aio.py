"""The Swift test server recovers from a stalled object server within seconds.

With Swift's default ``error_suppression_interval`` (60 s), the proxy refused every request
for a minute after its only object server had been slow; a CI run's API race on Rackspace
lost 4,005 of 4,447 reads to it (``tests/servers/swift_aio.py`` tells why one second)."""

from __future__ import annotations

import os
import signal
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.servers.swift_aio import SwiftAIO


@pytest.fixture
def own_swift() -> Iterator[SwiftAIO]:
    server = SwiftAIO.start()
    yield server
    server.stop()


def _status(server: SwiftAIO, token: str, method: str, path: str, data: bytes | None) -> int:
    request = urllib.request.Request(
        server.storage_url + path, data=data, method=method, headers={"X-Auth-Token": token}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def test_a_stalled_object_server_costs_seconds_of_503s_not_a_minute(own_swift: SwiftAIO) -> None:
    token = own_swift.get_token()
    assert _status(own_swift, token, "PUT", "/stall", None) == 201
    assert _status(own_swift, token, "PUT", "/stall/o", b"x") == 201
    (objects,) = [p for p in own_swift.procs if "swift-object-server" in str(p.args[0])]
    os.kill(objects.pid, signal.SIGSTOP)
    try:  # more than the proxy's 10 errors, each a node timeout
        with ThreadPoolExecutor(12) as pool:
            stalled = set(
                pool.map(lambda _: _status(own_swift, token, "GET", "/stall/o", None), range(12))
            )
    finally:
        os.kill(objects.pid, signal.SIGCONT)
    assert stalled == {503}
    resumed = time.monotonic()
    while _status(own_swift, token, "GET", "/stall/o", None) != 200:
        assert time.monotonic() - resumed < 10, "the proxy still error-limits its object server"
        time.sleep(0.1)
