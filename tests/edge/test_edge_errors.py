"""A request over a protocol limit gets Stowage's JSON error through the edge too (probe
edge.md F4): a long header line, many headers, a long request line, sent to the origin
itself, to Varnish in front of it, to nginx (deploy/nginx/stowage.conf) in front of it, and
to Varnish in front of nginx, all running the shipped files (varnishd with the -p options
of deploy/varnish/override.conf).

The edge's limits are above the origin's (a line of 8190 bytes, 128 headers), so up to
them the origin answers (414, 431 with its JSON); nginx refuses beyond its own (16 KiB a
line, 128 KiB in all) with the same JSON. Varnish's own refusal, beyond its limits (32 KiB
a header, 256 KiB in all, 1024 headers), is bare and cannot run VCL: that is the documented
limit (docs/deployment.md), checked here as documented."""

from __future__ import annotations

import json
import random
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.edge.helpers import raw_get
from tests.edge.tier import Edge
from tests.multinode.cluster import NGINX_CONF, Nginx, nginx_folder, render
from tests.servers.varnish import Varnish

ORIGIN_LINE = 8190
NGINX_LINE, NGINX_TOTAL = 16 * 1024, 8 * 16 * 1024
VARNISH_LINE, VARNISH_TOTAL, VARNISH_HEADERS = 32 * 1024, 256 * 1024, 1024
#: Headers the proxies add on the way to the origin (X-Forwarded-*, X-Varnish, ...): near
#: the origin's 128, a request that the origin alone takes may be 431 through the edge.
PROXY_HEADERS = 8
NO_FILE = "NoSuchHandle"


@dataclass(frozen=True)
class Case:
    name: str
    line: int = 0  # one header line's length (X-Pad: aaa...)
    count: int = 0  # this many small headers
    uri: int = 0  # the request line's length
    total: int = 0  # headers of 8000 bytes up to about this many bytes

    def head(self, path: str) -> bytes:
        if self.uri:
            path += "?pad=" + "a" * max(0, self.uri - len(path) - len("GET  HTTP/1.1") - 5)
        lines = [f"GET {path} HTTP/1.1", "Host: 127.0.0.1"]
        if self.line:
            lines.append("X-Pad: " + "a" * (self.line - len("X-Pad: ")))
        lines += [f"X-H{i}: v" for i in range(self.count)]
        lines += [f"X-T{i}: " + "b" * 8000 for i in range(self.total // 8010)]
        return ("\r\n".join(lines) + "\r\n\r\n").encode()

    @property
    def near_origin_count(self) -> bool:
        return 128 - PROXY_HEADERS < self.count + 1 <= 128  # + Host

    def beyond_varnish(self) -> bool | None:
        """True beyond Varnish's own limits, None within 1 KiB (or 8 headers) of them."""
        size = max(self.line, self.uri, self.total)
        limit = VARNISH_TOTAL if self.total else VARNISH_LINE
        if abs(size - limit) <= 1024 or abs(self.count - VARNISH_HEADERS) <= 8:
            return None
        return size > limit or self.count > VARNISH_HEADERS


def _cases() -> list[Case]:
    rng = random.Random(4)
    cases = [Case("plain")]
    for limit in (ORIGIN_LINE, NGINX_LINE, VARNISH_LINE):
        for delta in (-2, -1, 0, 1, 2, rng.randint(3, 500)):
            cases.append(Case(f"line-{limit}{delta:+d}", line=limit + delta))
            cases.append(Case(f"uri-{limit}{delta:+d}", uri=limit + delta))
    for count in (63, 64, 65, 100, 119, 124, 125, 126, 127, 128, 129, 200, 1015, 1030, 1100):
        cases.append(Case(f"count-{count}", count=count))
    for total in (60_000, NGINX_TOTAL - 9000, NGINX_TOTAL + 9000, 200_000, 300_000):
        cases.append(Case(f"total-{total}", total=total))
    cases += [Case(f"line-random-{n}", line=n) for n in rng.sample(range(100, 40_000), 6)]
    return cases


CASES = _cases()


@pytest.fixture(scope="module")
def ports(edge: Edge) -> Iterator[dict[str, tuple[int, int]]]:
    """Each way in: its port, and that of the origin behind it."""
    nginx = Nginx(nginx_folder())
    slots = {8080: nginx.api_port, 8081: nginx.cdn_port}
    for slot in (1, 2, 3):
        slots[8080 + 100 * slot], slots[8081 + 100 * slot] = edge.node.port, edge.node.cdn_port
    balanced = Varnish(backend_port=nginx.cdn_port)
    try:
        nginx.run(render(NGINX_CONF.read_text(), slots))
        balanced.start()
        yield {
            "varnish": (edge.cache.port, edge.node.cdn_port),
            "nginx": (nginx.cdn_port, edge.node.cdn_port),
            "nginx-api": (nginx.api_port, edge.node.port),
            "varnish+nginx": (balanced.port, edge.node.cdn_port),
        }
    finally:
        balanced.stop()
        nginx.stop()
        shutil.rmtree(nginx.folder, ignore_errors=True)


def _answer(port: int, head: bytes) -> tuple[int, str | None, str] | None:
    """(status, JSON error code or None, Content-Type); None: closed without an answer."""
    got = raw_get(port, head)
    if got is None:
        return None
    status, headers, body = got
    code = None
    if status >= 400 and body:
        code = json.loads(body)["error"]["code"]
    return status, code, headers.get("content-type", "")


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_edge_answers_as_the_origin_or_with_the_same_json(
    ports: dict[str, tuple[int, int]], case: Case
) -> None:
    """Every request names a file no node has (a new name each time): nothing is cached,
    so whatever the edge does not refuse itself reaches the origin, whose 404 says so."""
    for name, (port, origin_port) in ports.items():
        head = case.head(f"/{NO_FILE}{uuid.uuid4().hex}")
        origin = _answer(origin_port, head)
        assert origin is not None
        assert origin[0] in (404, 414, 431) and origin[2].startswith("application/json"), origin
        answer = _answer(port, head)
        if name.startswith("varnish") and case.beyond_varnish() is not False:
            # Varnish's own refusal (no VCL runs): bare 400 or a closed connection.
            if answer is None or (answer[0] == 400 and answer[1] is None):
                continue
            assert case.beyond_varnish() is None, (name, answer)
        assert answer is not None, name
        if case.near_origin_count and answer[0] == 431:
            pass  # the proxies' own headers took it over the origin's 128
        elif "nginx" in name and case.total > NGINX_TOTAL - 2048:
            # More header bytes in all than nginx buffers, each line within the origin's
            # limit: nginx's own 431, the origin's code for headers too large.
            assert answer[:2] == (431, "HEADERS_TOO_LARGE"), (name, answer)
        else:
            assert answer[:2] == origin[:2], (name, answer, origin)
        if answer[0] >= 400:
            assert answer[2].startswith("application/json"), (name, answer)
            assert answer[1] in ("HEADERS_TOO_LARGE", "URI_TOO_LONG", origin[1]), (name, answer)


@pytest.mark.parametrize("port_name", ["nginx", "nginx-api"])
@pytest.mark.parametrize(
    "head",
    [
        b"GARBAGE\r\n\r\n",
        b"GET /x HTTP/1.1\r\nHost: a\r\nX\x01A: b\r\n\r\n",
        b"GET / HTTP/9.9\r\n\r\n",
    ],
    ids=["no-request-line", "control-byte-in-a-name", "bad-version"],
)
def test_malformed_requests_get_json_from_nginx(
    ports: dict[str, tuple[int, int]], port_name: str, head: bytes
) -> None:
    answer = _answer(ports[port_name][0], head)
    assert answer is not None
    status, code, content_type = answer
    assert 400 <= status < 500 and content_type.startswith("application/json"), answer
    assert code in ("MALFORMED_REQUEST", "BAD_REQUEST"), answer


@pytest.mark.parametrize(
    "head",
    [b"GARBAGE\r\n\r\n", b"GET /x HTTP/1.1\r\nHost: a\r\nX-A: a\x01b\r\n\r\n"],
    ids=["no-request-line", "control-byte-in-a-value"],
)
def test_varnish_refuses_malformed_requests_bare_as_documented(
    ports: dict[str, tuple[int, int]], head: bytes
) -> None:
    """No VCL runs for them (docs/deployment.md, "Oversized and malformed requests")."""
    assert _answer(ports["varnish"][0], head) in (None, (400, None, ""))
