"""A bare HTTP/1.1 client over a socket: sends exactly the bytes a test gives (invalid UTF-8
in a header, a control character in a query, a broken chunk size), which no HTTP client
library lets through, and reads the answer to the end."""

from __future__ import annotations

import contextlib
import json
import socket
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote_from_bytes


@dataclass
class Answer:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def is_error_shape(self) -> bool:
        if not self.headers.get("content-type", "").startswith("application/json"):
            return False
        try:
            body = self.json()
        except ValueError:
            return False
        return (
            isinstance(body, dict)
            and set(body) == {"error"}
            and {"code", "message"} <= set(body["error"])
        )


class ClosedWithoutAnswer(AssertionError):
    """The server closed the connection without a status line."""


def q(value: bytes | str) -> str:
    """Percent-encode every byte that is not unreserved."""
    raw = value.encode("utf-8", "surrogatepass") if isinstance(value, str) else value
    return quote_from_bytes(raw, safe="")


def query(**params: bytes | str) -> str:
    return "&".join(f"{k}={q(v)}" for k, v in params.items())


def request(
    port: int,
    method: str,
    target: str | bytes,
    headers: list[tuple[bytes | str, bytes | str]] | None = None,
    body: bytes = b"",
    *,
    chunked: bool = False,
    raw: bytes | None = None,
    timeout: float = 30,
) -> Answer:
    """One request on a new connection (``Connection: close``), or ``raw`` bytes as they are."""
    data = raw if raw is not None else _build(method, target, headers or [], body, chunked)
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        # No half-close: aiohttp drops a connection on EOF. A refused-early send may fail
        # while the answer is already waiting.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(data)
        received = bytearray()
        while True:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            received += chunk
    return parse(bytes(received))


def _b(value: bytes | str) -> bytes:
    return value if isinstance(value, bytes) else value.encode("utf-8", "surrogateescape")


def _build(
    method: str,
    target: str | bytes,
    headers: list[tuple[bytes | str, bytes | str]],
    body: bytes,
    chunked: bool,
) -> bytes:
    lines = [_b(method) + b" " + _b(target) + b" HTTP/1.1", b"Host: 127.0.0.1"]
    names = {_b(k).lower() for k, _ in headers}
    lines += [_b(k) + b": " + _b(v) for k, v in headers]
    if chunked:
        lines.append(b"Transfer-Encoding: chunked")
        payload = (b"%x\r\n" % len(body) + body + b"\r\n" if body else b"") + b"0\r\n\r\n"
    else:
        if b"content-length" not in names:
            lines.append(b"Content-Length: %d" % len(body))
        payload = body
    lines.append(b"Connection: close")
    return b"\r\n".join(lines) + b"\r\n\r\n" + payload


def parse(data: bytes) -> Answer:
    head, sep, rest = data.partition(b"\r\n\r\n")
    if not data.startswith(b"HTTP/1.") or not sep:
        raise ClosedWithoutAnswer(data[:200])
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers: dict[str, str] = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        rest = _unchunk(rest)
    elif "content-length" in headers:
        rest = rest[: int(headers["content-length"])]
    return Answer(int(status_line.split()[1]), headers, rest)


def _unchunk(data: bytes) -> bytes:
    out = bytearray()
    while data:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out += data[:size]
        data = data[size + 2 :]
    return bytes(out)
