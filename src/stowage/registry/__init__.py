"""The registry is chosen here, once, from ``registry_url``."""

from __future__ import annotations

from stowage.config import Settings
from stowage.registry.base import Registry
from stowage.registry.sqlite import SQLiteRegistry


def build_registry(settings: Settings) -> Registry:
    """SQLite under ``data_dir`` by default; PostgreSQL for a ``postgresql://`` URL."""
    if settings.registry_shared:
        # asyncpg comes with the `postgres` extra: imported only when it is used.
        from stowage.registry.postgres import PostgresRegistry

        size = settings.registry_pool_size
        return PostgresRegistry(settings.registry_url, size, size)
    if settings.registry_url:
        scheme = settings.registry_url.split(":", 1)[0]
        raise ValueError(f"registry_url must be empty or postgresql://...; got {scheme}:...")
    return SQLiteRegistry(settings.registry_path)


async def upgrade_registry(settings: Settings) -> list[str]:
    """``stowage db upgrade``: PostgreSQL applies its missing migrations; SQLite creates or
    updates its schema when it opens."""
    registry = build_registry(settings)
    if settings.registry_shared:
        from stowage.registry.postgres import PostgresRegistry

        assert isinstance(registry, PostgresRegistry)
        applied = await registry.upgrade()
        return [f"applied {name}" for name in applied] or ["schema is current"]
    await registry.open()
    await registry.close()
    return [f"SQLite schema ready at {settings.registry_path}"]


async def schema_versions(settings: Settings) -> tuple[int, int]:
    """(version found, version needed) of the registry's schema."""
    if not settings.registry_shared:
        from stowage.registry.sqlite import SCHEMA_VERSION

        return SCHEMA_VERSION, SCHEMA_VERSION
    from stowage.registry import migrate
    from stowage.registry.postgres import PostgresRegistry

    registry = build_registry(settings)
    assert isinstance(registry, PostgresRegistry)
    return await registry.schema_version(), migrate.latest()
