"""The ``stowage`` command: serve, manage apps, sign policies."""

from __future__ import annotations

import asyncio
import json
import secrets
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from stowage.client.commands import register as register_client_commands
from stowage.client.handleargs import HandleCommand
from stowage.config import Settings, load_settings
from stowage.core.security import CALLS, encode_policy, sign
from stowage.errors import StowageError
from stowage.migration.commands import register as register_migration_commands
from stowage.registry.base import App
from stowage.storage import check_app_storage

if TYPE_CHECKING:
    from stowage.assembly import Assembly

T = TypeVar("T")


@click.group()
@click.option("--config", type=click.Path(dir_okay=False, path_type=Path), help="TOML config file.")
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), help="Data folder.")
@click.pass_context
def main(ctx: click.Context, config: Path | None, data_dir: Path | None) -> None:
    """Stowage: self-hosted file storage that speaks the Filestack File API."""
    ctx.obj = {"config": config, "data_dir": data_dir}


def _settings(ctx: click.Context, **overrides: Any) -> Settings:
    try:
        return load_settings(ctx.obj["config"], data_dir=ctx.obj["data_dir"], **overrides)
    except (ValueError, OSError) as exc:  # one line naming the setting: "Error: setting ..."
        raise click.ClickException(str(exc)) from exc


def _with_parts(settings: Settings, job: Callable[[Assembly], Awaitable[T]]) -> T:
    """Runs ``job`` on the server's own assembly, opened as a process that serves nothing:
    no start-up recovery (a pending row may be a live node's upload), no workers."""
    # Imported here: `serve` must set up the metrics folder before the server's modules.
    from stowage.assembly import assemble

    async def run() -> T:
        parts = assemble(settings)
        await parts.open()
        try:
            return await job(parts)
        finally:
            await parts.close()

    return _run(run())


def _run(job: Awaitable[T]) -> T:
    """Runs a job; a StowageError (registry down, unknown schema) is a clean CLI error."""

    async def wrapped() -> T:
        return await job

    try:
        return asyncio.run(wrapped())
    except StowageError as exc:
        raise click.ClickException(f"{exc.code}: {exc.message}") from exc
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc


@main.command()
@click.option("--host", help="Bind address (default 127.0.0.1).")
@click.option("--port", type=int, help="API port (default 8080).")
@click.option("--cdn-port", type=int, help="CDN port (default 8081).")
@click.option("--api-public-url", help="Public API root used in links.")
@click.option("--cdn-public-url", help="Public CDN root used in links.")
@click.option("--workers", type=int, help="Worker processes (default 1; 0: one per core).")
@click.pass_context
def serve(ctx: click.Context, /, **options: Any) -> None:
    """Serve the API and CDN origins."""
    settings = _settings(ctx, **options)
    from stowage.observe.logs import configure

    if settings.log_format not in ("text", "json"):
        raise click.UsageError("log_format must be text or json")
    configure(settings.log_level, settings.log_format)
    # The workers' metrics directory must be set before the server's modules are imported.
    from stowage.http.workers import serve_workers, worker_count

    if worker_count(settings) > 1:
        raise SystemExit(serve_workers(settings, _run))
    from stowage.observe.multiproc import single_process

    single_process()
    from stowage.http.app import serve as run_server

    _run(run_server(settings))


@main.group()
def apps() -> None:
    """Create and manage apps (API key, secret, security, storage)."""


def _storage_option(value: str | None) -> dict[str, Any] | None:
    if value is None:
        return None
    try:
        storage = json.loads(value)
    except ValueError as exc:
        raise click.BadParameter("must be JSON") from exc
    if not isinstance(storage, dict):
        raise click.BadParameter('must be a JSON object like {"gcs": {"type": "gcs", ...}}')
    try:
        check_app_storage(storage)
    except StowageError as exc:
        raise click.BadParameter(exc.message) from exc
    return storage


def _webhook_urls(urls: tuple[str, ...]) -> list[str]:
    """Syntax only: whether the address may be reached is checked at each delivery."""
    from stowage.core.urlguard import check_url

    for url in urls:
        try:
            check_url(url, allow_private=True)
        except StowageError as exc:
            raise click.BadParameter(f"{url}: {exc.message}", param_hint="--webhook") from exc
    return list(dict.fromkeys(urls))


@apps.command("create")
@click.option("--name", default="", help="A name for people.")
@click.option("--security/--no-security", default=False, help="Require policies for reads/stores.")
@click.option("--storage", help='Per-provider storage config as JSON, e.g. {"S3": {...}}.')
@click.option("--webhook", "webhooks", multiple=True, help="Webhook URL (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def apps_create(
    ctx: click.Context,
    name: str,
    security: bool,
    storage: str | None,
    webhooks: tuple[str, ...],
    as_json: bool,
) -> None:
    """Create an app; prints its API key and app secret (shown only here)."""
    app = App(
        api_key=secrets.token_urlsafe(15).replace("-", "x").replace("_", "y"),
        secret=secrets.token_urlsafe(24),
        name=name,
        security=security,
        storage=_storage_option(storage) or {},
        webhooks=_webhook_urls(webhooks),
    )
    _with_parts(_settings(ctx), lambda p: p.apps.create(app))
    if as_json:
        click.echo(json.dumps({**app.public(), "secret": app.secret}))
    else:
        click.echo(f"api key:    {app.api_key}\napp secret: {app.secret}")


@apps.command("list")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def apps_list(ctx: click.Context, as_json: bool) -> None:
    """List apps (never their secrets)."""
    found = _with_parts(_settings(ctx), lambda p: p.registry.list_apps())
    if as_json:
        click.echo(json.dumps([a.public() for a in found]))
        return
    for app in found:
        flag = "security on " if app.security else "security off"
        click.echo(f"{app.api_key}  {flag}  {','.join(sorted(app.storage)) or '-':<20} {app.name}")


def _get_app(ctx: click.Context, api_key: str) -> App:
    app = _with_parts(_settings(ctx), lambda p: p.registry.get_app(api_key))
    if app is None:
        raise click.ClickException(f"no app with key {api_key}")
    return app


@apps.command("show")
@click.argument("api_key")
@click.pass_context
def apps_show(ctx: click.Context, api_key: str) -> None:
    """Show one app (never its secret or provider credentials)."""
    click.echo(json.dumps(_get_app(ctx, api_key).public(), indent=2))


@apps.command("update")
@click.argument("api_key")
@click.option("--name")
@click.option("--security/--no-security", default=None)
@click.option("--storage", help="Replace the storage config (JSON).")
@click.option("--rotate-secret", is_flag=True, help="Issue a new app secret and print it.")
@click.option("--webhook", "webhooks", multiple=True, help="Add a webhook URL (repeatable).")
@click.option("--clear-webhooks", is_flag=True, help="Remove every webhook URL first.")
@click.pass_context
def apps_update(
    ctx: click.Context,
    api_key: str,
    name: str | None,
    security: bool | None,
    storage: str | None,
    rotate_secret: bool,
    webhooks: tuple[str, ...],
    clear_webhooks: bool,
) -> None:
    """Change an app's settings."""
    from dataclasses import replace

    app = _get_app(ctx, api_key)
    changes: dict[str, Any] = {}
    if name is not None:
        changes["name"] = name
    if security is not None:
        changes["security"] = security
    if storage is not None:
        changes["storage"] = _storage_option(storage)
    if rotate_secret:
        changes["secret"] = secrets.token_urlsafe(24)
    if webhooks or clear_webhooks:
        kept = [] if clear_webhooks else app.webhooks
        changes["webhooks"] = _webhook_urls((*kept, *webhooks))
    updated = replace(app, **changes)
    # Through the change path: a change of security or storage purges the app's cached files.
    if _with_parts(_settings(ctx), lambda p: p.apps.update(updated)) is None:
        raise click.ClickException(f"no app with key {api_key}")
    click.echo(json.dumps(updated.public(), indent=2))
    if rotate_secret:
        click.echo(f"app secret: {updated.secret}")


@apps.command("delete")
@click.argument("api_key")
@click.confirmation_option(prompt="Delete this app? Its files stay in storage.")
@click.pass_context
def apps_delete(ctx: click.Context, api_key: str) -> None:
    """Delete an app."""
    if _with_parts(_settings(ctx), lambda p: p.apps.delete(api_key)) is None:
        raise click.ClickException(f"no app with key {api_key}")
    click.echo(f"deleted {api_key}")


@main.group()
def db() -> None:
    """The registry's schema (PostgreSQL: versioned migrations)."""


@db.command("upgrade")
@click.pass_context
def db_upgrade(ctx: click.Context) -> None:
    """Create or upgrade the registry schema to this version's. Safe to run on many nodes."""
    from stowage.registry import upgrade_registry

    for line in _run(upgrade_registry(_settings(ctx))):
        click.echo(line)


@db.command("version")
@click.pass_context
def db_version(ctx: click.Context) -> None:
    """Print the registry's schema version and the one this node needs."""
    from stowage.registry import schema_versions

    current, needed = _run(schema_versions(_settings(ctx)))
    click.echo(f"schema {current}, this node needs {needed}")


@main.command("verify", cls=HandleCommand)
@click.argument("handles", nargs=-1)
@click.pass_context
def verify_command(ctx: click.Context, handles: tuple[str, ...]) -> None:
    """Re-hash stored files (all, or HANDLES) against the SHA-256 recorded at write time.
    Exits 1 if any is corrupt, missing or unreadable."""
    from stowage.core.integrity import run_verify

    bad = _with_parts(
        _settings(ctx), lambda p: run_verify(p.registry, p.providers, list(handles), click.echo)
    )
    if bad:
        ctx.exit(1)


@main.command("fsck")
@click.option(
    "--repair", is_flag=True, help="Remove or settle what is reported (see docs/reliability.md)."
)
@click.pass_context
def fsck_command(ctx: click.Context, repair: bool) -> None:
    """Report handles whose objects are missing, overwrites a crash left unsettled, and
    local objects and temporary files that no handle owns. Exits 1 when anything is
    reported."""
    from stowage.core.integrity import run_fsck

    if not _with_parts(
        _settings(ctx), lambda p: run_fsck(p.registry, p.providers, repair, click.echo)
    ):
        ctx.exit(1)


@main.group()
def derivatives() -> None:
    """The derivative cache: the kept results of transformations."""


@derivatives.command("prune")
@click.option("--dry-run", is_flag=True, help="Count what would be removed; remove nothing.")
@click.pass_context
def derivatives_prune(ctx: click.Context, dry_run: bool) -> None:
    """Remove the derivatives no request can reach: of deleted files, of older versions,
    and those an older release rendered (run it after an upgrade). Safe while servers
    run: one removed in a race is made again on its next request."""
    from stowage.processing.cacheprune import prune

    found = _with_parts(
        _settings(ctx),
        lambda p: prune(p.processor.cache, p.registry.get, click.echo, remove=not dry_run),
    )
    click.echo(found.line() + (" (dry run: none removed)" if dry_run else ", removed"))


@main.command("sign")
@click.option("--secret", envvar="STOWAGE_SECRET", help="App secret (or STOWAGE_SECRET).")
@click.option("--app", "api_key", help="Read the secret of this app from the registry instead.")
@click.option("--expiry", type=int, help="Absolute expiry, epoch seconds.")
@click.option("--expires-in", type=int, default=3600, show_default=True, help="Seconds from now.")
@click.option(
    "--call", "calls", multiple=True, type=click.Choice(sorted(CALLS)), help="Repeatable."
)
@click.option("--handle")
@click.option("--url", help="Regex the url must match whole.")
@click.option("--path", help="Regex the storage path must match whole.")
@click.option("--container", help="Regex the container must match whole.")
@click.option("--min-size", type=int)
@click.option("--max-size", type=int)
@click.option("--query", "as_query", is_flag=True, help="Print policy=...&signature=...")
@click.pass_context
def sign_command(
    ctx: click.Context,
    secret: str | None,
    api_key: str | None,
    expiry: int | None,
    expires_in: int,
    calls: tuple[str, ...],
    handle: str | None,
    url: str | None,
    path: str | None,
    container: str | None,
    min_size: int | None,
    max_size: int | None,
    as_query: bool,
) -> None:
    """Build a policy and its signature."""
    if api_key:
        secret = _get_app(ctx, api_key).secret
    if not secret:
        raise click.UsageError("give --secret, STOWAGE_SECRET or --app")
    policy: dict[str, Any] = {"expiry": expiry or int(time.time()) + expires_in}
    optional = {
        "call": list(calls) or None,
        "handle": handle,
        "url": url,
        "path": path,
        "container": container,
        "minSize": min_size,
        "maxSize": max_size,
    }
    policy.update({k: v for k, v in optional.items() if v is not None})
    encoded = encode_policy(policy)
    signature = sign(secret, encoded)
    if as_query:
        click.echo(f"policy={encoded}&signature={signature}")
    else:
        click.echo(json.dumps({"policy": encoded, "signature": signature, "decoded": policy}))


@main.group()
def webhooks() -> None:
    """Webhook deliveries (docs/webhooks.md)."""


@webhooks.command("log")
@click.option("--app", "api_key", help="Only this app's deliveries.")
@click.option("--limit", type=int, default=50, show_default=True, help="Newest N deliveries.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def webhooks_log(ctx: click.Context, api_key: str | None, limit: int, as_json: bool) -> None:
    """Show recent webhook deliveries: status, attempts, last response and error."""
    found = _with_parts(_settings(ctx), lambda p: p.registry.webhook_log(api_key, limit))
    if as_json:
        click.echo(json.dumps([d.public() for d in found]))
        return
    for d in found:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(d.created))
        code = d.response_code if d.response_code is not None else "-"
        click.echo(
            f"{d.id:>6} {when} {d.api_key} {d.action:<12} {d.handle} {d.status:<10} "
            f"attempts={d.attempts} code={code} {d.url}"
            + (f"  error: {d.last_error}" if d.last_error else "")
        )


register_client_commands(main)  # upload, download, meta, rm, overwrite, ls
register_migration_commands(main)  # import, migrate, backup, restore


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
