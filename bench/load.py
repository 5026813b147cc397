"""Load generators, all bounded in time: wrk (request rates), curl (one large transfer),
and a Python client holding many slow downloads open."""

from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

WRK = "/usr/bin/wrk"
CURL = "/usr/bin/curl"

# Sends BENCH_BODY's bytes with BENCH_METHOD to BENCH_PATH; with BENCH_UNIQUE=1 each
# request gets its own name (BENCH_PATH<thread>-<n>), so every upload makes a new file.
BODY_LUA = """
local f = assert(io.open(os.getenv("BENCH_BODY"), "rb"))
local body = f:read("*a")
f:close()
local method = os.getenv("BENCH_METHOD")
local path = os.getenv("BENCH_PATH")
local unique = os.getenv("BENCH_UNIQUE") == "1"
local threads = 0
local counter = 0
function setup(thread)
  thread:set("tid", threads)
  threads = threads + 1
end
function init(args)
  wrk.method = method
  wrk.body = body
  wrk.path = path
  if not unique then
    req = wrk.format(method, path, nil, body)
  end
end
function request()
  if not unique then return req end
  counter = counter + 1
  return wrk.format(method, path .. tid .. "-" .. counter, nil, body)
end
"""

_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3}


class PeerFailed(RuntimeError):
    """A server under measurement failed: ``what`` is its name or the URL it failed on."""

    def __init__(self, what: str, detail: str) -> None:
        super().__init__(f"{what}: {detail}")
        self.what = what
        self.detail = detail


@dataclass
class WrkResult:
    rps: float
    p99_ms: float
    requests: int
    errors: int
    bytes_read: float


def wrk(
    url: str,
    *,
    seconds: float,
    connections: int,
    threads: int = 2,
    headers: dict[str, str] | None = None,
    body: Path | None = None,
    method: str = "GET",
    unique: bool = False,
    lua_dir: Path | None = None,
) -> WrkResult:
    argv = [
        WRK,
        "-t",
        str(threads),
        "-c",
        str(connections),
        "-d",
        f"{max(1, round(seconds))}s",
        "--latency",
    ]
    argv += ["--timeout", "10s"]
    for name, value in (headers or {}).items():
        argv += ["-H", f"{name}: {value}"]
    env = dict(os.environ)
    if body is not None:
        assert lua_dir is not None
        script = lua_dir / "body.lua"
        script.write_text(BODY_LUA)
        argv += ["-s", str(script)]
        parts = urlsplit(url)
        env.update(
            BENCH_BODY=str(body),
            BENCH_METHOD=method,
            BENCH_PATH=parts.path + (f"?{parts.query}" if parts.query else ""),
            BENCH_UNIQUE="1" if unique else "0",
        )
    out = subprocess.run(
        [*argv, url], capture_output=True, text=True, env=env, timeout=seconds + 60, check=True
    ).stdout
    return parse_wrk(out)


def parse_wrk(out: str) -> WrkResult:
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s|m)\b", out)
    total = re.search(r"(\d+) requests in", out)
    read = re.search(r"requests in [^,]+, ([\d.]+)([KMGT]?B) read", out)
    if rps is None or total is None:
        raise RuntimeError(f"unexpected wrk output:\n{out}")
    errors = sum(int(n) for n in re.findall(r"(?:connect|read|write|timeout) (\d+)", out))
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors += int(non2xx.group(1)) if non2xx else 0
    scale = {"B": 1, "KB": 1024, "MB": 1024**2, "GB": 1024**3, "TB": 1024**4}
    return WrkResult(
        rps=float(rps.group(1)),
        p99_ms=float(p99.group(1)) * _UNITS[p99.group(2)] if p99 else float("nan"),
        requests=int(total.group(1)),
        errors=errors,
        bytes_read=float(read.group(1)) * scale[read.group(2)] if read else 0.0,
    )


def curl(
    url: str,
    *,
    method: str = "GET",
    upload: Path | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = 300,
    follow: bool = False,
) -> tuple[int, int, float, str]:
    """One transfer; returns (status, bytes, seconds, body when uploading)."""
    argv = [CURL, "-sS", "-X", method, "-H", "Expect:", "-w", "\n%{http_code} %{size_download}"]
    if follow:
        argv += ["-L"]
    for name, value in (headers or {}).items():
        argv += ["-H", f"{name}: {value}"]
    if upload is not None:
        argv += ["-T", str(upload)]
    else:
        argv += ["-o", "/dev/null"]
    argv += ["--max-time", str(timeout), url]
    started = time.perf_counter()
    out = subprocess.run(argv, capture_output=True, timeout=timeout + 10, check=True).stdout
    seconds = time.perf_counter() - started
    body, _, tail = out.rpartition(b"\n")
    status, size = tail.split()
    return int(status), int(size), seconds, body.decode(errors="replace")


@dataclass
class SlowResult:
    opened: int
    errors: int
    bytes_read: int


async def _slow_one(
    host: str, port: int, path: str, hold: float, headers: str, connected: list[int]
) -> int:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * 1024)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, (host, port))
    reader, writer = await asyncio.open_connection(sock=sock, limit=64 * 1024)
    try:
        writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n{headers}\r\n".encode())
        head = await reader.readuntil(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 200"):
            raise RuntimeError(head[:40])
        connected[0] += 1
        got = 0
        end = time.monotonic() + hold
        while time.monotonic() < end:
            chunk = await reader.read(16 * 1024)
            if not chunk:
                raise RuntimeError("closed early")
            got += len(chunk)
            await asyncio.sleep(1.0)
        return got
    finally:
        writer.close()


async def slow_downloads(
    url: str, count: int, hold: float, connected: list[int], headers: str = ""
) -> SlowResult:
    """``count`` GETs of a large file, each reading 16 KiB a second for ``hold`` seconds
    (16 KiB receive buffers, so the server really holds them open); ``connected[0]``
    counts the ones answered so far."""
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    tasks = [
        asyncio.create_task(_slow_one(parts.hostname, parts.port, path, hold, headers, connected))
        for _ in range(count)
    ]
    results = await asyncio.gather(*tasks, return_exceptions=True)
    errors = [r for r in results if isinstance(r, BaseException)]
    return SlowResult(
        opened=count,
        errors=len(errors),
        bytes_read=sum(r for r in results if isinstance(r, int)),
    )
