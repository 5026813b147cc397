"""The reference cluster (``scripts/cluster up``, docs/deployment.md): two real nodes on
PostgreSQL and an S3 server, behind Varnish and nginx with TLS from a local CA, run from
the files in deploy/ as they are. The seed flows and the Python SDK's upload go through
the public TLS names, as a client would use them.

The cluster listens on fixed ports (the files say which); a test that finds them taken
fails with the script's own message rather than skipping.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import random
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from stowage.core.security import encode_policy, sign

#: Bringing the cluster up is bounded at 600 s, and counts toward the first test.
pytestmark = pytest.mark.timeout(900)
ROOT = Path(__file__).resolve().parents[2]
API = "https://api.stowage.test:8443"
CDN = "https://cdn.stowage.test:8443"
NODE_CONFIG = ROOT / "deploy" / "cluster" / "node.toml"


@dataclass
class Cluster:
    state: Path
    key: str
    secret: str
    context: ssl.SSLContext

    def request(
        self,
        method: str,
        url: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, dict[str, str], bytes]:
        req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
        try:
            with urllib.request.urlopen(req, context=self.context, timeout=60) as answer:
                return answer.status, dict(answer.headers), answer.read()
        except urllib.error.HTTPError as exc:
            return exc.code, dict(exc.headers), exc.read()

    def json(self, method: str, url: str, body: bytes | None = None, **headers: str) -> Any:
        status, _, data = self.request(method, url, body, headers)
        assert status == 200, (status, data[:500])
        return json.loads(data)


def _resolve_test_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """*.stowage.test is this machine, for this process only (as curl --resolve does)."""
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(host, str) and host.endswith(".stowage.test"):
            host = "127.0.0.1"
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


def _script(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "STOWAGE_CLUSTER_DIR": str(state)}
    return subprocess.run(
        ["bash", str(ROOT / "scripts" / "cluster"), *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    state = tmp_path_factory.mktemp("cluster")
    started = _script(state, "up")
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        made = subprocess.run(
            [str(ROOT / ".venv/bin/stowage"), "--config", str(NODE_CONFIG), "apps", "create",
             "--json"], capture_output=True, text=True, check=True,
        )  # fmt: skip
        app = json.loads(made.stdout)
        context = ssl.create_default_context(cafile=str(state / "tls" / "ca.pem"))
        yield Cluster(state, app["api_key"], app["secret"], context)
    finally:
        stopped = _script(state, "down")
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr


@pytest.fixture(autouse=True)
def _names(monkeypatch: pytest.MonkeyPatch) -> None:
    _resolve_test_names(monkeypatch)


def _origin_reads(cluster: Cluster, handle: str) -> int:
    """GETs of ``handle`` in the nodes' access logs, once the first has been written: a
    node writes its log line after the answer, so a check right after the read may come
    first (a clean-clone CI counted 0)."""

    def counted() -> int:
        logs = [(cluster.state / f"{node}.log").read_text() for node in ("node1", "node2")]
        return sum(log.count(f"GET /{handle} ") for log in logs)

    deadline = time.monotonic() + 10
    while not counted() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)  # a second line written with the first has landed too
    return counted()


def test_status_reports_every_part_running(cluster: Cluster) -> None:
    status = _script(cluster.state, "status")
    assert status.returncode == 0, status.stdout
    for part in ("postgres", "s3", "node1", "node2", "varnish", "nginx"):
        assert f"{part}" in status.stdout and "stopped" not in status.stdout


def test_store_read_overwrite_remove_through_tls_and_the_edge(cluster: Cluster) -> None:
    stored = cluster.json(
        "POST", f"{API}/api/store/S3?key={cluster.key}&filename=a.txt", b"version one",
        **{"Content-Type": "text/plain"},
    )  # fmt: skip
    handle = stored["handle"]
    assert stored["url"] == f"{CDN}/{handle}"
    for _ in range(2):  # the second read is Varnish's hit
        status, headers, body = cluster.request("GET", f"{CDN}/{handle}")
        assert (status, body) == (200, b"version one")
    assert "xkey" not in {k.lower() for k in headers}
    assert _origin_reads(cluster, handle) == 1, "the second read must be the edge cache's hit"
    meta = cluster.json(
        "GET", f"{API}/api/file/{handle}/metadata?key={cluster.key}&size=true&sha256=true"
    )
    assert meta["size"] == len(b"version one") and len(meta["sha256"]) == 64
    status, _, body = cluster.request(
        "GET", f"{API}/api/file/{handle}", headers={"Range": "bytes=8-"}
    )
    assert (status, body) == (206, b"one")

    auth = "Basic " + __import__("base64").b64encode(f"app:{cluster.secret}".encode()).decode()
    cluster.json(
        "POST", f"{API}/api/file/{handle}?key={cluster.key}", b"version two",
        Authorization=auth, **{"Content-Type": "text/plain"},
    )  # fmt: skip
    assert cluster.request("GET", f"{CDN}/{handle}")[2] == b"version two"  # purged at once

    policy = encode_policy({"expiry": int(time.time()) + 600, "call": ["remove"]})
    query = f"key={cluster.key}&policy={policy}&signature={sign(cluster.secret, policy)}"
    status, _, _ = cluster.request("DELETE", f"{API}/api/file/{handle}?{query}")
    assert status == 200
    assert cluster.request("GET", f"{CDN}/{handle}")[0] == 404


def test_both_nodes_serve_and_metrics_stay_closed(cluster: Cluster) -> None:
    for name in (API, CDN):
        assert cluster.request("GET", f"{name}/metrics")[0] == 404
    handles = [
        cluster.json("POST", f"{API}/api/store/S3?key={cluster.key}", bytes([n]) * 100)["handle"]
        for n in range(6)
    ]
    for node in ("node1", "node2"):
        log = (cluster.state / f"{node}.log").read_text()
        assert "POST /api/store/S3 200" in log, f"{node} served no store:\n{log[-2000:]}"
    for n, handle in enumerate(handles):
        assert cluster.request("GET", f"{CDN}/{handle}")[2] == bytes([n]) * 100


def test_an_unknown_name_on_the_tls_port_is_refused(cluster: Cluster) -> None:
    assert cluster.request("GET", "https://other.stowage.test:8443/")[0] == 421


def test_the_python_sdk_uploads_through_the_cluster(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import filestack
    import filestack.utils

    from tests.sdk.filestack_shim import point_filestack_at

    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(cluster.state / "tls" / "ca.pem"))
    monkeypatch.setattr(filestack.CFG, "API_URL", filestack.CFG.API_URL)
    monkeypatch.setattr(filestack.CFG, "CDN_URL", filestack.CFG.CDN_URL)
    monkeypatch.setattr(filestack.CFG, "MULTIPART_START_URL", filestack.CFG.MULTIPART_START_URL)
    monkeypatch.setattr(filestack.utils, "original_requests", filestack.utils.original_requests)
    point_filestack_at(API, CDN)
    data = os.urandom(11 * 1024 * 1024)  # more than one part
    source = tmp_path / "big.bin"
    source.write_bytes(data)
    link = filestack.Client(cluster.key).upload(filepath=str(source))
    assert link.url == f"{CDN}/{link.handle}"
    status, _, body = cluster.request("GET", link.url)
    assert status == 200 and body == data


def _raw_tls(cluster: Cluster, name: str, head: bytes) -> tuple[int, str, bytes]:
    """A request head sent as given (no client library limits it) to nginx's TLS port."""
    with (
        socket.create_connection(("127.0.0.1", 8443), timeout=30) as plain,
        cluster.context.wrap_socket(plain, server_hostname=name) as sock,
    ):
        with contextlib.suppress(OSError):  # refused early: the answer may still be there
            sock.sendall(head)
        answer = http.client.HTTPResponse(sock)  # type: ignore[arg-type]
        answer.begin()
        return answer.status, answer.getheader("Content-Type", ""), answer.read()


@pytest.mark.parametrize("host", ["cdn.stowage.test", "api.stowage.test"])
def test_oversized_and_malformed_requests_get_json_through_the_front(
    cluster: Cluster, host: str
) -> None:
    """nginx in front (and Varnish behind it on the CDN name): every refusal is the error
    shape, whichever layer made it (docs/deployment.md, "Oversized and malformed requests
    at the edge"); sizes around the origin's limits (8190 bytes, 128 headers) and nginx's
    (16 KiB a line, 128 KiB in all)."""
    rng = random.Random(9)
    path = "/NoSuchHandle" if host.startswith("cdn") else "/api/file/NoSuchHandle"

    def head(uri: int = 0, line: int = 0, count: int = 0, total: int = 0) -> bytes:
        target = path + ("?pad=" + "a" * uri if uri else "")
        lines = [f"GET {target} HTTP/1.1", f"Host: {host}", "Connection: close"]
        lines += ["X-Pad: " + "a" * line] if line else []
        lines += [f"X-H{i}: v" for i in range(count)]
        lines += [f"X-T{i}: " + "b" * 8000 for i in range(total // 8010)]
        return ("\r\n".join(lines) + "\r\n\r\n").encode()

    cases: list[tuple[str, bytes, int, str]] = [("plain", head(), 404, "HANDLE_NOT_FOUND")]
    for size in (8300, 8400, 16380, 16390, 20000, rng.randint(8300, 40000)):
        cases.append((f"line {size}", head(line=size), 431, "HEADERS_TOO_LARGE"))
        cases.append((f"uri {size}", head(uri=size), 414, "URI_TOO_LONG"))
    for count in (130, 200, rng.randint(131, 1000)):
        cases.append((f"{count} headers", head(count=count), 431, "HEADERS_TOO_LARGE"))
    for total in (140_000, 200_000, 300_000):
        cases.append((f"{total} bytes", head(total=total), 431, "HEADERS_TOO_LARGE"))
    for garbage in (b"GARBAGE\r\n\r\n", b"GET / HTTP/9.9\r\n\r\n"):
        cases.append((repr(garbage), garbage, 400, "MALFORMED_REQUEST"))
    for name, request, status, code in cases:
        got = _raw_tls(cluster, host, request)
        assert got[0] == status and got[1].startswith("application/json"), (name, got)
        assert json.loads(got[2])["error"]["code"] == code, (name, got)
