"""The engines' sandbox (processing/sandbox.py), run for real: a command in it reaches
no listener on this host's loopback, gets its limits, its private HOME and TMPDIR and
none of the server's environment, and is killed with its children as a group."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from stowage.processing import sandbox

_CONNECT = """
import socket, sys
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3).close()
    print("connected")
except OSError as exc:
    print("refused", exc)
"""


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.5)
    yield server
    server.close()


def _accepted(server: socket.socket) -> bool:
    try:
        conn, _ = server.accept()
    except TimeoutError:
        return False
    conn.close()
    return True


def _run(caps: sandbox.Caps, folder: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*sandbox.prefix(caps), *argv],
        capture_output=True,
        text=True,
        timeout=30,
        **sandbox.spawn_options(folder),
    )


def test_a_sandboxed_command_reaches_no_listener(listener: socket.socket, tmp_path: Path) -> None:
    port = str(listener.getsockname()[1])
    done = _run(sandbox.Caps(), tmp_path, sys.executable, "-c", _CONNECT, port)
    assert done.stdout.startswith("refused"), done
    assert not _accepted(listener)
    # The same command outside the sandbox does connect: the listener is a real one.
    opened = _run(sandbox.Caps(network=True), tmp_path, sys.executable, "-c", _CONNECT, port)
    assert opened.stdout.startswith("connected"), opened
    assert _accepted(listener)


def test_the_limits_and_the_environment(tmp_path: Path) -> None:
    os.environ["STOWAGE_TEST_SECRET"] = "do-not-leak"
    try:
        script = "import os, resource; print(resource.getrlimit(resource.RLIMIT_FSIZE)[0],"
        script += " os.environ.get('STOWAGE_TEST_SECRET'), os.environ['HOME'],"
        script += " os.environ['TMPDIR'], os.getcwd(), os.nice(0))"
        caps = sandbox.Caps(memory=2 << 30, output_bytes=12345)
        done = _run(caps, tmp_path, sys.executable, "-c", script)
    finally:
        del os.environ["STOWAGE_TEST_SECRET"]
    fsize, secret, home, tmp, cwd, nice = done.stdout.split()
    assert fsize == "12345" and secret == "None"
    assert Path(home) == tmp_path / "home" and Path(tmp) == tmp_path / "tmp"
    assert Path(cwd) == tmp_path and int(nice) >= sandbox.NICENESS


def test_a_job_process_starts_no_thread_per_core(tmp_path: Path) -> None:
    """numpy (OpenBLAS) and OpenCV start a pool of a thread per core at import; a job
    process has one core's share, so its imports start none."""
    script = "import os, numpy, cv2; print(len(os.listdir('/proc/self/task')))"
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        env=sandbox.job_environment(tmp_path),
        cwd=tmp_path,
    )
    assert done.stdout.strip() == "1", done
    # the same imports elsewhere do start threads where there is more than one core
    if (os.cpu_count() or 1) > 1:
        free = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
        assert int(free.stdout) > 1, free


def test_a_memory_hog_is_refused(tmp_path: Path) -> None:
    caps = sandbox.Caps(memory=512 << 20)
    done = _run(caps, tmp_path, sys.executable, "-c", "b = bytearray(1 << 30)")
    assert done.returncode != 0 and "MemoryError" in done.stderr


def test_the_group_is_killed_children_included(tmp_path: Path) -> None:
    child = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c',"
    child += " 'import time; time.sleep(60)']); print('up', flush=True); time.sleep(60)"
    proc = subprocess.Popen(
        [*sandbox.prefix(sandbox.Caps()), sys.executable, "-c", child],
        stdout=subprocess.PIPE,
        text=True,
        **sandbox.spawn_options(tmp_path),
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "up"
    sandbox.kill_group(proc.pid)
    proc.wait(timeout=10)
    deadline = time.monotonic() + 10
    while _group_alive(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _group_alive(proc.pid)


def _group_alive(pgid: int) -> bool:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.getpgid(int(entry.name)) == pgid and _state(entry) != "Z":
                    return True
            except (ProcessLookupError, OSError):
                continue
    return False


def _state(entry: Path) -> str:
    try:
        return (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"


_LOOK = """
import os, sys
for path in sys.argv[1:]:
    try:
        open(path).read()
        print(path, "read")
    except OSError:
        print(path, "hidden")
open("made.txt", "w").write("mine")
print("pids", len([p for p in os.listdir("/proc") if p.isdigit()]))
"""


@pytest.mark.needs("bwrap", "prlimit", by="scripts/setup.d/79-office.sh")
def test_a_confined_command_sees_its_folder_only(tmp_path: Path, listener: socket.socket) -> None:
    folder, secret = tmp_path / "job", tmp_path / "secret.txt"
    folder.mkdir()
    secret.write_text("not for the engine")
    (folder / "given.txt").write_text("for the engine")
    caps = sandbox.Caps(readable=("/etc/ld.so.cache",))  # Debian's Python, under /usr
    paths = ["/etc/passwd", str(secret), str(folder / "given.txt"), "/proc/1/root/etc/passwd"]
    done = subprocess.run(
        [*sandbox.prefix(caps, folder), "/usr/bin/python3", "-c", _LOOK, *paths],
        capture_output=True,
        text=True,
        timeout=30,
        **sandbox.spawn_options(folder),
    )
    seen = dict(line.rsplit(" ", 1) for line in done.stdout.splitlines())
    assert seen == {
        "/etc/passwd": "hidden",
        str(secret): "hidden",
        str(folder / "given.txt"): "read",
        "/proc/1/root/etc/passwd": "hidden",
        "pids": seen["pids"],
    }, done
    assert int(seen["pids"]) <= 3  # its own processes only
    assert (folder / "made.txt").read_text() == "mine"
    port = str(listener.getsockname()[1])
    done = subprocess.run(
        [*sandbox.prefix(caps, folder), "/usr/bin/python3", "-c", _CONNECT, port],
        capture_output=True,
        text=True,
        timeout=30,
        **sandbox.spawn_options(folder),
    )
    assert done.stdout.startswith("refused") and not _accepted(listener), done


@pytest.mark.needs("bwrap", "prlimit", by="scripts/setup.d/79-office.sh")
@pytest.mark.parametrize("turns", range(16))
async def test_a_start_cancelled_at_any_point_leaves_nothing_running(
    tmp_path: Path, turns: int
) -> None:
    """Cancelled after ``turns`` turns of the event loop: every point of a start, from
    before the process exists to after the pipes are connected. A confined engine is
    several processes (bwrap forks); asyncio's own clean-up killed the first only, and
    waited for ever on pipes the others held (turn 3 here), or left them running."""
    mark = f"31.{turns}{os.getpid()}"  # this test's sleeps, and no one else's
    argv = [*sandbox.prefix(sandbox.Caps(readable=()), tmp_path), "sh", "-c"]
    starting = asyncio.ensure_future(
        sandbox.spawn(
            *argv,
            f"sleep {mark} & sleep {mark}",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            **sandbox.spawn_options(tmp_path),
        )
    )
    for _ in range(turns):
        await asyncio.sleep(0)
    starting.cancel()
    try:
        proc = await asyncio.wait_for(asyncio.shield(starting), 10)
    except asyncio.CancelledError:
        proc = None
    if proc is not None:  # started before the cancel: the caller's to end, as ever
        await sandbox.reap(proc)
    deadline = time.monotonic() + 5
    while _running(mark) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert _running(mark) == []


def _running(mark: str) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            line = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if entry.name.isdigit() and mark.encode() in line:
            found.append(line.decode(errors="replace"))
    return found


def test_every_engine_is_started_through_spawn() -> None:
    """The cancellation-safe start is the only one: a module starting its engine with
    asyncio's own would bring the leak back."""
    source = Path(sandbox.__file__).parents[1]
    starting = [
        str(path.relative_to(source))
        for path in source.rglob("*.py")
        if "create_subprocess_exec(" in path.read_text() and path.name != "sandbox.py"
    ]
    assert starting == []


async def test_a_reaped_process_leaves_its_transport_closed(tmp_path: Path) -> None:
    """A transport left open after the wait was closed later by the garbage collector,
    on a loop already closed: an error in whatever ran next."""
    proc = await sandbox.spawn(
        "sleep",
        "30",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        **sandbox.spawn_options(tmp_path),
    )
    await sandbox.reap(proc)
    assert proc.returncode is not None
    assert proc._transport.is_closing()  # type: ignore[attr-defined]
