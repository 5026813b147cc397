"""Varnish (Debian's ``varnish`` + ``varnish-modules``, ``scripts/setup.d/75-varnish.sh``)
running ``deploy/varnish/stowage.vcl`` as shipped, on a free loopback port, with the
``-p`` parameters of ``deploy/varnish/override.conf``. The VCL is only changed in its
backend port, to the origin the test started."""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from tests.servers.ports import free_port, wait_listening

ROOT = Path(__file__).resolve().parents[2]
VCL = ROOT / "deploy" / "varnish" / "stowage.vcl"
OVERRIDE = ROOT / "deploy" / "varnish" / "override.conf"
VARNISHD = "/usr/sbin/varnishd"


def render(vcl: str, backend_port: int) -> str:
    rendered, count = re.subn(r'\.port = "8081";', f'.port = "{backend_port}";', vcl)
    assert count == 1, "deploy/varnish/stowage.vcl must have exactly one backend on :8081"
    return rendered


def shipped_parameters() -> list[str]:
    """The ``-p name=value`` options of the shipped systemd drop-in's varnishd command."""
    command = next(
        line for line in OVERRIDE.read_text().splitlines() if line.startswith("ExecStart=/")
    )
    found = re.findall(r"(?:^|\s)-p\s+(\S+)", command)
    return [option for value in found for option in ("-p", value)]


@dataclass
class Varnish:
    backend_port: int
    port: int = field(default_factory=free_port)
    folder: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="stowage-vc-")))
    memory: str = "256m"
    proc: subprocess.Popen[bytes] | None = None
    options: list[str] = field(default_factory=list)  # more varnishd options

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log(self) -> Path:
        return self.folder / "varnishd.log"

    def start(self) -> None:
        vcl = self.folder / "stowage.vcl"
        vcl.write_text(render(VCL.read_text(), self.backend_port))
        cmd = [VARNISHD, "-F", "-j", "none", "-T", "none", "-n", str(self.folder / "n")]
        cmd += ["-a", f"127.0.0.1:{self.port}", "-f", str(vcl), "-s", f"malloc,{self.memory}"]
        cmd += shipped_parameters() + self.options
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
        wait_listening(self.port, self.proc, self.log, 30, "varnishd")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        shutil.rmtree(self.folder, ignore_errors=True)

    def _cache_pids(self) -> list[int]:
        """varnishd's children: the cache process, which holds the storage."""
        assert self.proc is not None
        pids: list[int] = []
        for child in Path(f"/proc/{self.proc.pid}/task").glob("*/children"):
            pids += [int(pid) for pid in child.read_text().split()]
        return pids

    def _status(self, name: str) -> int:
        total = 0
        for pid in self._cache_pids():
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith(name + ":"):
                    total += int(line.split()[1]) * 1024
        return total

    def reset_peak(self) -> int:
        """Resets the cache process's peak RSS (VmHWM) to its current RSS; returns that."""
        for pid in self._cache_pids():
            Path(f"/proc/{pid}/clear_refs").write_text("5")
        return self._status("VmRSS")

    def peak_bytes(self) -> int:
        return self._status("VmHWM")
