"""Headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-
pipe``: commands in on fd 3, answers out on fd 4, NUL-separated JSON), so no debugging
port is open that another local process could drive.

The browser runs as ``nobody`` (Chromium's own sandbox then works, as it does not for
root), in a session of its own (the whole group is killed at the end), with a private
profile folder, ``RLIMIT_DATA`` per process, killed with the server, and with every
request sent to the guard proxy (``webproxy.py``): it resolves no name itself and may
not go around the proxy, loopback included.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

_NOBODY = 65534
_MESSAGE_LIMIT = 256 * 1024 * 1024  # a screenshot comes back whole, base64 in one message
#: fds 3 and 4 are the protocol's; bash moves our pipe ends there, then runs it (dash
#: takes one-digit fds only).
_PIPES = 'exec 3<&$0 4>&$1; shift; exec "$@"'
_FLAGS = (
    "--headless",
    "--remote-debugging-pipe",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-extensions",
    "--disable-sync",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-default-apps",
    "--disable-domain-reliability",
    "--disable-breakpad",
    "--dns-prefetch-disable",
    "--no-pings",
    "--mute-audio",
    "--hide-scrollbars",
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--force-webrtc-ip-handling-policy",
    "--disable-client-side-phishing-detection",
    "--disable-field-trial-config",
    # Chromium's own background requests (they would go through the guard proxy anyway).
    "--disable-features=DnsOverHttps,Translate,MediaRouter,OptimizationHints,"
    "NetworkTimeServiceQuerying,CertificateTransparencyComponentUpdater,"
    "AutofillServerCommunication,InterestFeedContentSuggestions",
    # The proxy alone may be reached: Chromium resolves no name, and loopback, which it
    # would otherwise send around any proxy, goes through it too.
    "--proxy-bypass-list=<-loopback>",
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
    "--js-flags=--max-old-space-size=256",
)


class BrowserFailed(Exception):
    """The browser could not be started or ended without answering."""


@contextlib.contextmanager
def profile() -> Iterator[Path]:
    """A private profile folder, the browser's only writable place; removed after."""
    folder = Path(tempfile.mkdtemp(prefix="stowage-browser-"))
    try:
        os.chown(folder, _NOBODY, _NOBODY)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def argv(browser: str, folder: Path, proxy_port: int, memory: int) -> list[str]:
    drop = ["setpriv", f"--reuid={_NOBODY}", f"--regid={_NOBODY}", "--clear-groups"]
    drop += ["--pdeathsig", "KILL", "--"]
    limits = ["prlimit", f"--data={memory}", f"--fsize={256 * 1024 * 1024}", "--"]
    flags = [*_FLAGS, f"--user-data-dir={folder}", f"--proxy-server=http://127.0.0.1:{proxy_port}"]
    return [*drop, *limits, browser, *flags, "about:blank"]


class Browser:
    def __init__(self, proc: asyncio.subprocess.Process, read: asyncio.StreamReader) -> None:
        self._proc = proc
        self._read = read
        self._write: asyncio.WriteTransport | None = None
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.events: list[dict[str, Any]] = []  # as they came, for the caller to read
        self._event = asyncio.Event()
        self._ended: str | None = None  # why the protocol's pipe ended
        self._reader: asyncio.Task[None] | None = None

    @classmethod
    async def launch(cls, command: list[str], folder: Path) -> Browser:
        to_child, from_child = os.pipe(), os.pipe()
        if shutil.which(command[0]) is None or shutil.which("bash") is None:
            raise RuntimeError(f"{command[0]} is not installed on this node (util-linux)")
        try:
            proc = await asyncio.create_subprocess_exec(
                "bash",
                "-c",
                _PIPES,
                str(to_child[0]),
                str(from_child[1]),
                *command,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.DEVNULL,
                pass_fds=(to_child[0], from_child[1]),
                start_new_session=True,
                cwd=folder,
                env={"HOME": str(folder), "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
            )
        finally:
            os.close(to_child[0])
            os.close(from_child[1])
        loop = asyncio.get_running_loop()
        read = asyncio.StreamReader(limit=_MESSAGE_LIMIT)
        await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(read), os.fdopen(from_child[0], "rb", 0)
        )
        browser = cls(proc, read)
        transport, _ = await loop.connect_write_pipe(
            asyncio.Protocol, os.fdopen(to_child[1], "wb", 0)
        )
        browser._write = transport
        browser._reader = asyncio.create_task(browser._receive())
        return browser

    async def call(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        """One command; its result, or ``BrowserFailed`` with the protocol's error."""
        assert self._write is not None
        ident = next(self._ids)
        message: dict[str, Any] = {"id": ident, "method": method, "params": params}
        if session is not None:
            message["sessionId"] = session
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[ident] = future
        if self._ended is not None:
            raise BrowserFailed(self._ended)
        self._write.write(json.dumps(message).encode() + b"\0")
        return await future

    async def event(self, method: str, start: int = 0) -> dict[str, Any]:
        """The first event ``method`` from index ``start`` of ``events``, waited for."""
        while True:
            for found in self.events[start:]:
                if found.get("method") == method:
                    return found
            if self._ended is not None:
                raise BrowserFailed(self._ended)
            self._event.clear()
            await self._event.wait()

    async def _receive(self) -> None:
        try:
            while True:
                message = json.loads((await self._read.readuntil(b"\0"))[:-1])
                waiting = self._waiting.pop(message.get("id", -1), None)
                if waiting is None:
                    self.events.append(message)
                    self._event.set()
                elif "error" in message:
                    error = message["error"].get("message", "error")
                    waiting.set_exception(BrowserFailed(str(error)))
                else:
                    waiting.set_result(message.get("result", {}))
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as exc:
            self._ended = f"the browser ended: {exc}"
            for future in self._waiting.values():
                if not future.done():
                    future.set_exception(BrowserFailed(self._ended))
            self._waiting.clear()
            self._event.set()

    async def close(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, signal.SIGKILL)
        await self._proc.wait()
        if self._write is not None:
            self._write.close()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
