"""A control character in a request's path is one status and code on one node and
through nginx (generated paths over the CDN, ``/api/file`` and store routes, seed 5305):
raw in the request line (not valid HTTP/1.1) ``400 MALFORMED_REQUEST``, escaped (``%01``,
``%C2%85``: a path that decodes to one) ``400 INVALID_REQUEST_PATH``. nginx refused an
escaped NUL itself with ``MALFORMED_REQUEST`` where a node answered
``INVALID_REQUEST_PATH``, and the test nodes answered a raw byte in aiohttp's plain text
where a served node answers JSON. A raw line feed ends the request line: through nginx
the request is HTTP/0.9, answered without a status line, its body the same JSON."""

from __future__ import annotations

import asyncio
import json
import random
from urllib.parse import quote

from tests.api.balanced import through_nginx
from tests.api.harness import Harness

CONTROLS = [chr(c) for c in [*range(32), 0x7F, *range(0x80, 0xA0)]]
RAW = [bytes([c]) for c in [*range(32), 0x7F] if c != 0x0D]  # CR: the line's own end


async def _exchange(port: int, head: bytes) -> tuple[int | None, str | None]:
    """(status, JSON code); status None: an HTTP/0.9 answer, its body alone."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(head)
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(), 30)
    finally:
        writer.close()
    status = None
    if answer.startswith(b"HTTP/"):
        line, _, rest = answer.partition(b"\r\n")
        status, answer = int(line.split()[1]), rest.partition(b"\r\n\r\n")[2]
    return status, json.loads(answer)["error"]["code"]


def _case(rnd: random.Random, harness: Harness) -> tuple[str, str, bytes, str]:
    """(the listener, what is in the path, the request head, the code expected)."""
    key = harness.open_app.api_key
    where, method, before = rnd.choice(
        [
            ("cdn", "GET", f"/{key}/resize=w:20/http://example.test/a"),
            ("cdn", "GET", f"/{key}/store/http://example.test/b"),
            ("cdn", "GET", "/AbCdEfGhIjKlMnOpQrS"),
            ("api", "GET", "/api/file/AbCdEfGhIjKlMnOpQrSt"),
            ("api", "POST", "/api/store/S3"),
        ]
    )
    after = rnd.choice(["", "b", "b.png", "/c", f"?key={key}"])
    if rnd.random() < 0.5:
        raw = rnd.choice(RAW)
        path, what, code = before.encode() + raw + after.encode(), repr(raw), "MALFORMED_REQUEST"
    else:
        control = "\x00" if rnd.random() < 0.25 else rnd.choice(CONTROLS)
        what = quote(control, safe="")
        path, code = (before + what + after).encode(), "INVALID_REQUEST_PATH"
    head = method.encode() + b" " + path + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
    head += b"Content-Length: 0\r\n" if method == "POST" else b""
    return where, what, head + b"\r\n", code


async def test_a_control_character_in_a_path_is_one_code_on_a_node_and_through_nginx(
    harness: Harness,
) -> None:
    rnd = random.Random(5305)
    for _ in range(60):
        where, what, head, code = _case(rnd, harness)
        port = harness.cdn.port if where == "cdn" else harness.api.port
        status, got = await _exchange(port, head)
        line_feed = what == repr(b"\n")
        expected_status = None if line_feed and through_nginx() else 400  # HTTP/0.9
        assert (status, got) == (expected_status, code), (where, what, head[:90])
