"""Generates the reference parts of the docs from the code, so they cannot drift.

    .venv/bin/python -m stowage.docs     # rewrites docs/configuration.md and docs/cli.md

``tests/test_docs.py`` fails when the committed files differ from what this makes.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from stowage.cli import main as cli_main
from stowage.config import Settings, setting_fields

ROOT = Path(__file__).resolve().parents[2]


def configuration_markdown() -> str:
    defaults = Settings()
    lines = [
        "# Configuration reference",
        "",
        "Generated from `src/stowage/config.py` by `python -m stowage.docs`; do not edit by hand.",
        "",
        "Every setting can be given, later sources winning: as its default; in a TOML file",
        "(`stowage --config FILE` or `STOWAGE_CONFIG=FILE`, keys as named below); as an",
        "environment variable `STOWAGE_<NAME>` (upper case; JSON for tables); and, for",
        "`host`, `port`, `cdn_port`, `api_public_url`, `cdn_public_url` and `data_dir`, as a",
        "command-line option of `stowage serve` / `stowage`.",
        "",
        "| setting | environment | default | meaning |",
        "|---|---|---|---|",
    ]
    for f in setting_fields():
        default = getattr(defaults, f.name)
        shown = json.dumps(default) if isinstance(default, dict) else str(default)
        lines.append(
            f"| `{f.name}` | `STOWAGE_{f.name.upper()}` | `{shown}` | {f.metadata['help']} |"
        )
    lines += STORAGE_KEYS
    return "\n".join(lines) + "\n"


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
