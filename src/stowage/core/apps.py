"""Apps created, updated and deleted through the one change path (``core/events.py``).

The command line changes apps in a process that serves nothing; its changes still purge
what the caches hold of the app (a file of an app that turned security on, or was
deleted, must not be served from a cache) and reach every sink, as a file's do.
"""

from __future__ import annotations

from stowage.core import events
from stowage.core.events import Change, Changes
from stowage.registry.base import App, AppRows


class Apps:
    def __init__(self, rows: AppRows, changes: Changes) -> None:
        self.rows = rows
        self.changes = changes

    async def create(self, app: App) -> None:
        await self.rows.create_app(app)
        await self._committed(Change(events.APP_CREATE, app))

    async def update(self, app: App) -> App | None:
        """Replaces the app's row; returns the app as it was, or None if there is none."""
        previous = await self.rows.get_app(app.api_key)
        if previous is None:
            return None
        await self.rows.update_app(app)
        await self._committed(Change(events.APP_UPDATE, app, previous_app=previous))
        return previous

    async def delete(self, api_key: str) -> App | None:
        """Deletes the app's row (its files stay in storage); returns the deleted app."""
        app = await self.rows.get_app(api_key)
        if app is None or not await self.rows.delete_app(api_key):
            return None
        await self._committed(Change(events.APP_DELETE, app))
        return app

    async def _committed(self, change: Change) -> None:
        await self.changes.purge(change)  # before the command says it is done
        await self.changes.publish(change)
