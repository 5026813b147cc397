"""Thumbor, the image-processing peer of the benchmark (issue 15): the Python image
server a team would otherwise run. From its own venv (scripts/setup.d/75-thumbor.sh),
``--processes 2`` (tornado forks after binding, so both processes accept on one port),
source images from disk (the file loader), no result storage and no source storage, so
that every request decodes and resizes."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.servers import children
from tests.servers.ports import free_port, wait_listening

REPO = Path(__file__).resolve().parents[1]
THUMBOR = REPO / ".test-servers" / "thumbor-venv" / "bin" / "thumbor"


def thumbor_version() -> str:
    python = THUMBOR.parent / "python"
    done = subprocess.run(
        [str(python), "-c", "import thumbor; print(thumbor.__version__)"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() or "unknown"


@dataclass
class Thumbor:
    root: Path  # the source images live under root/images
    processes: int = 2
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def images(self) -> Path:
        return self.root / "images"

    def resize_url(self, name: str, width: int = 300, fmt: str = "webp") -> str:
        return f"{self.url}/unsafe/{width}x0/filters:format({fmt})/{name}"

    def start(self) -> None:
        if not THUMBOR.exists():
            raise RuntimeError(f"{THUMBOR} is missing: run scripts/setup.d/75-thumbor.sh")
        self.images.mkdir(parents=True, exist_ok=True)
        conf = self.root / "thumbor.conf"
        conf.write_text(self._config())
        log = self.root / "thumbor.log"
        argv = [str(THUMBOR), "-i", "127.0.0.1", "-p", str(self.port), "-c", str(conf)]
        argv += ["-l", "error", "--processes", str(self.processes)]
        with log.open("ab") as out:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
        wait_listening(self.port, self.proc, log, 60)
        deadline = time.monotonic() + 30
        while self.processes > 1 and len(children(self.proc.pid)) < self.processes:
            if time.monotonic() > deadline:
                raise RuntimeError(f"thumbor processes did not start: {log}")
            time.sleep(0.05)
        time.sleep(0.5)  # every forked process has entered its IO loop

    def _config(self) -> str:
        return "\n".join(
            [
                "LOADER = 'thumbor.loaders.file_loader'",
                f"FILE_LOADER_ROOT_PATH = {str(self.images)!r}",
                "STORAGE = 'thumbor.storages.no_storage'",
                "RESULT_STORAGE = None",
                "ALLOW_UNSAFE_URL = True",
                "AUTO_WEBP = False",
                # What its smart crop (``/smart/``) looks for: faces, else features, as
                # Stowage's smart_crop looks for faces, else the most interesting part.
                # Without detectors Thumbor's smart crop is a centre crop.
                "DETECTORS = ['thumbor.detectors.face_detector',"
                " 'thumbor.detectors.feature_detector']",
                "",
            ]
        )

    def pids(self) -> list[int]:
        """The master and the forked processes that serve."""
        assert self.proc is not None
        return [self.proc.pid, *children(self.proc.pid)]

    def stop(self) -> None:
        """TERM to the forked processes and to the master: tornado's master only waits
        for its children, so they would outlive it."""
        if self.proc is None or self.proc.poll() is not None:
            return
        forked = children(self.proc.pid)
        for pid in [*forked, self.proc.pid]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        deadline = time.monotonic() + 10
        for pid in forked:
            while _is_thumbor(pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            if _is_thumbor(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


def _is_thumbor(pid: int) -> bool:
    """Still running, and still ours (not a pid reused by another program)."""
    try:
        return b"thumbor" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
