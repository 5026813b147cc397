"""Headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-
pipe``: commands in on fd 3, answers out on fd 4, NUL-separated JSON), so no debugging
port is open that another local process could drive.

The browser runs as ``nobody`` (Chromium's own sandbox then works, as it does not for
root), in a session of its own (the whole group is killed at the end), with a private
profile folder, ``RLIMIT_DATA`` per process, killed with the server, in a network
namespace of its own where the only thing to reach is the guard proxy's listening
socket (``webproxy.py``), and told so by its flags too: it resolves no name itself and
may not go around the proxy, loopback included.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import shutil
import signal
import socket
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from stowage.processing import sandbox

_NOBODY = 65534
_START_SECONDS = 10.0
_MESSAGE_LIMIT = 256 * 1024 * 1024  # a screenshot comes back whole, base64 in one message
#: Run by ``unshare --net``, as root, in the browser's own network namespace, which holds
#: nothing but a loopback: brings it up, opens the proxy's listening socket on it and
#: hands the socket to the server (SCM_RIGHTS on fd argv[1]; the server's proxy accepts
#: on it from outside), moves the protocol's pipe ends to fds 3 and 4 and runs the
#: browser with the socket's port. The browser can then reach the proxy and nothing else.
_INSIDE = """
import fcntl, os, socket, subprocess, sys
subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(64)
port = listener.getsockname()[1]
channel = socket.socket(fileno=int(sys.argv[1]))
socket.send_fds(channel, [b"p"], [listener.fileno()])
channel.close()
listener.close()
ends = [fcntl.fcntl(int(fd), fcntl.F_DUPFD, 10) for fd in sys.argv[2:4]]
for target, fd in zip((3, 4), ends):
    os.dup2(fd, target, inheritable=True)
command = [a.replace("{port}", str(port)) for a in sys.argv[4:]]
os.execvp(command[0], command)
"""
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
    "--proxy-server=http://127.0.0.1:{port}",
    "--proxy-bypass-list=<-loopback>",
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
    "--js-flags=--max-old-space-size=256",
)


async def _received_socket(channel: socket.socket) -> socket.socket:
    """The listening socket the namespace's first process sends (``_INSIDE``)."""
    loop = asyncio.get_running_loop()
    _, fds, _, _ = await loop.run_in_executor(None, socket.recv_fds, channel, 16, 1)
    if not fds:
        raise BrowserFailed("the browser's network namespace could not be set up")
    return socket.socket(fileno=fds[0])


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


def argv(browser: str, folder: Path, memory: int) -> list[str]:
    drop = ["setpriv", f"--reuid={_NOBODY}", f"--regid={_NOBODY}", "--clear-groups"]
    drop += ["--pdeathsig", "KILL", "--"]
    limits = ["prlimit", f"--data={memory}", f"--fsize={256 * 1024 * 1024}", "--"]
    flags = [*_FLAGS, f"--user-data-dir={folder}"]
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
    async def launch(cls, command: list[str], folder: Path) -> tuple[Browser, socket.socket]:
        """The browser, and the listening socket its proxy must serve on."""
        for tool in ("unshare", "ip", command[0]):
            if shutil.which(tool) is None:
                raise RuntimeError(f"{tool} is not installed on this node (util-linux, iproute2)")
        to_child, from_child = os.pipe(), os.pipe()
        ours, theirs = socket.socketpair()
        inside = [str(theirs.fileno()), str(to_child[0]), str(from_child[1])]
        try:
            proc = await sandbox.spawn(
                *("unshare", "--net", "--", sys.executable, "-I", "-S", "-c", _INSIDE),
                *inside,
                *command,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.DEVNULL,
                pass_fds=(theirs.fileno(), to_child[0], from_child[1]),
                start_new_session=True,
                cwd=folder,
                env={"HOME": str(folder), "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
            )
        finally:
            for fd in (to_child[0], from_child[1]):
                os.close(fd)
            theirs.close()
        browser = await cls._connected(proc, to_child[1], from_child[0])
        try:
            async with asyncio.timeout(_START_SECONDS):
                listening = await _received_socket(ours)
        except BaseException:
            await browser.close()
            raise
        finally:
            ours.close()
        return browser, listening

    @classmethod
    async def _connected(
        cls, proc: asyncio.subprocess.Process, write_fd: int, read_fd: int
    ) -> Browser:
        loop = asyncio.get_running_loop()
        read = asyncio.StreamReader(limit=_MESSAGE_LIMIT)
        await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(read), os.fdopen(read_fd, "rb", 0)
        )
        browser = cls(proc, read)
        transport, _ = await loop.connect_write_pipe(asyncio.Protocol, os.fdopen(write_fd, "wb", 0))
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
                    if message.get("method") == "Page.javascriptDialogOpening":
                        self._dismiss(message)
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

    def _dismiss(self, opening: dict[str, Any]) -> None:
        """Closes a JavaScript dialog (alert, confirm, prompt, beforeunload) as it opens,
        as a user pressing OK would (a prompt gets its default text): an open dialog
        stops the page's scripts, its load and its drawing until the deadline. Sent from
        the reader itself, so a dialog is closed whatever the caller is waiting for."""
        assert self._write is not None
        ident = next(self._ids)
        params = {"accept": True, "promptText": opening["params"].get("defaultPrompt", "")}
        message: dict[str, Any] = {
            "id": ident,
            "method": "Page.handleJavaScriptDialog",
            "params": params,
        }
        if "sessionId" in opening:
            message["sessionId"] = opening["sessionId"]
        answered = asyncio.get_running_loop().create_future()
        answered.add_done_callback(_ignored)  # a dialog already gone: nothing to close
        self._waiting[ident] = answered
        self._write.write(json.dumps(message).encode() + b"\0")

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


def _ignored(answer: asyncio.Future[dict[str, Any]]) -> None:
    if not answer.cancelled():
        answer.exception()  # retrieved: an error here is no failure of the page
