"""A real ``stowage serve`` for the reliability tests, optionally wrapped (``fiu-run``) or
started through ``crashing_serve.py``, with extra settings in its environment."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.e2e.conftest import Server


@dataclass
class Serve(Server):
    wrapper: list[str] = field(default_factory=list)
    module: list[str] = field(default_factory=lambda: ["-m", "stowage"])
    env: dict[str, str] = field(default_factory=dict)

    def create_app(self) -> tuple[str, str]:
        created = json.loads(self.cli("apps", "create", "--json"))
        return created["api_key"], created["secret"]

    def start(self) -> None:
        self.log = self.data_dir.parent / f"serve-{self.port}.log"
        env = {**os.environ, "STOWAGE_FETCH_ALLOW_PRIVATE": "true", **self.env}
        command = [*self.wrapper, sys.executable, *self.module, "--data-dir", str(self.data_dir)]
        command += ["serve", "--port", str(self.port), "--cdn-port", str(self.cdn_port)]
        self.proc = subprocess.Popen(
            command, stdout=self.log.open("ab"), stderr=subprocess.STDOUT, env=env
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"stowage serve exited: {self.log.read_text()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("stowage serve did not start in 30 s")

    def rows(self) -> list[tuple[str, str, int, str]]:
        db = sqlite3.connect(self.data_dir / "stowage.db")
        try:
            return db.execute("SELECT handle, state, size, sha256 FROM files").fetchall()
        finally:
            db.close()

    def intents(self) -> list[tuple[str, int]]:
        """Overwrite intents left in the registry (handle, version)."""
        db = sqlite3.connect(self.data_dir / "stowage.db")
        try:
            return db.execute("SELECT handle, version FROM overwrite_intents").fetchall()
        finally:
            db.close()

    def files(self, api_key: str) -> dict[str, list[str]]:
        root = self.data_dir / "storage" / api_key
        return {
            part: sorted(
                str(p.relative_to(root / part)) for p in (root / part).rglob("*") if p.is_file()
            )
            for part in ("objects", "tmp")
            if (root / part).exists()
        }

    def stop_quietly(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.kill()


def data_dir(tmp: Path) -> Path:
    return tmp / "data"
