"""A client's bytes in the logs (observe/logs.py) and a path's control characters
(http/strict.py): whatever a request's path holds, percent-encoded or raw, the answer is
a JSON 400 and every record the server writes is one line that starts as a record does;
no control character reaches the log as it is."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import re
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from aiohttp import web

from stowage.assembly import assemble
from stowage.config import Settings
from stowage.http.app import AccessLogger, api_app, cdn_app
from stowage.http.protocol import JsonAppRunner
from stowage.observe import logs

CONTROLS = [chr(c) for c in [*range(0x20), 0x7F]]
#: Where a path may hold it: a handle, a task, an API route, an external source, a key.
PLACES = [
    "/H{c}FAKE",
    "/flip{c}/HANDLEHANDLEHANDLE00",
    "/api/file/HANDLE{c}",
    "/KEY/flip/https://example.com/a{c}.png",
    "/K{c}EY/resize=w:10/HANDLEHANDLEHANDLE00",
]
FORGED = "2026-11-30 22:00:00,000 INFO aiohttp.access FAKE-INJECTED-LINE"
#: How a record of the text format starts (TEXT_FORMAT: asctime first).
RECORD = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} [A-Z]+ ")


@dataclass
class Node:
    ports: tuple[int, int]  # API, CDN
    stream: io.StringIO
    fmt: str


@pytest.fixture
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.fixture(params=["text", "json"])
async def node(
    request: pytest.FixtureRequest, tmp_path: Path, restore_logging: None
) -> AsyncIterator[Node]:
    """Both origins as ``stowage serve`` runs them: its runner, its access logger, its
    logging (to a string instead of stderr)."""
    settings = replace(Settings(data_dir=tmp_path / "data"), office_prewarm=False)
    parts = assemble(settings)
    await parts.start()
    stream = io.StringIO()
    logs.configure("INFO", request.param, stream)
    runners, ports = [], []
    for app in (api_app(parts), cdn_app(parts)):
        runner = JsonAppRunner(
            app, access_log_class=AccessLogger, access_log=logging.getLogger("aiohttp.access")
        )
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        runners.append(runner)
        ports.append(runner.addresses[0][1])
    try:
        yield Node((ports[0], ports[1]), stream, request.param)
    finally:
        for runner in runners:
            await runner.cleanup()
        await parts.close()


async def exchange(port: int, target: bytes) -> tuple[int, dict[str, object]]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET " + target + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    answer = await reader.read()
    writer.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), json.loads(body)


def lines_are_records(text: str, fmt: str) -> list[str]:
    """Every line written is a record's (or a traceback's, after a tab)."""
    assert not any(ch in text for ch in CONTROLS if ch not in "\n\t"), text[-2000:]
    lines = text.splitlines()
    for line in lines:
        if fmt == "json":
            assert isinstance(json.loads(line), dict), line
        else:
            assert RECORD.match(line) or line.startswith(logs.CONTINUED), line
    return lines


@pytest.mark.parametrize("place", PLACES)
async def test_an_encoded_control_character_is_a_400_and_forges_no_line(
    node: Node, place: str
) -> None:
    for char in CONTROLS:
        encoded = f"%{ord(char):02X}"
        target = place.format(c=encoded + FORGED.replace(" ", "%20")).encode()
        for port in node.ports:
            status, body = await exchange(port, target)
            assert status == 400, (char, place, body)
            error = body["error"]
            assert isinstance(error, dict) and error["code"] == "INVALID_REQUEST_PATH"
    lines = lines_are_records(node.stream.getvalue(), node.fmt)
    access = [line for line in lines if "aiohttp.access" in line or '"path"' in line]
    assert len(access) == 2 * len(CONTROLS)  # each logged, once, on a line of its own
    assert not any(line.startswith(FORGED) for line in lines)
    if node.fmt == "json":  # the path is there whole, escaped by JSON
        paths = [json.loads(line)["path"] for line in access]
        assert sorted(p[p.index(FORGED) - 1] for p in paths) == sorted(CONTROLS * 2)
    else:
        shown = sorted(line[line.index(FORGED) - 4 : line.index(FORGED)] for line in access)
        assert shown == sorted(f"\\x{ord(c):02x}" for c in CONTROLS * 2)


# http/protocol.py reads aiohttp's stand-in request's ``message``, deprecated in 3.14.
@pytest.mark.filterwarnings("ignore:Request.message is deprecated:DeprecationWarning")
async def test_a_raw_control_character_is_a_json_400_and_stays_out_of_the_log(
    node: Node,
) -> None:
    """The HTTP parser refuses each raw one in the request line; the answer keeps the
    error shape and the log names the error's class, never the line."""
    for char in CONTROLS:
        if char in "\r\n":
            continue  # ends the request line: a different request, not a path
        for port in node.ports:
            status, body = await exchange(port, f"/HANDLE{char}{FORGED}".encode())
            assert status == 400, (char, body)
            assert isinstance(body["error"], dict)
            assert body["error"]["code"] == "MALFORMED_REQUEST"
    lines = lines_are_records(node.stream.getvalue(), node.fmt)
    assert not any("FAKE-INJECTED" in line for line in lines)  # the raw line is never logged


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_any_record_is_one_line_and_a_traceback_follows_on_tab_lines(
    fmt: str, restore_logging: None
) -> None:
    """Every character a value may hold (control characters, separators, surrogates), in
    a message's arguments, in its extra fields and in an exception's text."""
    stream = io.StringIO()
    logs.configure("INFO", fmt, stream)
    log = logging.getLogger("stowage.http")
    hostile = "".join(CONTROLS) + "\x85\u2028\u2029\udcff\u202e" + FORGED
    log.warning("GET %s failed", f"/x{hostile}", extra={"path": hostile})
    try:
        raise ValueError(f"bad {hostile}\n{FORGED}")
    except ValueError:
        log.exception("unhandled error on GET %s", hostile)
    written = stream.getvalue()
    lines = lines_are_records(written, fmt)
    starts = [line for line in lines if not line.startswith(logs.CONTINUED)]
    assert len(starts) == 2, written
    if fmt == "json":
        records = [json.loads(line) for line in lines]
        assert records[0]["message"] == f"GET /x{hostile} failed"
        assert records[0]["path"] == hostile and hostile in records[1]["exc_info"]
    else:
        assert all(f"\\x{ord(c):02x}" in starts[0] for c in [*CONTROLS, "\x85"])
        assert all(f"\\u{c:04x}" in starts[0] for c in (0x2028, 0x2029, 0xDCFF, 0x202E))
        assert f"{logs.CONTINUED}{FORGED}" in lines  # the exception's own line, continued
