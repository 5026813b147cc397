"""A throwaway PostgreSQL cluster for the registry and multi-node tests.

Debian's server (``scripts/setup.d/80-postgres.sh``) is started once per session:
``initdb`` into a fresh folder, ``postgres`` on a free loopback port, trust auth for
the one superuser ``stowage``, no fsync (nothing here outlives the session). PostgreSQL
refuses to run as root, so as root the cluster runs as the ``postgres`` user. It is
stopped by its pid at the end and its folder removed.
"""

from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.servers.ports import free_port
from tests.servers.procs import run_checked

SUPERUSER = "stowage"
_OPTIONS = [
    *("-c", "listen_addresses=127.0.0.1", "-c", "max_connections=300"),
    *("-c", "fsync=off", "-c", "full_page_writes=off", "-c", "synchronous_commit=off"),
]


def _bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if not found:
        raise RuntimeError(f"PostgreSQL's {name} is missing: run scripts/setup.d/80-postgres.sh")
    return found[-1]


def _run_as() -> dict[str, Any]:
    if os.geteuid() != 0:
        return {}
    user = pwd.getpwnam("postgres")
    return {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}


@dataclass
class PostgresServer:
    port: int
    proc: subprocess.Popen[bytes]
    folder: Path

    def dsn(self, database: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def psql(self, sql: str, database: str = "postgres") -> str:
        argv = [_bin("psql"), "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", self.dsn(database)]
        return run_checked(argv, "psql", input=sql).stdout

    def new_database(self) -> str:
        """A fresh, empty database; returns its DSN."""
        name = "t_" + secrets.token_hex(6)
        self.psql(f"CREATE DATABASE {name}")
        return self.dsn(name)


def _wait_ready(server: PostgresServer, log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            raise RuntimeError(f"postgres exited with {server.proc.returncode}: {tail(log)}")
        ready = subprocess.run(
            [_bin("pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(server.port)], check=False
        )
        if ready.returncode == 0:
            return
        time.sleep(0.1)
    raise RuntimeError(f"postgres not ready after {timeout}s: {tail(log)}")


def tail(log: Path) -> str:
    try:
        return log.read_text(errors="replace")[-3000:]
    except OSError:
        return "(no log)"


def start_postgres(
    initdb_options: Sequence[str] = (), server_options: Sequence[str] = ()
) -> PostgresServer:
    """A new cluster, running; a failed ``initdb`` or start raises with the server's own
    output (the options are there to prove that with a bad one)."""
    folder = Path(tempfile.mkdtemp(prefix="stowage-pg-"))
    as_user = _run_as()
    if as_user:
        os.chown(folder, as_user["user"], as_user["group"])
    data, log = folder / "data", folder / "postgres.log"
    initdb = [_bin("initdb"), "-D", str(data), "-U", SUPERUSER, "-A", "trust", "-E", "UTF8"]
    try:
        run_checked([*initdb, *initdb_options], "PostgreSQL's initdb", **as_user)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    port = free_port()
    with open(log, "wb") as out:
        argv = [_bin("postgres"), "-D", str(data), "-p", str(port), "-k", str(folder)]
        proc = subprocess.Popen(
            [*argv, *_OPTIONS, *server_options],
            stdout=out,
            stderr=subprocess.STDOUT,
            **as_user,
        )
    server = PostgresServer(port, proc, folder)
    try:
        _wait_ready(server, log, 30)
    except BaseException:
        stop_postgres(server)
        raise
    return server


def stop_postgres(server: PostgresServer) -> None:
    if server.proc.poll() is None:
        server.proc.send_signal(signal.SIGINT)  # fast shutdown: ends every session
        try:
            server.proc.wait(20)
        except subprocess.TimeoutExpired:
            server.proc.kill()
            server.proc.wait(10)
    shutil.rmtree(server.folder, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    server = start_postgres()
    try:
        yield server
    finally:
        stop_postgres(server)
