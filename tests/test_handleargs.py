"""Handles beginning with "-" on the command line (stowage/client/handleargs.py)."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from stowage.client.handleargs import HandleCommand

DASH = "-" + "a" * 18 + "Z"  # a whole handle, as 1 in 64 random handles look
DOUBLE_DASH = "--" + "b" * 18  # 1 in 4096


@click.command(cls=HandleCommand)
@click.argument("handle")
@click.argument("others", nargs=-1)
@click.option("-o", "--output", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True)
def show(handle: str, others: tuple[str, ...], output: Path | None, as_json: bool) -> None:
    click.echo(repr((handle, others, output, as_json)))


def parsed(*args: str) -> str:
    result = CliRunner().invoke(show, list(args))
    assert result.exit_code == 0, result.output
    return result.output.strip()


@pytest.mark.parametrize("handle", [DASH, DOUBLE_DASH, "plainHandle000000000"])
def test_a_whole_handle_is_a_value_even_with_a_leading_dash(handle: str) -> None:
    assert parsed(handle, "--json") == repr((handle, (), None, True))
    assert parsed("--json", handle, DASH) == repr((handle, (DASH,), None, True))


def test_options_still_work_and_may_take_a_dash_handle_as_value() -> None:
    assert parsed("-o", "out.bin", DASH) == repr((DASH, (), Path("out.bin"), False))
    assert parsed("--output", DASH, "h" * 20) == repr(("h" * 20, (), Path(DASH), False))


def test_double_dash_still_ends_the_options() -> None:
    assert parsed("--json", "--", "--json") == repr(("--json", (), None, True))


def test_words_that_are_not_whole_handles_are_still_options() -> None:
    result = CliRunner().invoke(show, ["-abc", "h" * 20])
    assert result.exit_code == 2 and "No such option" in result.output
