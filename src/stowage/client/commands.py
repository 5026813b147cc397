"""``stowage upload | download | meta | rm | overwrite | ls``: the client commands."""

from __future__ import annotations

import asyncio
import datetime
import json
import sys
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import click

from stowage.client import profile as profiles
from stowage.client.handleargs import HandleCommand
from stowage.client.http import Client, ClientError, UploadOptions
from stowage.client.progress import Progress, human

T = TypeVar("T")
HASHES = ("md5", "sha1", "sha224", "sha256", "sha384", "sha512")


def connection_options(command: Callable[..., Any]) -> Callable[..., Any]:
    for option in reversed(
        [
            click.option(
                "--profile",
                "profile_path",
                help="Profile file (default ~/.config/stowage/profile.toml).",
            ),
            click.option(
                "--profile-name",
                default="default",
                show_default=True,
                help="Table in the profile file.",
            ),
            click.option(
                "--url", help="Server API origin, e.g. http://127.0.0.1:8080 (or STOWAGE_URL)."
            ),
            click.option("--key", help="App API key (or STOWAGE_KEY)."),
            click.option(
                "--secret", help="App secret (or STOWAGE_SECRET); needed for rm, overwrite, ls."
            ),
            click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table."),
        ]
    ):
        command = option(command)
    return command


def _run(conn: dict[str, Any], job: Callable[[Client], Awaitable[T]]) -> T:
    try:
        prof = profiles.load(
            conn["profile_path"],
            conn["profile_name"],
            url=conn["url"],
            key=conn["key"],
            secret=conn["secret"],
        )
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc

    async def run() -> T:
        client = Client(prof)
        try:
            return await job(client)
        finally:
            await client.close()

    try:
        return asyncio.run(run())
    except ClientError as exc:
        raise click.ClickException(str(exc)) from exc
    except OSError as exc:
        raise click.ClickException(f"cannot reach {prof.root}: {exc}") from exc


def _conn(options: dict[str, Any]) -> dict[str, Any]:
    return {k: options.pop(k) for k in ("profile_path", "profile_name", "url", "key", "secret")}


def _table(rows: Iterable[dict[str, Any]], columns: list[str]) -> None:
    rows = list(rows)
    cells = [[_cell(row.get(c)) for c in columns] for row in rows]
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(columns)]
    click.echo("  ".join(c.upper().ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip())
    for r in cells:
        click.echo("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip())


def _cell(value: Any) -> str:
    return "" if value is None else str(value)


def _when(ms: float) -> str:
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S")


def _emit(result: Any, as_json: bool, columns: list[str]) -> None:
    if as_json:
        click.echo(json.dumps(result, indent=2))
    else:
        _table(result if isinstance(result, list) else [result], columns)


@click.command("upload")
@click.argument(
    "files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path)
)
@click.option("--provider", default="S3", show_default=True, help="Storage provider name.")
@click.option("--path", "store_path", help="Storage key or folder (ending in /).")
@click.option("--container", help="Bucket/container.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bars.")
@connection_options
def upload(
    files: tuple[Path, ...],
    provider: str,
    store_path: str | None,
    container: str | None,
    quiet: bool,
    as_json: bool,
    **conn: Any,
) -> None:
    """Upload files, with a progress bar per file and overall. Files of 16 MiB or more
    use the resumable multipart protocol: run the same command again to resume."""
    opts = UploadOptions(provider=provider, path=store_path, container=container)
    sizes = [f.stat().st_size for f in files]
    progress = Progress(sum(sizes), len(files), enabled=not quiet)

    async def job(client: Client) -> list[dict[str, Any]]:
        results = []
        for file, size in zip(files, sizes, strict=True):
            progress.begin(file.name, size)
            results.append(await client.upload(file, opts, progress.advance))
            progress.end()
        return results

    _emit(_run(_conn(conn), job), as_json, ["handle", "filename", "size", "type", "url"])


@click.command("download", cls=HandleCommand)
@click.argument("handle")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write here (default: the file's name).",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@connection_options
def download(handle: str, output: Path | None, quiet: bool, as_json: bool, **conn: Any) -> None:
    """Download a file (streamed to disk, renamed into place when complete)."""
    progress = Progress(0, 1, enabled=not quiet)

    def begin(name: str, size: int) -> None:
        progress.total = size
        progress.begin(name, size)

    async def job(client: Client) -> Path:
        target = await client.download(handle, output, begin, progress.advance)
        progress.end()
        return target

    target = _run(_conn(conn), job)
    _emit(
        {"handle": handle, "file": str(target), "size": target.stat().st_size},
        as_json,
        ["handle", "file", "size"],
    )


@click.command("meta", cls=HandleCommand)
@click.argument("handle")
@click.option(
    "--field",
    "fields",
    multiple=True,
    help="A metadata selector (size, mimetype, ...); repeatable.",
)
@connection_options
def meta(
    handle: str,
    fields: tuple[str, ...],
    as_json: bool,
    **conn: Any,
) -> None:
    """Show a file's metadata; hash flags (--sha256, ...) add its hashes."""
    hashes = [h for h in HASHES if conn.pop(h)]
    selectors = [*fields, *hashes]
    if selectors and not fields:
        selectors = [
            "size",
            "mimetype",
            "filename",
            "uploaded",
            "location",
            "path",
            "container",
            *hashes,
        ]
    result = _run(_conn(conn), lambda c: c.metadata(handle, selectors))
    if as_json:
        click.echo(json.dumps(result, indent=2))
        return
    for name, value in result.items():
        shown = _when(value) if name == "uploaded" else value
        click.echo(f"{name:14} {shown}")


for _hash in reversed(HASHES):
    meta = click.option(f"--{_hash}", is_flag=True, help=f"Include the {_hash} hash.")(meta)


@click.command("rm", cls=HandleCommand)
@click.argument("handles", nargs=-1, required=True)
@connection_options
def rm(handles: tuple[str, ...], as_json: bool, **conn: Any) -> None:
    """Delete files (needs the app secret)."""

    async def job(client: Client) -> list[dict[str, Any]]:
        return [await client.remove(h) for h in handles]

    _emit(_run(_conn(conn), job), as_json, ["handle", "removed", "storage"])


@click.command("overwrite", cls=HandleCommand)
@click.argument("handle")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@connection_options
def overwrite(handle: str, file: Path, quiet: bool, as_json: bool, **conn: Any) -> None:
    """Replace a file's content (needs the app secret)."""
    size = file.stat().st_size
    progress = Progress(size, 1, enabled=not quiet)

    async def job(client: Client) -> dict[str, Any]:
        progress.begin(file.name, size)
        result = await client.overwrite(handle, file, progress.advance)
        progress.end()
        return result

    _emit(_run(_conn(conn), job), as_json, ["handle", "filename", "size", "mimetype", "url"])


@click.command("ls")
@click.option("--limit", type=int, help="At most this many files (default: all).")
@click.option("--after", help="Start after this handle.")
@connection_options
def ls(limit: int | None, after: str | None, as_json: bool, **conn: Any) -> None:
    """List the app's files (needs the app secret)."""

    async def job(client: Client) -> list[dict[str, Any]]:
        files: list[dict[str, Any]] = []
        cursor = after
        while limit is None or len(files) < limit:
            page = await client.list_page(cursor, min(1000, (limit or 1000) - len(files)))
            files += page["files"]
            cursor = page["next"]
            if cursor is None:
                break
        return files

    files = _run(_conn(conn), job)
    if as_json:
        click.echo(json.dumps(files, indent=2))
        return
    rows = [{**f, "size": human(f["size"]), "uploaded": _when(f["uploaded"])} for f in files]
    _table(rows, ["handle", "filename", "size", "mimetype", "uploaded", "provider"])
    sys.stdout.flush()
    click.echo(f"{len(files)} files", err=True)


COMMANDS = [upload, download, meta, rm, overwrite, ls]


def register(group: click.Group) -> None:
    for command in COMMANDS:
        group.add_command(command)
