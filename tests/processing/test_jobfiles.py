"""A job's files handed to a job process (processing/jobfiles.py): descriptors in the
order of the job's sources, past the kernel's 253 a message; read through /proc."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

from stowage.processing import chain as chains
from stowage.processing import jobfiles
from stowage.processing.base import Job, Limits

LIMITS = Limits(max_input_pixels=10**6, max_input_bytes=10**6, max_output_dimension=100, seconds=5)


def a_job(tmp_path: Path, count: int) -> Job:
    paths = []
    for number in range(count):
        path = tmp_path / f"source-{number}"
        path.write_bytes(f"content {number}".encode())
        paths.append(path)
    chain = chains.parse(["resize=width:10"])
    output = chains.output_for(chain, "image/png")
    others = tuple((f"h{n}", p) for n, p in enumerate(paths[1:]))
    return Job(paths[0], chain, output, tmp_path / "out.png", LIMITS, others)


def test_every_source_arrives_in_order_past_one_messages_limit(tmp_path: Path) -> None:
    job = a_job(tmp_path, 450)  # three messages: 200, 200, 50
    ours, theirs = socket.socketpair()
    with ours, theirs, jobfiles.opened(jobfiles.source_paths(job)) as fds:
        jobfiles.send(ours, fds)
        got = jobfiles.receive(theirs)
        try:
            handed = jobfiles.handed(job, got)
            read = [p.read_bytes() for p in jobfiles.source_paths(handed)]
        finally:
            for fd in got:
                os.close(fd)
    assert read == [f"content {n}".encode() for n in range(450)]
    assert [h for h, _ in handed.sources] == [f"h{n}" for n in range(449)]
    assert str(handed.source).startswith("/proc/self/fd/")


def test_a_closed_channel_ends_the_job_process(tmp_path: Path) -> None:
    ours, theirs = socket.socketpair()
    ours.close()
    with theirs:
        try:
            jobfiles.receive(theirs)
        except EOFError:
            return
    raise AssertionError("receive() returned on a closed channel")


def test_the_folder_is_emptied_but_its_home(tmp_path: Path) -> None:
    (tmp_path / "home" / ".cache").mkdir(parents=True)
    (tmp_path / "out.png").write_bytes(b"x")
    (tmp_path / "out.png.page.tif").write_bytes(b"x")
    (tmp_path / "vips-0.v").mkdir()
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    jobfiles.empty(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["home"]
    assert (tmp_path / "home" / ".cache").is_dir()


def test_the_result_is_moved_where_the_server_wants_it(tmp_path: Path) -> None:
    made, dest = tmp_path / "made.png", tmp_path / "spool" / "dest.png"
    dest.parent.mkdir()
    dest.write_bytes(b"")  # the spool's empty file
    made.write_bytes(b"result")
    jobfiles.deliver(made, dest)
    assert dest.read_bytes() == b"result" and not made.exists()
    jobfiles.deliver(tmp_path / "never-made.json", dest)  # nothing written: left as it is
    assert dest.read_bytes() == b"result"


def test_only_old_folders_of_servers_gone_are_swept(tmp_path: Path) -> None:
    old = time.time() - jobfiles.STALE_SECONDS - 60
    folders = {
        "swept": tmp_path / f"job-{_ended_pid()}-a",
        "young": tmp_path / f"job-{_ended_pid()}-b",
        "alive": tmp_path / f"job-{os.getpid()}-c",
    }
    for name, folder in folders.items():
        (folder / "home").mkdir(parents=True)
        if name != "young":
            os.utime(folder, (old, old))
    jobfiles.sweep(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        folders[k].name for k in ("young", "alive")
    )


def _ended_pid() -> int:
    ended = subprocess.Popen(["true"])
    ended.wait()
    return ended.pid
