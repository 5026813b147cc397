"""A real ``stowage serve`` for the reliability tests, optionally wrapped (``fiu-run``) or
started through ``crashing_serve.py``, with extra settings in its environment."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.servers.stowage_serve import StowageServe


class Serve(StowageServe):
    """The server, and what the reliability tests read of its data folder."""

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


def data_dir(tmp: Path) -> Path:
    return tmp / "data"
