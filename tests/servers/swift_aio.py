"""A single-node OpenStack Swift ("all in one") on 127.0.0.1 for the tests.

One replica, rings with one device, account/container/object/proxy servers
(``workers = 0``: one process each) and a private memcached, all storing under
one temporary directory. The proxy runs tempauth and the s3api middleware, so
the same server speaks the Swift API (``/auth/v1.0``, ``/v1/AUTH_test``) and
the S3 API (path-style, access key ``test:tester``, secret = tempauth key).
SLO and DLO are in the pipeline. Swift comes from its own venv, installed by
``scripts/setup.d/20-swift.sh``, because eventlet does not belong in ``.venv``.

The proxy error-limits a node for ``error_suppression_interval`` (Swift's default 60 s)
once it has counted more than 10 errors (timeouts, 5xx) from it. A real cluster routes
around such a node; here it is the only one, so a busy moment of a loaded test machine
became a minute of instant 503s for every request (a CI run's API race: 4,005 of 4,447
reads refused). One second keeps the behaviour (short bursts of 503s, which the code
under test must answer honestly) without that minute.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from tests.servers.ports import free_port
from tests.servers.procs import run_checked

REPO = Path(__file__).resolve().parents[2]
SWIFT_VENV = REPO / ".test-servers" / "swift-venv"
SERVICES = ("account", "container", "object")
START_TIMEOUT = 30.0
PR_SET_PDEATHSIG = 1

PROXY_PIPELINE = (
    "catch_errors gatekeeper healthcheck proxy-logging cache listing_formats bulk "
    "tempurl s3api tempauth copy slo dlo versioned_writes symlink proxy-logging proxy-server"
)


def _die_with_parent() -> None:
    """Linux: the child gets SIGTERM if the test process dies without stopping it."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


@dataclass
class SwiftAIO:
    """A running Swift all-in-one. Build with ``SwiftAIO.start()``, end with ``stop()``."""

    root: Path
    account: str = "test"
    user: str = "tester"
    key: str = "testing"
    ports: dict[str, int] = field(default_factory=dict)
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def proxy_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['proxy']}"

    @property
    def auth_url(self) -> str:
        return f"{self.proxy_url}/auth/v1.0"

    @property
    def auth_user(self) -> str:
        """The tempauth login name, ``account:user``."""
        return f"{self.account}:{self.user}"

    @property
    def storage_url(self) -> str:
        return f"{self.proxy_url}/v1/AUTH_{self.account}"

    @property
    def s3_endpoint(self) -> str:
        return self.proxy_url

    @property
    def s3_access_key(self) -> str:
        return self.auth_user

    @property
    def s3_secret_key(self) -> str:
        return self.key

    @property
    def s3_region(self) -> str:
        return "us-east-1"

    @classmethod
    def start(cls, attempts: int = 3) -> SwiftAIO:
        """Starts a fresh instance; retries with new ports if one was taken meanwhile."""
        for attempt in range(1, attempts + 1):
            server = cls(Path(tempfile.mkdtemp(prefix="stowage-swift-")))
            try:
                server._launch()
                return server
            except RuntimeError:
                server.stop()
                if attempt == attempts:
                    raise
            except BaseException:
                server.stop()
                raise
        raise AssertionError("unreachable")

    # -- lifecycle -------------------------------------------------------------

    def _launch(self) -> None:
        binary = SWIFT_VENV / "bin" / "swift-proxy-server"
        if not binary.exists():
            raise RuntimeError(
                f"Swift is not installed: run scripts/setup.d/20-swift.sh ({binary})"
            )
        memcached = shutil.which("memcached") or "/usr/bin/memcached"
        if not Path(memcached).exists():
            raise RuntimeError("memcached is missing: run scripts/setup.d/20-swift.sh")
        self.ports = {name: free_port() for name in (*SERVICES, "proxy", "memcached")}
        etc = self.root / "etc"
        (self.root / "srv" / "sdb1").mkdir(parents=True, exist_ok=True)
        (self.root / "log").mkdir(exist_ok=True)
        etc.mkdir(exist_ok=True)
        self._write_configs(etc)
        self._build_rings(etc)
        self._spawn("memcached", [memcached, *self._memcached_args()])
        for service in (*SERVICES, "proxy"):
            self._spawn(
                service,
                [str(SWIFT_VENV / "bin" / f"swift-{service}-server"), f"{etc}/{service}.conf"],
            )
        self._wait_ready()

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 5
        for proc in self.procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.procs.clear()
        shutil.rmtree(self.root, ignore_errors=True)

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = open(self.root / "log" / f"{name}.log", "wb")  # noqa: SIM115 - lives with the process
        try:
            proc = subprocess.Popen(
                argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                preexec_fn=_die_with_parent,
            )
        finally:
            log.close()
        self.procs.append(proc)

    def _memcached_args(self) -> list[str]:
        args = [
            "-l",
            "127.0.0.1",
            "-p",
            str(self.ports["memcached"]),
            "-U",
            "0",
            "-m",
            "64",
            "-t",
            "1",
        ]
        if os.geteuid() == 0:
            args += ["-u", "root"]
        return args

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            dead = [p.args for p in self.procs if p.poll() is not None]
            if dead:
                raise RuntimeError(f"Swift process exited at start: {dead}; logs: {self.logs()}")
            try:
                if self._ready():
                    return
            except (OSError, urllib.error.URLError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"Swift did not start in {START_TIMEOUT} s; logs: {self.logs()}")
            time.sleep(0.1)

    def _ready(self) -> bool:
        for name in (*SERVICES, "memcached"):
            with socket.create_connection(("127.0.0.1", self.ports[name]), timeout=1):
                pass
        token = self.get_token()
        request = urllib.request.Request(
            self.storage_url, method="HEAD", headers={"X-Auth-Token": token}
        )
        with urllib.request.urlopen(request, timeout=5) as response:
            return bool(response.status // 100 == 2)

    def logs(self) -> str:
        parts = []
        for path in sorted((self.root / "log").glob("*.log")):
            parts.append(f"--- {path.name}\n{path.read_text(errors='replace')[-2000:]}")
        return "\n".join(parts)

    # -- helpers for tests -----------------------------------------------------

    def get_token(self) -> str:
        """Log in at tempauth; returns the (possibly reused) token."""
        request = urllib.request.Request(
            self.auth_url, headers={"X-Auth-User": self.auth_user, "X-Auth-Key": self.key}
        )
        with urllib.request.urlopen(request, timeout=5) as response:
            return str(response.headers["X-Auth-Token"])

    def revoke_token(self, token: str) -> None:
        """Forget a tempauth token in memcached, so Swift answers 401 to it from now on."""
        keys = [f"AUTH_/token/{token}", f"AUTH_/user/{self.auth_user}"]
        with socket.create_connection(("127.0.0.1", self.ports["memcached"]), timeout=5) as sock:
            for key in keys:
                # Swift's MemcacheRing stores every key under its md5 hex digest.
                hashed = hashlib.md5(key.encode()).hexdigest()
                sock.sendall(f"delete {hashed}\r\n".encode())
                reply = sock.recv(64)
                if reply not in (b"DELETED\r\n", b"NOT_FOUND\r\n"):
                    raise RuntimeError(f"memcached delete failed: {reply!r}")

    # -- configuration -----------------------------------------------------------

    def _write_configs(self, etc: Path) -> None:
        (etc / "swift.conf").write_text(
            "[swift-hash]\nswift_hash_path_suffix = stowage-test\n"
            "swift_hash_path_prefix = stowage-test\n\n"
            "[storage-policy:0]\nname = gold\ndefault = yes\n"
        )
        for service in SERVICES:
            (etc / f"{service}.conf").write_text(
                self._common(etc, service)
                + f"devices = {self.root / 'srv'}\nmount_check = false\n"
                + "disable_fallocate = true\n\n"
                + f"[pipeline:main]\npipeline = {service}-server\n\n"
                + f"[app:{service}-server]\nuse = egg:swift#{service}\n"
            )
        (etc / "proxy.conf").write_text(
            self._common(etc, "proxy")
            + f"\n[pipeline:main]\npipeline = {PROXY_PIPELINE}\n\n"
            + "[app:proxy-server]\nuse = egg:swift#proxy\naccount_autocreate = true\n"
            + "error_suppression_interval = 1\n\n"
            + "[filter:tempauth]\nuse = egg:swift#tempauth\n"
            + f"user_{self.account}_{self.user} = {self.key} .admin {self.storage_url}\n\n"
            + "[filter:s3api]\nuse = egg:swift#s3api\nlocation = us-east-1\n\n"
            + "[filter:cache]\nuse = egg:swift#memcache\n"
            + f"memcache_servers = 127.0.0.1:{self.ports['memcached']}\n"
            # tempauth finds tokens in memcached. With its defaults (2 connections a
            # process, 1 s to get one, 60 s without memcached after 10 failures) the
            # benchmark's 50 connections made the proxy give up on memcached, and every
            # request with a valid token answered 401 for a minute.
            + "memcache_max_connections = 32\npool_timeout = 5\n"
            + "error_suppression_interval = 1\n\n"
            + "".join(
                f"[filter:{name}]\nuse = egg:swift#{name.replace('-', '_')}\n\n"
                for name in (
                    "catch_errors",
                    "gatekeeper",
                    "healthcheck",
                    "proxy-logging",
                    "listing_formats",
                    "bulk",
                    "tempurl",
                    "copy",
                    "slo",
                    "dlo",
                    "versioned_writes",
                    "symlink",
                )
            )
        )

    def _common(self, etc: Path, service: str) -> str:
        user = pwd.getpwuid(os.getuid()).pw_name
        return (
            "[DEFAULT]\nbind_ip = 127.0.0.1\n"
            f"bind_port = {self.ports[service]}\nworkers = 0\nuser = {user}\n"
            f"swift_dir = {etc}\nlog_name = {service}\nlog_level = WARNING\n"
        )

    def _build_rings(self, etc: Path) -> None:
        ports = ", ".join(f"{s!r}: {self.ports[s]}" for s in SERVICES)
        script = (
            "from swift.common.ring import RingBuilder\n"
            f"for name, port in {{{ports}}}.items():\n"
            "    b = RingBuilder(6, 1, 1)\n"
            "    b.add_dev({'region': 1, 'zone': 1, 'ip': '127.0.0.1', 'port': port,"
            " 'device': 'sdb1', 'weight': 100})\n"
            "    b.rebalance()\n"
            f"    b.save('{etc}/' + name + '.builder')\n"
            f"    b.get_ring().save('{etc}/' + name + '.ring.gz')\n"
        )
        run_checked([str(SWIFT_VENV / "bin" / "python"), "-c", script], "Swift's ring builder")
