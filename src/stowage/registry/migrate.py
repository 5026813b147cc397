"""Versioned PostgreSQL migrations: numbered SQL files in ``registry/migrations/``.

``NNNN_name.sql`` files are applied in order, each in its own transaction, by
``stowage db upgrade``; ``stowage_schema`` records the version reached. Upgrades
from several nodes at once are serialised by an advisory lock. A node checks the
version at start-up and refuses to serve on one it does not know.

Rule for new migrations: only add (tables, nullable or defaulted columns, indexes), so
that nodes of the previous release keep working while a rolling upgrade replaces them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

from stowage import errors

_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")
#: Any constant: the advisory lock key that serialises concurrent upgrades.
UPGRADE_LOCK = 0x5354_4F57


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


def migrations() -> list[Migration]:
    folder = resources.files("stowage.registry.migrations")
    found = []
    for entry in folder.iterdir():
        match = _NAME.match(entry.name)
        if match:
            found.append(Migration(int(match[1]), entry.name, entry.read_text("utf-8")))
    found.sort(key=lambda m: m.version)
    if [m.version for m in found] != list(range(1, len(found) + 1)):
        raise RuntimeError("registry migrations must be numbered 0001, 0002, ... without gaps")
    return found


def latest() -> int:
    return migrations()[-1].version


async def current_version(conn: Any) -> int:
    """0 when no migration was ever applied."""
    exists = await conn.fetchval("SELECT to_regclass('stowage_schema') IS NOT NULL")
    if not exists:
        return 0
    return int(await conn.fetchval("SELECT coalesce(max(version), 0) FROM stowage_schema"))


async def upgrade(conn: Any) -> list[str]:
    """Applies the missing migrations; returns their names."""
    applied: list[str] = []
    await conn.execute("SELECT pg_advisory_lock($1)", UPGRADE_LOCK)
    try:
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS stowage_schema ("
            "version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
            "applied TIMESTAMPTZ NOT NULL DEFAULT now())"
        )
        version = await current_version(conn)
        check_known(version)
        for migration in migrations():
            if migration.version <= version:
                continue
            async with conn.transaction():
                await conn.execute(migration.sql)
                await conn.execute(
                    "INSERT INTO stowage_schema (version, name) VALUES ($1, $2)",
                    migration.version,
                    migration.name,
                )
            applied.append(migration.name)
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", UPGRADE_LOCK)
    return applied


def check_known(version: int) -> None:
    if version > latest():
        raise errors.SchemaMismatch(
            f"the registry schema is at version {version}, newer than this node knows "
            f"({latest()}); upgrade Stowage on this node",
            schema=version,
            known=latest(),
        )


def check_current(version: int) -> None:
    """Starting to serve needs exactly the schema this code was written for."""
    check_known(version)
    check_not_older(version)


def check_not_older(version: int) -> None:
    if version < latest():
        raise errors.SchemaMismatch(
            f"the registry schema is at version {version}, this node needs {latest()}; "
            "run `stowage db upgrade`",
            schema=version,
            known=latest(),
        )
