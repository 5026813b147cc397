"""The probe process: what a media file holds (the fields of ffprobe's ``-show_format
-show_streams`` that ``ffmpeg.py`` reads), each file read by a child forked for it.

``prober.py`` runs this file as ``/usr/bin/python3 -I probeserver.py`` in the sandbox of
ffmpeg's runs (no network, ``nice``, killed with the server process). It loads Debian's
libav through python3-av (the libraries of the ffmpeg that converts) once; a child
forked for a file starts in a few milliseconds, where an ffprobe run spends about 0.05 s
loading some 200 libraries. The child takes its limits before it opens the file (an
address-space limit, a CPU limit, an alarm at its deadline) and opens it as ffprobe did:
as ``file:``, with a protocol whitelist of ``file`` and the caller's demuxer whitelist.

One JSON object a line. In: ``{"id", "path", "formats", "seconds", "memory", "out"}``,
or ``{"kill": id}``. Out: ``{"ready": true}`` once libav is loaded (or ``{"error"}``),
then ``{"id", "status"}`` when a child ended (its exit code, or minus the signal that
ended it), having written its reading, or ``{"error": why}``, to ``out``.

Only the standard library and av: this file is run alone, not as part of the package.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import math
import os
import resource
import selectors
import signal
import sys
from collections.abc import Callable
from typing import Any, NamedTuple, NoReturn

_ERROR = 16  # libav's AV_LOG_ERROR: a message that says why a file was refused


class Lib(NamedTuple):
    av: Any  # the python3-av module
    codec_name: Callable[[int], str]


def _codec_names(av: Any) -> Callable[[int], str]:
    """libavcodec's ``avcodec_get_name``: a codec's name as ffprobe says it ("mp3",
    "flv1"), where PyAV names the decoder ("mp3float", "flv")."""
    major = av.library_versions["libavcodec"][0]
    lookup = ctypes.CDLL(f"libavcodec.so.{major}").avcodec_get_name  # loaded already
    lookup.argtypes, lookup.restype = [ctypes.c_int], ctypes.c_char_p
    return lambda codec_id: lookup(codec_id).decode("ascii", "replace")


def main() -> int:
    try:
        import av  # Debian's python3-av
    except ImportError as exc:
        _say({"error": f"python3-av is not installed ({exc})"})
        return 1
    lib = Lib(av, _codec_names(av))
    _say({"ready": True})
    children: dict[int, int] = {}  # ask id -> pid
    picker = selectors.DefaultSelector()
    picker.register(0, selectors.EVENT_READ, None)
    pending = b""
    while True:
        for key, _ in picker.select():
            if key.data is not None:
                _ended(picker, key.fd, key.data, children)
                continue
            chunk = os.read(0, 65536)
            if not chunk:  # the server process is gone; children end at their alarms
                return 0
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                _take(json.loads(line), lib, picker, children)


def _take(
    ask: dict[str, Any], lib: Lib, picker: selectors.BaseSelector, children: dict[int, int]
) -> None:
    if "kill" in ask:
        if (pid := children.get(ask["kill"])) is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        return
    pid = os.fork()
    if pid == 0:
        _child(ask, lib)
    children[ask["id"]] = pid
    picker.register(os.pidfd_open(pid), selectors.EVENT_READ, (ask["id"], pid))


def _ended(
    picker: selectors.BaseSelector, pidfd: int, data: tuple[int, int], children: dict[int, int]
) -> None:
    ask_id, pid = data
    picker.unregister(pidfd)
    os.close(pidfd)
    _, status = os.waitpid(pid, 0)
    children.pop(ask_id, None)
    _say({"id": ask_id, "status": os.waitstatus_to_exitcode(status)})


def _child(ask: dict[str, Any], lib: Lib) -> NoReturn:
    code = 1
    try:
        seconds = max(1, math.ceil(float(ask["seconds"])))
        if ask.get("memory"):
            resource.setrlimit(resource.RLIMIT_AS, (ask["memory"], ask["memory"]))
        resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 1))
        signal.alarm(seconds)  # SIGALRM's default action ends the child at its deadline
        quiet = os.open(os.devnull, os.O_RDWR)
        os.dup2(quiet, 0)  # the server's pipes are the probe process's alone
        os.dup2(quiet, 1)
        path = str(ask["path"])
        os.chdir(os.path.dirname(path))
        _write(str(ask["out"]), _reading(lib, path, str(ask["formats"])))
        code = 0
    finally:
        os._exit(code)


def _reading(lib: Lib, path: str, formats: str) -> dict[str, Any]:
    av = lib.av
    guard = {"protocol_whitelist": "file", "format_whitelist": formats}
    with av.logging.Capture() as said:
        try:
            container = av.open(f"file:{path}", container_options=guard)
        except (av.FFmpegError, OSError) as exc:
            why = [getattr(exc, "strerror", None) or type(exc).__name__]
            why += [f"[{name}] {text.strip()}" for level, name, text in said if level <= _ERROR]
            return {"error": "; ".join(why[:1] + why[-1:] if len(why) > 1 else why)}
    with container:
        found: dict[str, Any] = {"format_name": container.format.name}
        found["size"] = os.path.getsize(path)
        if container.duration is not None:
            found["duration"] = container.duration / 1_000_000  # AV_TIME_BASE
        return {"format": found, "streams": [_fields(s, lib.codec_name) for s in container.streams]}


def _fields(stream: Any, codec_name: Callable[[int], str]) -> dict[str, Any]:
    found: dict[str, Any] = {"index": stream.index, "codec_type": stream.type}
    context = stream.codec_context
    if context is None:
        return found
    rate = stream.average_rate
    found |= {"codec_name": codec_name(context.codec.id), "bit_rate": context.bit_rate}
    found["avg_frame_rate"] = f"{rate.numerator}/{rate.denominator}" if rate else "0/0"
    if stream.type == "video":
        found |= {"width": context.width, "height": context.height}
    elif stream.type == "audio":
        found |= {"channels": context.channels, "sample_rate": context.sample_rate}
    return found


def _write(path: str, reading: dict[str, Any]) -> None:
    part = f"{path}.part"
    with open(part, "w", encoding="utf-8") as out:
        json.dump(reading, out)
    os.replace(part, path)  # the server reads it only after the child ended, but whole


def _say(message: dict[str, Any]) -> None:
    os.write(1, json.dumps(message).encode() + b"\n")


if __name__ == "__main__":
    sys.exit(main())
