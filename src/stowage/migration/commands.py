"""The commands that move files in, between backends, and back: ``import``, ``migrate``,
``backup`` and ``restore`` (docs/operations.md), registered on the ``stowage`` group by
``cli.py``."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import click

from stowage.config import Settings, load_settings
from stowage.errors import StowageError


def _settings(ctx: click.Context) -> Settings:
    root = ctx.find_root()
    try:
        return load_settings(root.obj["config"], data_dir=root.obj["data_dir"])
    except (ValueError, OSError) as exc:
        raise click.UsageError(str(exc)) from exc


def _run(job: Any) -> Any:
    try:
        return asyncio.run(job)
    except StowageError as exc:
        raise click.ClickException(f"{exc.code}: {exc.message}") from exc


class Progress:
    """A bar on a terminal; elsewhere a plain line every twentieth of the run, and a line
    for each failure as it happens."""

    def __init__(self, total: int | None, label: str) -> None:
        self.total = total
        self.counts: dict[str, int] = {}
        self.done = 0
        self.bar: Any = None
        if sys.stdout.isatty() and total is not None:
            self.bar = click.progressbar(length=total, label=label)
            self.bar.__enter__()
        self.step = max(1, total // 20) if total else 100

    def __call__(self, status: str, handle: str, reason: str = "") -> None:
        self.done += 1
        self.counts[status] = self.counts.get(status, 0) + 1
        if self.bar is not None:
            self.bar.update(1)
            return
        if reason and status == "failed":
            click.echo(f"failed {handle}: {reason}")
        if self.done % self.step == 0 or self.done == self.total:
            tally = ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items()))
            click.echo(f"{self.done}/{self.total or '?'} ({tally})")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)


def _read_list(source: str) -> str:
    if source == "-":
        return sys.stdin.read()
    try:
        return Path(source).read_text()
    except OSError as exc:
        raise click.BadParameter(str(exc), param_hint="LIST") from exc


@click.command("import")
@click.argument("list_file", metavar="LIST")
@click.option("--app", "api_key", required=True, help="The app here that receives the files.")
@click.option("--from", "cdn", required=True, help="The old CDN base URL.")
@click.option("--old-key", help="The old app's API key, sent with each request.")
@click.option("--old-secret", envvar="STOWAGE_OLD_SECRET", help="The old app's secret.")
@click.option("--old-policy", help="A policy (read, stat) of the old app, with --old-signature.")
@click.option("--old-signature", help="The signature of --old-policy.")
@click.option("--provider", default="S3", show_default=True, help="Where to store them here.")
@click.option("--concurrency", type=click.IntRange(1, 256), default=8, show_default=True)
@click.option("--overwrite", is_flag=True, help="Replace a different file under a handle.")
@click.option("--state", type=click.Path(dir_okay=False, path_type=Path), help="Journal file.")
@click.option(
    "--trust-journal", is_flag=True, help="Skip what the journal lists without asking the old side."
)
@click.option("--report", type=click.Path(dir_okay=False, path_type=Path), help="Write JSON.")
@click.pass_context
def import_command(
    ctx: click.Context,
    list_file: str,
    api_key: str,
    cdn: str,
    old_key: str | None,
    old_secret: str | None,
    old_policy: str | None,
    old_signature: str | None,
    provider: str,
    concurrency: int,
    overwrite: bool,
    state: Path | None,
    trust_journal: bool,
    report: Path | None,
) -> None:
    """Import files from another File API service, keeping their handles. LIST is a file
    (or - for stdin): handles or file URLs one a line, or the old side's export (CSV or
    JSON). Safe to run again: what is stored is skipped. Exits 1 if any file failed."""
    from stowage.migration.entries import read_entries
    from stowage.migration.importer import ImportOptions, run_import
    from stowage.migration.oldside import OldService

    try:
        entries = read_entries(_read_list(list_file))
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="LIST") from exc
    if old_secret:
        old = OldService.with_secret(cdn, old_key, old_secret)
    elif bool(old_policy) != bool(old_signature):
        raise click.UsageError("give --old-policy and --old-signature together")
    else:
        old = OldService(cdn, old_key, old_policy, old_signature)
    options = ImportOptions(api_key, provider, concurrency, overwrite, state, trust_journal)
    progress = Progress(len(entries), "importing")
    try:
        done = _run(
            run_import(
                _settings(ctx),
                entries,
                old,
                options,
                lambda o: progress(o.status, o.handle, o.reason),
            )
        )
    finally:
        progress.close()
    _finish(ctx, done.as_json(), report, ("imported", "skipped", "failed"))


def _finish(
    ctx: click.Context, summary: dict[str, Any], report: Path | None, keys: tuple[str, ...]
) -> None:
    if report is not None:
        report.write_text(json.dumps(summary, indent=2) + "\n")
    click.echo(", ".join(f"{k} {summary[k]}" for k in keys) + f" in {summary['seconds']} s")
    for failure in summary.get("failures", []):
        click.echo(f"  failed {failure['handle']}: {failure['reason']}")
    if summary.get("failed"):
        ctx.exit(1)


@click.command("migrate")
@click.option(
    "--to",
    "to_config",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The target's TOML config (registry_url, default_storage, data_dir).",
)
@click.option("--to-data-dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--app", "apps", multiple=True, help="Only this app (repeatable; default all).")
@click.option("--storage", help="Replace the apps' storage config in the target (JSON).")
@click.option("--concurrency", type=click.IntRange(1, 256), default=8, show_default=True)
@click.option("--prune", is_flag=True, help="Remove target files the source no longer has.")
@click.option("--report", type=click.Path(dir_okay=False, path_type=Path), help="Write JSON.")
@click.pass_context
def migrate_command(
    ctx: click.Context,
    to_config: Path,
    to_data_dir: Path | None,
    apps: tuple[str, ...],
    storage: str | None,
    concurrency: int,
    prune: bool,
    report: Path | None,
) -> None:
    """Copy apps, rows and files from this configuration's registry and storage to the
    one of --to, under the same handles, verified by SHA-256. The source is only read.
    Run it again to resume or to copy what changed. Exits 1 if any file failed."""
    from stowage.migration.mover import MigrateOptions, run_migrate

    try:
        target = load_settings(to_config, data_dir=to_data_dir)
    except (ValueError, OSError) as exc:
        raise click.UsageError(f"--to: {exc}") from exc
    options = MigrateOptions(apps, concurrency, prune, _storage_json(storage))
    progress = Progress(None, "migrating")
    try:
        done = _run(
            run_migrate(
                _settings(ctx), target, options, lambda o: progress(o.status, o.handle, o.reason)
            )
        )
    finally:
        progress.close()
    summary = done.as_json()
    summary["copied"] = summary.pop("imported")
    _finish(ctx, summary, report, ("apps", "copied", "skipped", "failed", "pruned"))


def _storage_json(value: str | None) -> dict[str, Any] | None:
    if value is None:
        return None
    from stowage.storage import check_app_storage

    try:
        storage = json.loads(value)
        check_app_storage(storage)
    except (ValueError, StowageError) as exc:
        raise click.BadParameter(str(exc), param_hint="--storage") from exc
    if not isinstance(storage, dict):
        raise click.BadParameter("must be a JSON object", param_hint="--storage")
    return storage


@click.command("backup")
@click.argument("dest", type=click.Path(file_okay=False, path_type=Path))
@click.pass_context
def backup_command(ctx: click.Context, dest: Path) -> None:
    """Back up the embedded registry (SQLite, online) and the files on local disk into
    DEST, a new directory, while the server runs. Exits 1 if a file could not be copied
    as its row describes it (the backup then stays in DEST.partial)."""
    from stowage.migration.backup import Backup

    progress = Progress(None, "backing up")
    summary = _run(Backup(_settings(ctx), dest, lambda h: progress("copied", h)).run())
    _finish_files(ctx, summary, f"backup in {dest}")


@click.command("restore")
@click.argument("source", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.pass_context
def restore_command(ctx: click.Context, source: Path) -> None:
    """Restore a backup made by ``stowage backup`` into the data directory (which must
    have no registry yet), re-hashing every file. Exits 1 if any file does not match."""
    from stowage.migration.backup import restore

    settings = _settings(ctx)
    progress = Progress(None, "restoring")
    summary = _run(restore(settings, source, lambda h: progress("copied", h)))
    _finish_files(ctx, summary, f"restored into {settings.data_dir}")


def _finish_files(ctx: click.Context, summary: dict[str, Any], done: str) -> None:
    click.echo(f"{summary['files']} files, {summary['bytes']} bytes")
    for location, count in summary["elsewhere"].items():
        click.echo(f"  {count} files in {location}: not copied (back that store up itself)")
    for failure in summary["failures"]:
        click.echo(f"  failed {failure['handle']}: {failure['reason']}")
    if summary["failures"]:
        ctx.exit(1)
    click.echo(done)


def register(main: click.Group) -> None:
    for command in (import_command, migrate_command, backup_command, restore_command):
        main.add_command(command)
