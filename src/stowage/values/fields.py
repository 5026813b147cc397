"""Settings declared as dataclass fields, read through the coercion engine: the form of a
field (declared in its metadata, else its type's), a value checked against it, and a
config file's capability tables flattened into the fields' names."""

from __future__ import annotations

import dataclasses
import os
import tomllib
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from stowage import errors
from stowage.values import coerce
from stowage.values import storage as provider_settings

Field = dataclasses.Field[Any]
T = TypeVar("T")


def form_of(f: Field, hint: Any) -> coerce.Form | None:
    """How a field's values are written; None for a provider's settings (a table)."""
    declared: coerce.Form | None = f.metadata.get("form")
    if declared is not None or hint is provider_settings.ProviderSettings:
        return declared
    return coerce.BY_TYPE[typing.get_origin(hint) or hint]


def checked(f: Field, hint: Any, value: Any) -> Any:
    """``value`` in the field's typed form, or ``coerce.Invalid`` naming the field."""
    form = form_of(f, hint)
    if form is not None:
        return form.parse(f.name, value)
    if isinstance(value, provider_settings.ProviderSettings):
        return value
    table = coerce.Form("table").parse(f.name, value)
    try:
        return provider_settings.check(table)
    except errors.StorageMisconfigured as exc:
        raise coerce.Invalid(f.name, "a storage table", why=exc.message) from exc


def load(
    cls: type[T],
    config_file: Path | None,
    overrides: Mapping[str, Any],
    groups: Mapping[str, str],
    env_prefix: str,
) -> T:
    """``cls`` from its sources, later ones winning: defaults, a TOML file (capability
    tables flattened), environment variables ``<env_prefix><NAME>``, then ``overrides``
    (None: not given). ``cls`` checks each value itself (``checked``)."""
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    values: dict[str, Any] = {}
    if config_file is not None:
        with open(config_file, "rb") as handle:
            values.update(flat_names(tomllib.load(handle), names, groups))
    for name in names:
        env = os.environ.get(f"{env_prefix}{name.upper()}")
        if env is not None:
            values[name] = env
    values.update({k: v for k, v in overrides.items() if v is not None})
    unknown = set(values) - names
    if unknown:
        raise ValueError(f"unknown settings: {', '.join(sorted(unknown))}")
    return cls(**values)


def flat_names(
    table: Mapping[str, Any], names: set[str], groups: Mapping[str, str]
) -> dict[str, Any]:
    """A config file's keys as field names: with ``groups = {"edge": "edge_"}``, the key
    ``ttl`` of a table ``[edge]`` is ``edge_ttl``; a field's own name is kept as it is."""
    flat: dict[str, Any] = {}
    for key, value in table.items():
        if key in groups and key not in names and isinstance(value, Mapping):
            flat.update({groups[key] + inner: v for inner, v in value.items()})
        else:
            flat[key] = value
    return flat
