"""Settings are checked when they load, by one coercion engine for the service's settings
and each provider's (issue 22): the same boolean words everywhere, choices refused when
misspelt, ``default_storage`` parsed into its typed settings at load, a bad value stopping
``stowage serve`` with one line, capability groups in the TOML file, and providers built
from settings parsed once."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stowage import booleans, errors
from stowage.config import GROUPS, Settings, group_of, load_settings, setting_fields
from stowage.core.providers import Providers
from stowage.registry.base import App
from stowage.storage import build_provider, local
from stowage.storage.settings import GcsSettings, LocalSettings, S3Settings, parse
from stowage.values import coerce
from stowage.values import storage as provider_settings

SRC = Path(__file__).resolve().parents[1] / "src"


@given(word=st.sampled_from(booleans.WORDS), upper=st.booleans())
def test_providers_and_the_service_read_the_same_boolean_words(word: str, upper: bool) -> None:
    written = word.upper() if upper else word
    expected = word in booleans.TRUE
    assert Settings(fetch_allow_private=written).fetch_allow_private is expected
    assert parse(GcsSettings, {"bucket": "b", "anonymous": written}).anonymous is expected


@given(
    word=st.sampled_from(booleans.WORDS),
    blank=st.sampled_from([chr(c) for c in range(128, 0x3001) if chr(c).isspace()]),
    before=st.booleans(),
)
def test_a_boolean_word_is_trimmed_of_ascii_blanks_only(
    word: str, blank: str, before: bool
) -> None:
    """``\u00a0true`` (a no-break space) is no boolean word, for a query flag or a form
    field as for a setting; `` true\t`` is one."""
    assert booleans.parse(f" {word}\t", "flag") is (word in booleans.TRUE)
    with pytest.raises(errors.InvalidParameter):
        booleans.parse(f"{blank}{word}" if before else f"{word}{blank}", "flag")
    assert not booleans.is_word(f"{blank}{word}")


@pytest.mark.parametrize(
    "name, value",
    [
        ("store_link", "apu"),
        ("log_format", "xml"),
        ("port", "80800"),
        ("max_upload_bytes", "ten"),
        ("edge_ttl", "1.5s"),
        ("webhook_timeout", "-1"),
        ("fetch_background_slot_wait", "-5s"),
        ("api_public_url", "files.example.com/api"),
        ("fetch_allow_private", "maybe"),
        ("edge_cache_urls", "http://10.0.0.5:6081, 10.0.0.6:6081"),
    ],
)
def test_a_bad_value_is_refused_naming_the_setting_and_its_form(name: str, value: str) -> None:
    with pytest.raises(coerce.Invalid) as refused:
        load_settings(**{name: value})
    assert refused.value.name == name
    assert str(refused.value).startswith(f"setting {name}: expected ")
    assert "\n" not in str(refused.value)


TOKENS = st.text(alphabet="0123456789", min_size=10, max_size=30)  # in no message


@given(token=TOKENS, broken=st.sampled_from(["}", ", bad", "[", " x"]))
def test_a_bad_table_is_refused_without_repeating_it(token: str, broken: str) -> None:
    """A storage table holds credentials: the error names the setting, never the text."""
    table = json.dumps({"type": "s3", "bucket": "b", "secret_access_key": token})
    for written in (table[:-1] + broken, table.replace('"b"', "5")):
        with pytest.raises(coerce.Invalid) as refused:
            load_settings(default_storage=written)
        assert token not in str(refused.value)
        assert str(refused.value).startswith("setting default_storage: expected ")


@given(token=TOKENS, name=st.sampled_from(["edge_cache_urls", "api_public_url"]))
def test_a_bad_url_with_a_user_part_is_refused_without_repeating_it(token: str, name: str) -> None:
    with pytest.raises(coerce.Invalid) as refused:
        load_settings(**{name: f"ftp://user:{token}@10.0.0.5:6081"})
    assert token not in str(refused.value) and refused.value.name == name


def test_default_storage_is_parsed_into_its_typed_settings_at_load() -> None:
    loaded = load_settings(default_storage=json.dumps({"type": "s3", "bucket": "b"}))
    assert loaded.default_storage == S3Settings(bucket="b")
    with pytest.raises(coerce.Invalid, match=r"default_storage.*'bucket' is required"):
        load_settings(default_storage='{"type": "s3"}')


@pytest.mark.parametrize(
    "variable, value, named",
    [
        ("STOWAGE_DEFAULT_STORAGE", '{"type": "s3"}', "default_storage"),
        ("STOWAGE_DEFAULT_STORAGE", '{"type": "floppy"}', "default_storage"),
        ("STOWAGE_STORE_LINK", "apu", "store_link"),
        ("STOWAGE_PROCESSING_JOB_SECONDS", "soon", "processing_job_seconds"),
    ],
)
def test_a_bad_setting_stops_serve_with_one_line(
    tmp_path: Path, variable: str, value: str, named: str
) -> None:
    env = {**os.environ, "PYTHONPATH": str(SRC), variable: value}
    result = subprocess.run(
        [sys.executable, "-m", "stowage", "--data-dir", str(tmp_path), "serve", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert f"setting {named}: expected" in lines[0]
    assert not (tmp_path / "stowage.db").exists()  # stopped before anything started


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(value)  # strings and lists of strings: TOML reads JSON's forms


def _changed(value: Any) -> Any:
    """A value of the same form, other than the default."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    if isinstance(value, list):
        return ["http://127.0.0.1:6081"]
    return value


def test_a_grouped_table_and_the_flat_names_give_the_same_settings(tmp_path: Path) -> None:
    defaults = Settings()
    grouped: dict[str, list[str]] = {}
    flat: list[str] = []
    for f in setting_fields():
        group = group_of(f.name)
        if not group:
            continue
        value = _toml(_changed(getattr(defaults, f.name)))
        grouped.setdefault(group, []).append(f"{f.name.removeprefix(GROUPS[group])} = {value}")
        flat.append(f"{f.name} = {value}")
    assert set(grouped) == set(GROUPS)  # every group has settings
    (tmp_path / "grouped.toml").write_text(
        "".join(f"[{g}]\n" + "\n".join(lines) + "\n\n" for g, lines in grouped.items())
    )
    (tmp_path / "flat.toml").write_text("\n".join(flat) + "\n")
    from_groups = load_settings(tmp_path / "grouped.toml")
    assert from_groups == load_settings(tmp_path / "flat.toml")
    assert from_groups.processing_job_seconds == defaults.processing_job_seconds + 1
    assert from_groups != defaults


def test_a_bad_value_in_a_group_is_named_by_its_full_name(tmp_path: Path) -> None:
    (tmp_path / "s.toml").write_text('[processing]\njob_seconds = "soon"\n')
    with pytest.raises(coerce.Invalid, match="setting processing_job_seconds: expected"):
        load_settings(tmp_path / "s.toml")
    (tmp_path / "u.toml").write_text("[processing]\njob_second = 3\n")
    with pytest.raises(ValueError, match="processing_job_second"):
        load_settings(tmp_path / "u.toml")


SIZES = {"": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "KB": 1000, "MB": 1000**2}
SECONDS = {"": 1.0, "ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


@settings(max_examples=200)
@given(amount=st.integers(0, 10**6), unit=st.sampled_from(sorted(SIZES)), lower=st.booleans())
def test_sizes_are_read_alike_by_service_and_providers(amount: int, unit: str, lower: bool) -> None:
    written = f"{amount}{unit.lower() if lower else unit}"
    expected = amount * SIZES[unit]
    assert coerce.size().parse("x", written) == expected
    if expected and expected % (256 * 1024) == 0:
        assert parse(GcsSettings, {"bucket": "b", "chunk_size": written}).chunk_size == expected


@given(amount=st.integers(0, 10**5), unit=st.sampled_from(sorted(SECONDS)))
def test_durations_with_units(amount: int, unit: str) -> None:
    got = coerce.duration().parse("x", f"{amount}{unit}")
    assert got == pytest.approx(amount * SECONDS[unit])


@given(text=st.text(max_size=12))
def test_no_string_crashes_the_engine(text: str) -> None:
    for form in (
        coerce.size(),
        coerce.duration(),
        coerce.integer(0),
        coerce.number(),
        coerce.url(),
    ):
        try:
            form.parse("x", text)
        except coerce.Invalid as exc:
            assert exc.name == "x"


async def test_providers_are_built_from_settings_parsed_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parsed: list[str] = []
    built: list[Any] = []
    real_parse, real_build = provider_settings.parse, local.build

    def counting_parse(cls: Any, config: Any) -> Any:
        parsed.append(cls.kind)
        return real_parse(cls, config)

    def recording_build(typed: Any, data_dir: Path) -> Any:
        built.append(typed)
        return real_build(typed, data_dir)

    monkeypatch.setattr(provider_settings, "parse", counting_parse)
    monkeypatch.setattr(local, "build", recording_build)
    app = App("k" * 20, "s", storage={"S3": {"type": "local", "root": str(tmp_path / "own")}})
    providers = Providers(Settings(data_dir=tmp_path), apps=None)  # type: ignore[arg-type]
    try:
        providers.provider_for(app, "S3")
        providers.provider_for(app, "S3")  # the same provider, not parsed again
        providers.default_provider(App("d" * 20, "s"))
    finally:
        await providers.close()
    assert parsed == ["local"]  # the app's table; the default was typed when settings loaded
    assert built == [
        LocalSettings(root=str(tmp_path / "own")),
        LocalSettings(root=str(tmp_path / "storage" / ("d" * 20))),
    ]
    direct = build_provider(LocalSettings(root=str(tmp_path / "direct")), tmp_path)
    assert built[-1] == LocalSettings(root=str(tmp_path / "direct"))
    await direct.close()
    assert dataclasses.is_dataclass(built[0])
