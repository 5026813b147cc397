"""Loopback ports for the servers the tests start, and the wait until one listens.

Both guard against the same mistake: a test talking to a server other than the one it
started. Picking a port by binding to port 0 and closing the socket hands out ports from
the kernel's ephemeral range, which the kernel then gives to the next socket that binds
to port 0 or connects anywhere: an in-process TestServer, a client connection, or the
next ``free_port()``. The server started on that port then fails to bind, and a wait that
only tries to connect sees the other socket and reports success. That happened in CI
(nginx's API port taken by a node's CDN listener: every POST answered 405).

So ``free_port`` picks below the ephemeral range and never hands out a port twice in one
process, and ``wait_listening`` waits until the listening socket belongs to the process
it started (or one of its children). Nor in two processes at once: between the pick and
the server's bind, another test process (three run at once) could pick the same free port,
and one of the two servers then failed to start ("address already in use", a clean-clone
CI run of 2026-11-30). So a port handed out is also written, under a lock, to a file that
every test process reads (``RESERVED``), and is not handed out again for ``HOLD`` seconds.
"""

from __future__ import annotations

import fcntl
import os
import random
import re
import socket
import subprocess
import tempfile
import time
from pathlib import Path

_handed_out: set[int] = set()
_LOWEST = 20000
RESERVED = Path(tempfile.gettempdir()) / "stowage-test-ports"
#: Long enough for any server to bind the port it was given (a cluster picks its ports,
#: then starts three nodes and nginx); short enough that the file stays small.
HOLD = 600.0


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _bindable(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A loopback port nothing listens on, outside the kernel's ephemeral range, not handed
    out before in this process, nor by another test process in the last ``HOLD`` seconds."""
    high = _ephemeral_low() - 1
    # Random, so that two test processes at once (the nested pytest of the multinode
    # suite) rarely try the same ports.
    for _ in range(1000):
        port = random.randint(_LOWEST, high)
        if port not in _handed_out and _bindable(port) and _reserve(port):
            _handed_out.add(port)
            return port
    raise RuntimeError(f"no free loopback port between {_LOWEST} and {high}")


def _reserve(port: int) -> bool:
    """Whether ``port`` was not handed out by any test process in the last ``HOLD``
    seconds; if so, it is recorded as handed out now. Without the file (another user's,
    say), every port counts as free: the in-process set and the bind check remain."""
    try:
        with open(RESERVED, "a+") as shared:
            fcntl.flock(shared, fcntl.LOCK_EX)
            shared.seek(0)
            now, recent = time.time(), {}
            for line in shared.read().split("\n"):
                fields = line.split()
                if len(fields) == 2 and _recent(fields[1], now):
                    recent[fields[0]] = fields[1]
            if str(port) in recent:
                return False
            recent[str(port)] = f"{now:.1f}"
            shared.seek(0)
            shared.truncate()
            shared.write("".join(f"{p} {t}\n" for p, t in recent.items()))
    except OSError:
        pass
    return True


def _recent(stamp: str, now: float) -> bool:
    try:
        return now - float(stamp) < HOLD
    except ValueError:
        return False  # a line cut short: dropped with the next write


def _listening_inodes(port: int) -> set[str]:
    """The inodes of the sockets listening on ``port``, from ``ss`` (netlink: the kernel
    filters); /proc/net/tcp lists every socket, thousands of them in TIME_WAIT late in a
    run, and took 0.1 s a read, several reads a server start."""
    try:
        listed = subprocess.run(
            ["ss", "-Hltne", f"sport = :{port}"], capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return _proc_listening_inodes(port)
    return set(re.findall(r"\bino:(\d+)", listed))


def _proc_listening_inodes(port: int) -> set[str]:
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:
                inodes.add(inode)
    return inodes


def _accepts(port: int) -> bool:
    """Something listens on ``port``: a connect, cheap enough to poll; who listens is
    checked after."""
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _family(pid: int) -> set[int]:
    """``pid`` and all its descendants."""
    parents: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    family, todo = set(), [pid]
    while todo:
        current = todo.pop()
        family.add(current)
        todo.extend(parents.get(current, []))
    return family


def _holds_socket(pids: set[int], inodes: set[str]) -> bool:
    wanted = {f"socket:[{inode}]" for inode in inodes}
    for pid in pids:
        try:
            for fd in os.scandir(f"/proc/{pid}/fd"):
                try:
                    if os.readlink(fd.path) in wanted:
                        return True
                except OSError:
                    continue
        except OSError:
            continue
    return False


def listens(port: int, pid: int) -> bool:
    """Whether process ``pid`` or one of its children listens on ``port``."""
    if not _accepts(port):
        return False
    inodes = _listening_inodes(port)
    if not inodes:
        return False
    # The process itself first: listing every process's parent is the slow part.
    return _holds_socket({pid}, inodes) or _holds_socket(_family(pid), inodes)


def wait_listening(
    port: int, proc: subprocess.Popen[bytes], log: Path, timeout: float, name: str = "server"
) -> None:
    """Waits until ``proc`` (or a child of it) listens on ``port``; raises with the end of
    ``log`` if it exits or the time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited with {proc.returncode}: {_tail(log)}")
        if listens(port, proc.pid):
            return
        time.sleep(0.01)  # a poll is a refused connect until something listens
    raise RuntimeError(f"{name} not listening on {port} after {timeout}s: {_tail(log)}")


def _tail(log: Path) -> str:
    try:
        return log.read_text(errors="replace")[-3000:]
    except OSError:
        return "(no log)"
