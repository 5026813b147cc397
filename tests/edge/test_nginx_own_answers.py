"""Every answer a shipped nginx file gives by itself is the JSON error shape of
docs/errors.md, with a code errors.py and the docs list at that status: generated hostile
requests (seed 5051) to each server block of each file in deploy/, run by real nginx with
no node behind it, so that every answer is nginx's own (proxied ones are its 502).

The files run as they are; the test rewrites only the listen addresses (to free loopback
ports), the upstreams' addresses (to a port nothing listens on) and the certificate paths
(to a self-signed certificate made here). A closed connection without an answer (nginx's
444, a request head it drops) is allowed: it is no HTML page."""

from __future__ import annotations

import contextlib
import http.client
import json
import random
import re
import shutil
import socket
import ssl
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import pytest

from tests.multinode.cluster import Nginx, nginx_folder
from tests.servers.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
FILES = {
    "cluster": ROOT / "deploy" / "cluster" / "nginx.conf",
    "nginx": ROOT / "deploy" / "nginx" / "stowage.conf",
    "single": ROOT / "deploy" / "single" / "nginx.conf",
    "cname": ROOT / "deploy" / "cname" / "nginx.conf",
}
ROW = re.compile(r"^\| (\d{3}) \| `([A-Z0-9_]+)` \|", re.M)
DOCUMENTED = {(int(m[1]), m[2]) for m in ROW.finditer((ROOT / "docs/errors.md").read_text())}
#: docs/errors.md: the nginx files answer ORIGIN_UNAVAILABLE with nginx's own 502 and 504 too.
DOCUMENTED |= {(502, "ORIGIN_UNAVAILABLE"), (504, "ORIGIN_UNAVAILABLE")}
SEED = 5051


@dataclass(frozen=True)
class Block:
    """One server block: where it listens now, with TLS or not, and its names."""

    port: int
    tls: bool
    names: tuple[str, ...]
    default: bool


def _blocks(text: str) -> list[tuple[str, bool, tuple[str, ...], bool]]:
    """(listen address, TLS, names, default_server) of each server block, as written."""
    found = []
    for chunk in re.split(r"^server\s*\{", text, flags=re.M)[1:]:
        names: tuple[str, ...] = ()
        if m := re.search(r"^\s*server_name\s+([^;]+);", chunk, re.M):
            names = tuple(n for n in m[1].split() if n != "_")
        for listen in re.finditer(r"^\s*listen\s+([^\s;]+)([^;]*);", chunk, re.M):
            flags = listen[2].split()
            found.append((listen[1], "ssl" in flags, names, "default_server" in flags))
    return found


def render(
    text: str, folder: Path, upstreams: dict[int, int] | None = None
) -> tuple[str, list[Block]]:
    """The file with its listens on free ports and its certificates ``folder``'s; each
    upstream server's port as ``upstreams`` maps it, or one nothing listens on."""
    written = _blocks(text)
    ports: dict[str, int] = {}
    for address, *_ in written:
        ports.setdefault(address, free_port())

    def listen(m: re.Match[str]) -> str:
        return f"{m[1]}listen 127.0.0.1:{ports[m[2]]}{m[3]};"

    text = re.sub(r"^(\s*)listen\s+([^\s;]+)([^;]*);", listen, text, flags=re.M)
    dead = free_port()  # nothing listens there: every proxied request is nginx's 502

    def upstream(m: re.Match[str]) -> str:
        return f"{m[1]}127.0.0.1:{(upstreams or {}).get(int(m[2]), dead)}"

    text = re.sub(r"^(\s*server\s+)127\.0\.0\.1:(\d+)", upstream, text, flags=re.M)
    text = re.sub(r"ssl_certificate\s+\S+;", f"ssl_certificate {folder}/cert.pem;", text)
    text = re.sub(r"ssl_certificate_key\s+\S+;", f"ssl_certificate_key {folder}/key.pem;", text)
    return text, [Block(ports[a], tls, names, d) for a, tls, names, d in written]


def certificate(folder: Path) -> None:
    """A self-signed certificate and its key, ``cert.pem`` and ``key.pem`` in ``folder``."""
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-keyout", str(folder / "key.pem"), "-out", str(folder / "cert.pem")),
            *("-subj", "/CN=stowage.test"),
        ],
        check=True,
        capture_output=True,
    )


@pytest.fixture(scope="module", params=sorted(FILES))
def served(request: pytest.FixtureRequest) -> Iterator[tuple[str, list[Block]]]:
    name = request.param
    folder = nginx_folder()
    certificate(folder)
    conf, blocks = render(FILES[name].read_text(), folder)
    nginx = Nginx(folder, api_port=blocks[0].port, cdn_port=blocks[-1].port)
    try:
        nginx.run(conf)
        yield name, blocks
    finally:
        nginx.stop()
        shutil.rmtree(folder, ignore_errors=True)


class Answer(NamedTuple):
    status: int
    kind: str  # its Content-Type
    body: bytes
    headers: dict[str, str]  # names in lower case


def ask(block: Block, head: bytes, tls: bool | None = None) -> Answer | None:
    """nginx's answer to ``head``; None: closed without one."""
    sock: socket.socket = socket.create_connection(("127.0.0.1", block.port), timeout=30)
    try:
        if block.tls if tls is None else tls:
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
            sock = context.wrap_socket(sock, server_hostname=(block.names or ("x.test",))[0])
        with contextlib.suppress(OSError):
            sock.sendall(head)
        answer = http.client.HTTPResponse(sock)
        try:
            answer.begin()
            body = answer.read()
        except (OSError, http.client.HTTPException):
            return None
        headers = {k.lower(): v for k, v in answer.getheaders()}
        return Answer(answer.status, headers.get("content-type", ""), body, headers)
    finally:
        sock.close()


def _word(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(n))


def _hostile(rng: random.Random, host: str) -> list[tuple[str, bytes]]:
    """Requests nginx refuses itself, or passes on to an upstream that is down."""
    path = "/" + _word(rng, rng.randint(1, 20))
    h = f"Host: {host}\r\n"
    other = f"{_word(rng, 8)}.{rng.choice(['test', 'example', 'invalid'])}"
    many = "".join(f"X-{i}: {'c' * 8000}\r\n" for i in range(rng.randint(17, 30)))
    long = "b" * rng.randint(17_000, 40_000)
    chunked, coding = "Transfer-Encoding: chunked\r\n", rng.choice(["gzip", "br", "x"])
    cases = [
        ("plain", f"GET {path} HTTP/1.1\r\n{h}\r\n"),
        ("post", f"POST {path} HTTP/1.1\r\n{h}Content-Length: 3\r\n\r\nabc"),
        ("unknown-host", f"GET {path} HTTP/1.1\r\nHost: {other}\r\n\r\n"),
        ("absolute-uri", f"GET http://{other}{path} HTTP/1.1\r\n{h}\r\n"),
        ("no-host", f"GET {path} HTTP/1.1\r\n\r\n"),
        ("bad-host", f"GET {path} HTTP/1.1\r\nHost: a/{_word(rng, 4)}\r\n\r\n"),
        ("two-hosts", f"GET {path} HTTP/1.1\r\n{h}Host: {other}\r\n\r\n"),
        ("garbage-line", _word(rng, rng.randint(1, 40)) + "\r\n\r\n"),
        ("lower-method", f"get {path} HTTP/1.1\r\n{h}\r\n"),
        ("trace", f"TRACE {path} HTTP/1.1\r\n{h}\r\n"),
        ("connect", f"CONNECT {other}:443 HTTP/1.1\r\n{h}\r\n"),
        ("version", f"GET {path} HTTP/{rng.choice(['2.0', '9.9', '3.1'])}\r\n{h}\r\n"),
        ("bad-version", f"GET {path} HTTP/1.{_word(rng, 3)}\r\n{h}\r\n"),
        ("long-uri", f"GET {path}?{'a' * rng.randint(17_000, 40_000)} HTTP/1.1\r\n{h}\r\n"),
        ("long-header", f"GET {path} HTTP/1.1\r\n{h}X-A: {long}\r\n\r\n"),
        ("many-bytes", f"GET {path} HTTP/1.1\r\n{h}{many}\r\n"),
        ("bad-length", f"POST {path} HTTP/1.1\r\n{h}Content-Length: {_word(rng, 3)}x\r\n\r\n"),
        (
            "negative-length",
            f"POST {path} HTTP/1.1\r\n{h}Content-Length: -{rng.randint(1, 99)}\r\n\r\n",
        ),
        (
            "length-and-chunked",
            f"POST {path} HTTP/1.1\r\n{h}Content-Length: 3\r\n{chunked}\r\n0\r\n\r\n",
        ),
        (
            "unknown-coding",
            f"POST {path} HTTP/1.1\r\n{h}Transfer-Encoding: {coding}\r\n\r\n",
        ),
        ("bad-chunk", f"POST {path} HTTP/1.1\r\n{h}Transfer-Encoding: chunked\r\n\r\nzz\r\n\r\n"),
        ("nul-header", f"GET {path} HTTP/1.1\r\n{h}X-C: a\x00b\r\n\r\n"),
        ("space-name", f"GET {path} HTTP/1.1\r\n{h}X C: d\r\n\r\n"),
        ("bare-lf", f"GET {path} HTTP/1.1\n{h.strip()}\nX-D: \x01\n\n"),
        ("dot-dot", f"GET /../{_word(rng, 5)} HTTP/1.1\r\n{h}\r\n"),
        ("bad-escape", f"GET /%{_word(rng, 1)}g HTTP/1.1\r\n{h}\r\n"),
        ("internal", f"GET /.stowage-edge/{rng.choice(['404', '502', 'x'])} HTTP/1.1\r\n{h}\r\n"),
        ("metrics", f"GET /metrics HTTP/1.1\r\n{h}\r\n"),
        ("options-star", f"OPTIONS * HTTP/1.1\r\n{h}\r\n"),
        ("http09", f"GET {path}\r\n"),
    ]
    return [(name, head.encode("latin-1")) for name, head in cases]


def check(where: str, answer: Answer | None) -> tuple[int, str] | None:
    """The answer's (status, code); fails unless an error is JSON with a documented code."""
    if answer is None:
        return None
    status, kind, body, _ = answer
    if status < 400:
        return status, ""
    assert kind.startswith("application/json"), (where, status, kind, body[:200])
    code = json.loads(body)["error"]["code"]
    assert (status, code) in DOCUMENTED, (where, status, code)
    return status, code


def test_every_answer_of_nginx_itself_is_json(served: tuple[str, list[Block]]) -> None:
    name, blocks = served
    rng = random.Random(SEED)
    wrong = []
    for block in blocks:
        host = (block.names or ("127.0.0.1",))[0]
        for case, head in _hostile(rng, host):
            try:
                check(f"{name}:{block.port}:{case}", ask(block, head))
            except AssertionError as exc:
                wrong.append(str(exc))
        if block.tls:  # plain HTTP to the TLS port: nginx's 497
            plain = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
            try:
                got = check(f"{name}:{block.port}:plain", ask(block, plain, tls=False))
                assert got == (400, "MALFORMED_REQUEST"), got
            except AssertionError as exc:
                wrong.append(str(exc))
    assert wrong == [], "\n".join(wrong)


def test_an_unknown_name_is_421_json(served: tuple[str, list[Block]]) -> None:
    """A server block without names that answers 421 (the cluster's default_server)."""
    name, blocks = served
    rng = random.Random(SEED + 1)
    for block in blocks:
        if not block.default:
            continue
        for _ in range(5):
            other = f"{_word(rng, 10)}.test"
            head = f"GET /{_word(rng, 6)} HTTP/1.1\r\nHost: {other}\r\n\r\n".encode()
            got = check(name, ask(block, head))
            assert got == (421, "MISDIRECTED_REQUEST"), got
