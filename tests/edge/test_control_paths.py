"""A control character in a request's path answers the same status and code at the
origin and through every way in (nginx, Varnish, Varnish in front of nginx), all running
the shipped files (generated paths over the CDN, ``/api/file`` and store routes, seed
5304). Raw in the request line (not valid HTTP/1.1) it is ``400 MALFORMED_REQUEST``;
escaped (``%01``, ``%C2%85``), a path that decodes to it, ``400 INVALID_REQUEST_PATH``.
nginx refused an escaped NUL itself, ``400 MALFORMED_REQUEST``, where the origin answered
``INVALID_REQUEST_PATH``. A raw line feed ends the request line where it stands: to nginx
the request is HTTP/0.9, whose answer has no status line; its body is still the JSON of
``MALFORMED_REQUEST``. Varnish's own refusal of a raw control byte (no VCL runs for it) is
a bare 400, as documented for every request its parser refuses."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from urllib.parse import quote

import pytest

from tests.edge.helpers import raw_get
from tests.edge.test_edge_errors import ports
from tests.edge.tier import Edge

__all__ = ["ports"]  # the fixture: each way in and its origin

#: What a path may decode to that names nothing: C0, DEL, C1 (as UTF-8 escapes).
CONTROLS = [chr(c) for c in [*range(32), 0x7F, *range(0x80, 0xA0)]]
#: A raw byte the request line may not hold; a line feed apart (it ends the line).
RAW = [bytes([c]) for c in [*range(32), 0x7F] if c not in (0x0A, 0x0D)]


def _route(rnd: random.Random, edge: Edge) -> tuple[str, str]:
    """A method and a path before the control character."""
    return rnd.choice(
        [
            ("GET", f"/{edge.key}/resize=w:20/http://example.test/a"),
            ("GET", "/api/file/AbCdEfGhIjKlMnOpQrSt"),
            ("GET", f"/{edge.key}/store/http://example.test/b"),
            ("GET", "/AbCdEfGhIjKlMnOpQrS"),
            ("POST", "/api/store/S3"),
        ]
    )


def _paths(rnd: random.Random, edge: Edge) -> Iterator[tuple[str, bytes, str]]:
    """(what it is, the request head, the code expected: MALFORMED_REQUEST for a raw byte,
    INVALID_REQUEST_PATH for an escaped one)."""
    for _ in range(40):
        method, before = _route(rnd, edge)
        after = rnd.choice(["", "b", "b.png", "/c", "?x=1"])
        if rnd.random() < 0.5:
            raw = rnd.choice(RAW)
            path, code, what = before.encode() + raw + after.encode(), "MALFORMED_REQUEST", raw
        else:
            control = "\x00" if rnd.random() < 0.25 else rnd.choice(CONTROLS)  # nginx's own
            escaped = quote(control, safe="")
            if rnd.random() < 0.3:
                escaped = escaped.lower()
            path, code, what = (before + escaped + after).encode(), "INVALID_REQUEST_PATH", escaped
        head = method.encode() + b" " + path + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        head += b"Content-Length: 0\r\n" if method == "POST" else b""
        yield repr(what), head + b"\r\n", code


def _answer(port: int, head: bytes) -> tuple[int, str | None]:
    got = raw_get(port, head)
    assert got is not None, head
    status, headers, body = got
    if not headers.get("content-type", "").startswith("application/json"):
        return status, None
    return status, json.loads(body)["error"]["code"]


def test_a_control_character_in_a_path_is_one_code_through_every_way_in(
    ports: dict[str, tuple[int, int]], edge: Edge
) -> None:
    rnd = random.Random(5304)
    wrong = []
    for what, head, code in _paths(rnd, edge):
        origin = _answer(ports["nginx"][1], head)
        assert origin == (400, code), (what, head, origin)
        for name, (port, _) in ports.items():
            answer = _answer(port, head)
            bare = name.startswith("varnish") and code == "MALFORMED_REQUEST"
            if answer != origin and not (bare and answer == (400, None)):
                wrong.append((name, what, head[:80], answer, origin))
    assert wrong == [], "\n".join(map(str, wrong))


@pytest.mark.parametrize("way", ["nginx", "nginx-api"])
def test_a_raw_line_feed_in_a_path_is_malformed_json_through_nginx(
    ports: dict[str, tuple[int, int]], edge: Edge, way: str
) -> None:
    """HTTP/0.9 to nginx (``GET /path`` and a line feed): no status line, but the body is
    the origin's JSON refusal (no Host reaches it)."""
    import socket

    head = f"GET /{edge.key}/resize=w:20/http://example.test/a\nb HTTP/1.1\r\n".encode()
    assert _answer(ports[way][1], head + b"Host: x\r\n\r\n") == (400, "MALFORMED_REQUEST")
    with socket.create_connection(("127.0.0.1", ports[way][0]), timeout=30) as sock:
        sock.sendall(head + b"Host: x\r\n\r\n")
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    if answer.startswith(b"HTTP/"):
        status_line, _, rest = answer.partition(b"\r\n")
        assert status_line.split()[1] == b"400", answer
        answer = rest.partition(b"\r\n\r\n")[2]
    assert json.loads(answer)["error"]["code"] == "MALFORMED_REQUEST", answer
