"""Managing webhook URLs and reading the delivery log from the command line."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from stowage.cli import main


def invoke(data_dir: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["--data-dir", str(data_dir), *args])
    return result.exit_code, result.output


def test_webhook_urls_are_added_checked_and_cleared(tmp_path: Path) -> None:
    code, out = invoke(tmp_path, "apps", "create", "--json", "--webhook", "https://a.example/h")
    assert code == 0
    key = json.loads(out)["api_key"]
    code, out = invoke(tmp_path, "apps", "update", key, "--webhook", "https://b.example/h")
    assert code == 0 and json.loads(out)["webhooks"] == [
        "https://a.example/h",
        "https://b.example/h",
    ]
    for bad in ("ftp://a.example/h", "https://user:pw@a.example/h", "not a url"):
        code, out = invoke(tmp_path, "apps", "update", key, "--webhook", bad)
        assert code == 2 and "--webhook" in out, out
    code, out = invoke(tmp_path, "apps", "create", "--webhook", "file:///etc/passwd")
    assert code == 2
    code, out = invoke(tmp_path, "apps", "update", key, "--clear-webhooks")
    assert code == 0 and json.loads(out)["webhooks"] == []
    code, out = invoke(
        tmp_path, "apps", "update", key, "--clear-webhooks", "--webhook", "http://c.example/"
    )
    assert code == 0 and json.loads(out)["webhooks"] == ["http://c.example/"]


def test_an_empty_log(tmp_path: Path) -> None:
    assert invoke(tmp_path, "webhooks", "log") == (0, "")
    assert invoke(tmp_path, "webhooks", "log", "--json") == (0, "[]\n")
