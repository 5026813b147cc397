"""The stowage command: apps and sign (serve is covered by tests/e2e)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from stowage.cli import main
from stowage.core.security import check_policy


def run(data_dir: Path, *args: str, input: str | None = None) -> str:
    result = CliRunner().invoke(main, ["--data-dir", str(data_dir), *args], input=input)
    assert result.exit_code == 0, result.output
    return result.output


def test_apps_lifecycle(tmp_path: Path) -> None:
    created = json.loads(run(tmp_path, "apps", "create", "--name", "web", "--security", "--json"))
    key, secret = created["api_key"], created["secret"]
    assert len(key) == 20 and len(secret) >= 24
    listed = run(tmp_path, "apps", "list")
    assert key in listed and "security on" in listed and secret not in listed
    shown = json.loads(run(tmp_path, "apps", "show", key))
    assert shown["name"] == "web" and "secret" not in shown
    gcs = '{"gcs": {"type": "gcs", "bucket": "b"}}'
    run(tmp_path, "apps", "update", key, "--no-security", "--storage", gcs)
    shown = json.loads(run(tmp_path, "apps", "show", key))
    assert shown["security"] is False and shown["providers"] == ["gcs"]
    rotated = run(tmp_path, "apps", "update", key, "--rotate-secret")
    assert secret not in rotated and "app secret:" in rotated
    run(tmp_path, "apps", "delete", key, "--yes")
    result = CliRunner().invoke(main, ["--data-dir", str(tmp_path), "apps", "show", key])
    assert result.exit_code != 0


def test_plain_create_prints_key_and_secret(tmp_path: Path) -> None:
    out = run(tmp_path, "apps", "create")
    assert out.startswith("api key:") and "app secret:" in out


def test_sign_builds_a_policy_the_server_accepts(tmp_path: Path) -> None:
    out = json.loads(
        run(
            tmp_path,
            "sign",
            "--secret",
            "s3cret",
            "--call",
            "read",
            "--call",
            "remove",
            "--handle",
            "H" * 20,
            "--max-size",
            "10",
            "--expires-in",
            "60",
        )
    )
    policy = check_policy("s3cret", out["policy"], out["signature"], now=0, skew=0)
    assert policy.calls == frozenset({"read", "remove"})
    assert policy.handle == "H" * 20 and policy.max_size == 10
    query = run(tmp_path, "sign", "--secret", "s3cret", "--query")
    assert query.startswith("policy=") and "&signature=" in query


def test_sign_reads_the_secret_of_an_app(tmp_path: Path) -> None:
    created = json.loads(run(tmp_path, "apps", "create", "--json"))
    out = json.loads(run(tmp_path, "sign", "--app", created["api_key"]))
    check_policy(created["secret"], out["policy"], out["signature"], now=0, skew=0)


def test_bad_storage_json_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["--data-dir", str(tmp_path), "apps", "create", "--storage", "{nope"]
    )
    assert result.exit_code == 2


@pytest.mark.parametrize(
    "storage, field",
    [
        ('{"rackspace": {"type": "rackspace", "identity_url": "http://127.0.0.1:1/v2.0", '
         '"username": "u", "api_key": "k", "container": "c", "segment_size": "a lot"}}',
         "'segment_size' must be a size"),
        ('{"gcs": {"type": "gcs"}}', "'bucket' is required"),
        ('{"S3": {"type": "s3", "bucket": "b", "endpoint": "http://127.0.0.1:1"}}',
         "'endpoint' is not a setting"),
        ('{"azure": {"type": "azure", "container": "c", "account_name": "a", '
         '"block_size": -1}}', "'block_size' must be 1 byte to 4000 MiB"),
        ('{"nope": {"type": "s3", "bucket": "b"}}', "unknown provider 'nope'"),
        ('{"S3": {"type": "floppy"}}', "unknown storage type 'floppy'"),
    ],
)  # fmt: skip
def test_misconfigured_storage_is_refused_naming_the_field(
    tmp_path: Path, storage: str, field: str
) -> None:
    """A bad configuration is refused when it is given, by create and by update."""
    key = json.loads(run(tmp_path, "apps", "create", "--json"))["api_key"]
    for args in (["create"], ["update", key]):
        result = CliRunner().invoke(
            main, ["--data-dir", str(tmp_path), "apps", *args, "--storage", storage]
        )
        assert result.exit_code == 2, result.output
        assert field in result.output
    shown = json.loads(run(tmp_path, "apps", "show", key))
    assert shown["providers"] == []
