"""The reference cluster's order (docs/deployment.md): nginx (deploy/cluster/nginx.conf,
TLS) in front of Varnish (the shipped VCL and -p options) in front of a node. nginx's
limits are below Varnish's, so that a request Varnish would refuse bare, before any VCL
runs, is refused by nginx first with its JSON: a line of 16 KiB (Varnish: 32 KiB), 128 KiB
in all (256 KiB), and ``max_headers`` header lines (Varnish: ``http_max_hdr``, less the
headers nginx adds). A control byte in a header's value is the one refusal nginx lets
through; Varnish's answer to it stays bare (docs/deployment.md), checked as documented.

Generated requests (seed 5052): header counts around nginx's limit and beyond Varnish's,
of names and values of several shapes, for files no node has (each a new name)."""

from __future__ import annotations

import json
import random
import re
import shutil
import uuid
from collections.abc import Iterator

import pytest

from tests.edge.test_nginx_own_answers import FILES, Block, ask, certificate, render
from tests.edge.tier import Edge
from tests.multinode.cluster import Nginx, nginx_folder
from tests.servers.varnish import OVERRIDE

CLUSTER = FILES["cluster"]
#: Header lines nginx adds on its way to Varnish (X-Forwarded-For, X-Forwarded-Proto);
#: Varnish keeps 5 of its http_max_hdr slots for the request line's fields.
FRONT_ADDS, VARNISH_RESERVED = 2, 5


def _nginx_max() -> int:
    """Debian's nginx's ``max_headers`` (its default since the backport); a file that
    sets it says otherwise."""
    found = re.search(r"^max_headers (\d+);", CLUSTER.read_text(), re.M)
    return int(found[1]) if found else 1000


def _varnish_max() -> int:
    found = re.search(r"http_max_hdr=(\d+)", OVERRIDE.read_text())
    assert found
    return int(found[1])


def test_nginx_refuses_before_varnish_would() -> None:
    assert _nginx_max() + FRONT_ADDS <= _varnish_max() - VARNISH_RESERVED
    text = CLUSTER.read_text()
    assert "large_client_header_buffers 8 16k;" in text  # 16 KiB a line, 128 KiB in all
    assert "http_req_hdr_len=32k" in OVERRIDE.read_text()
    assert "http_req_size=256k" in OVERRIDE.read_text()


@pytest.fixture(scope="module")
def front(edge: Edge) -> Iterator[Block]:
    folder = nginx_folder()
    certificate(folder)
    conf, blocks = render(CLUSTER.read_text(), folder, {6081: edge.cache.port})
    (cdn,) = [b for b in blocks if "cdn.stowage.test" in b.names]
    nginx = Nginx(folder, api_port=blocks[0].port, cdn_port=cdn.port)
    try:
        nginx.run(conf)
        yield cdn
    finally:
        nginx.stop()
        shutil.rmtree(folder, ignore_errors=True)


SHAPES = ["a{i}:", "a:", "X-Pad-{i}: v", "x-{i}:  {r}  "]


def _head(rng: random.Random, count: int, extra: str = "", shapes: list[str] = SHAPES) -> bytes:
    """A GET with ``count`` header lines, Host included, of a name no file has."""
    shape = rng.choice(shapes)
    lines = [f"GET /NoSuchHandle{uuid.uuid4().hex} HTTP/1.1", "Host: cdn.stowage.test"]
    lines += [shape.format(i=i, r=rng.randint(0, 9**6)) for i in range(count - 1)]
    return ("\r\n".join([*lines, *([extra] if extra else [])]) + "\r\n\r\n").encode("latin-1")


def test_more_header_lines_than_varnish_takes_get_json(front: Block) -> None:
    rng = random.Random(5052)
    most = _nginx_max()
    counts = [most - 2, most - 1, most, most + 1, most + 2, _varnish_max() + 1]
    counts += rng.sample(range(129, most - 2), 3) + rng.sample(range(most + 3, 20_000), 5)
    for count in counts:
        got = ask(front, _head(rng, count))
        assert got is not None, count
        assert got.status == 431 and got.kind.startswith("application/json"), (count, got)
        assert json.loads(got.body)["error"]["code"] == "HEADERS_TOO_LARGE", count
        # Up to nginx's limit the origin answered, through Varnish (its Age); beyond, nginx.
        assert ("age" in got.headers) == (count <= most), (count, got.headers)


def test_many_accept_lines_are_one_list_at_the_edge(front: Block) -> None:
    """Accept lines are joined into one by the VCL (``std.collect``, RFC 9110 5.3), as
    the origin reads them: past the origin's 128 header lines but within nginx's and
    Varnish's, they are one Accept there, answered as such (a 404 for a name no file has),
    not the 431 that as many other lines get."""
    rng = random.Random(5168)
    most = _nginx_max()
    for count in [129, 200, *rng.sample(range(130, most - 2), 3)]:
        got = ask(front, _head(rng, count, shapes=["Accept: */*", "Accept: image/webp"]))
        assert got is not None, count
        assert got.status == 404 and got.kind.startswith("application/json"), (count, got)
        assert json.loads(got.body)["error"]["code"] == "HANDLE_NOT_FOUND", count


def test_a_control_byte_in_a_value_is_varnish_s_bare_refusal(front: Block) -> None:
    """The documented limit: nginx passes a control byte in a header's value (it refuses
    only NUL, CR and LF there), and Varnish refuses it before any VCL runs."""
    rng = random.Random(5057)
    for byte in rng.sample([*range(1, 9), *range(11, 13), *range(14, 32), 0x7F], 5):
        got = ask(front, _head(rng, 3, f"X-C: a{chr(byte)}b"))
        assert got is None or (got.status == 400 and got.body == b""), (byte, got)
