"""Generates the reference parts of the docs from the code, so they cannot drift.

    .venv/bin/python -m stowage.docs     # rewrites docs/configuration.md and docs/cli.md

``tests/test_docs.py`` fails when the committed files differ from what this makes.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import click

from stowage import booleans
from stowage.cli import main as cli_main
from stowage.config import GROUPS, form_of, group_of, setting_fields
from stowage.values.storage import ProviderSettings

ROOT = Path(__file__).resolve().parents[2]


def configuration_markdown() -> str:
    lines = [
        "# Configuration reference",
        "",
        "Generated from `src/stowage/config.py` by `python -m stowage.docs`; do not edit by hand.",
        "",
        "Every setting can be given, later sources winning: as its default; in a TOML file",
        "(`stowage --config FILE` or `STOWAGE_CONFIG=FILE`); as an environment variable",
        "`STOWAGE_<NAME>` (upper case; JSON for tables); and, for `host`, `port`, `cdn_port`,",
        "`api_public_url`, `cdn_public_url` and `data_dir`, as a command-line option of",
        "`stowage serve` / `stowage`.",
        "",
        "In a TOML file a setting of a capability goes in its table without the prefix, or",
        "at the top level by its full name; both spellings mean the same:",
        "",
        "```toml",
        "[processing]",
        "job_seconds = 10       # the same as: processing_job_seconds = 10",
        "",
        "[edge]",
        'cache_urls = ["http://10.0.0.5:6081"]',
        "```",
        "",
        "Every value is checked when the settings load: a bad one stops `stowage serve` with",
        "one line naming the setting and what it expects. Sizes may be written with a unit",
        "(`512KiB`, `8MiB`, `10GB`), durations too (`250ms`, `30s`, `5m`, `2h`, `7d`), and",
        f"booleans as {', '.join(f'`{w}`' for w in booleans.WORDS)}.",
    ]
    for group in ["", *GROUPS]:
        lines += _group_table(group)
    lines += STORAGE_KEYS
    return "\n".join(lines) + "\n"


def _group_table(group: str) -> list[str]:
    title = f"`[{group}]`" if group else "The service"
    lines = [
        "",
        f"## {title}",
        "",
        "| setting | default | expects | meaning |",
        "|---|---|---|---|",
    ]
    for f in setting_fields():
        if group_of(f.name) != group:
            continue
        default = _declared(f)
        if isinstance(default, ProviderSettings):
            default = {"type": default.kind}
        shown = json.dumps(default) if isinstance(default, dict) else str(default)
        form = form_of(f)
        expects = form.expected() if form else "a storage table (see below)"
        name = f"`{f.name}`" + (f" (`{f.name.removeprefix(GROUPS[group])}`)" if group else "")
        lines.append(f"| {name} | `{shown}` | {expects} | {f.metadata['help']} |")
    return lines


def _declared(f: dataclasses.Field[Any]) -> Any:
    """The default as declared: a loaded one may depend on the machine (``data_dir`` is
    made absolute from the folder the process starts in)."""
    if f.default is not dataclasses.MISSING:
        return f.default
    assert f.default_factory is not dataclasses.MISSING
    return f.default_factory()


# Keys inside a storage's own table (``default_storage`` or an app's storage), not settings
# of their own; the full list per provider is in docs/providers.md.
STORAGE_KEYS = [
    "",
    "## Storage keys",
    "",
    "Each storage (`default_storage`, or an app's `storage`) has keys of its own, listed per",
    "provider in [providers.md](providers.md). Those that trade memory for speed:",
    "",
    "| provider | key | default | meaning |",
    "|---|---|---|---|",
    "| `s3` | `part_size` | `8388608` | Multipart part size in bytes (5 MiB to 5 GiB). |",
    "| `s3` | `part_concurrency` | `4` | Parts of one upload sent at once (1 to 64); a write "
    "holds about `part_concurrency + 2` parts in memory. |",
]


def cli_markdown() -> str:
    lines = [
        "# CLI reference",
        "",
        "Generated from `stowage --help` by `python -m stowage.docs`.",
        "",
    ]

    def walk(command: click.Command, path: list[str]) -> None:
        ctx = click.Context(command, info_name=" ".join(path))
        lines.extend([f"## `{' '.join(path)}`", "", "```", command.get_help(ctx), "```", ""])
        if isinstance(command, click.Group):
            for name in sorted(command.commands):
                walk(command.commands[name], [*path, name])

    walk(cli_main, ["stowage"])
    return "\n".join(lines)


def write() -> None:
    (ROOT / "docs" / "configuration.md").write_text(configuration_markdown())
    (ROOT / "docs" / "cli.md").write_text(cli_markdown())


if __name__ == "__main__":
    write()
