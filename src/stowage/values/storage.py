"""Each provider's settings as a typed, frozen class, read from its configuration table.

A configuration (``default_storage``, or one entry of an app's ``storage``) is checked
here, field by field, without importing any provider's SDK: when an app is created or
updated, at start-up, and before a provider is built. A wrong field is named in a
``StorageMisconfigured`` error (503 on use; refused when given); secrets are never quoted.
Unknown keys are ignored, except for ``s3``, which has always refused them.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar
from urllib.parse import urlsplit

from stowage import errors
from stowage.values import coerce

MIB = 1024 * 1024
S = TypeVar("S", bound="ProviderSettings")
#: Field metadata: sizes may be written ``8MiB``; durations ``30s`` (ranges: __post_init__).
SIZE = {"form": coerce.size(low=None)}
DURATION = {"form": coerce.duration(low=None)}


@dataclass(frozen=True)
class ProviderSettings:
    kind: ClassVar[str] = ""
    strict: ClassVar[bool] = False  # True: unknown keys are refused

    def fail(self, name: str, problem: str) -> errors.StorageMisconfigured:
        return _error(self.kind, name, problem)

    def positive(self, *names: str) -> None:
        for name in names:
            if getattr(self, name) <= 0:
                raise self.fail(name, "must be a positive number")


@dataclass(frozen=True)
class LocalSettings(ProviderSettings):
    kind = "local"
    root: str | None = None
    container: str = "default"


@dataclass(frozen=True)
class S3Settings(ProviderSettings):
    kind, strict = "s3", True
    bucket: str
    endpoint_url: str | None = None
    region: str = "us-east-1"
    access_key_id: str | None = None
    secret_access_key: str | None = field(default=None, repr=False)
    session_token: str | None = field(default=None, repr=False)
    addressing_style: str | None = None
    part_size: int = field(default=8 * MIB, metadata=SIZE)
    part_concurrency: int = 4  # parts of one upload in flight (memory: about this + 2 parts)
    connect_timeout: float = field(default=3.0, metadata=DURATION)
    read_timeout: float = field(default=60.0, metadata=DURATION)
    max_attempts: int = 2
    max_connections: int = 100

    def __post_init__(self) -> None:
        if bool(self.access_key_id) != bool(self.secret_access_key):
            raise self.fail("secret_access_key", "set it with access_key_id, or neither")
        if self.endpoint_url is not None:
            parts = urlsplit(self.endpoint_url)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise self.fail("endpoint_url", "must be an http(s)://host[:port] URL")
        if self.addressing_style not in (None, "path", "virtual", "auto"):
            raise self.fail("addressing_style", "must be 'path', 'virtual' or 'auto'")
        if not 5 * MIB <= self.part_size <= 5 * 1024 * MIB:
            raise self.fail("part_size", f"must be from {5 * MIB} (5 MiB) to {5 * 1024 * MIB}")
        if not 1 <= self.part_concurrency <= 64:
            raise self.fail("part_concurrency", "must be an integer from 1 to 64")
        self.positive("connect_timeout", "read_timeout", "max_attempts", "max_connections")


@dataclass(frozen=True)
class GcsSettings(ProviderSettings):
    kind = "gcs"
    bucket: str
    credentials: str | dict[str, Any] | None = field(default=None, repr=False)
    anonymous: bool = False
    endpoint_url: str = "https://storage.googleapis.com"
    chunk_size: int = field(default=8 * MIB, metadata=SIZE)
    timeout: float = field(default=30.0, metadata=DURATION)
    public_acl: bool = True
    retries: int = 3
    retry_backoff: float = field(default=0.5, metadata=DURATION)

    def __post_init__(self) -> None:
        if self.chunk_size <= 0 or self.chunk_size % (256 * 1024):
            raise self.fail("chunk_size", "must be a multiple of 256 KiB")
        self.positive("timeout")


@dataclass(frozen=True)
class AzureSettings(ProviderSettings):
    kind = "azure"
    container: str
    connection_string: str | None = field(default=None, repr=False)
    account_name: str | None = None
    account_key: str | None = field(default=None, repr=False)
    sas_token: str | None = field(default=None, repr=False)
    endpoint_url: str | None = None
    block_size: int = field(default=8 * MIB, metadata=SIZE)
    concurrency: int = 2
    timeout: float = field(default=20.0, metadata=DURATION)
    read_timeout: float = field(default=60.0, metadata=DURATION)
    retries: int = 3
    retry_backoff: float = field(default=0.25, metadata=DURATION)

    def __post_init__(self) -> None:
        if not (self.connection_string or self.account_name or self.endpoint_url):
            raise self.fail("account_name", "set account_name, endpoint_url or connection_string")
        if self.account_key and not (self.account_name or self.connection_string):
            raise self.fail("account_key", "needs account_name")
        if not 0 < self.block_size <= 4000 * MIB:
            raise self.fail("block_size", "must be 1 byte to 4000 MiB")
        if self.concurrency < 1:
            raise self.fail("concurrency", "must be at least 1")
        self.positive("timeout", "read_timeout")


@dataclass(frozen=True)
class RackspaceSettings(ProviderSettings):
    kind = "rackspace"
    identity_url: str
    username: str
    api_key: str = field(repr=False)
    container: str
    region: str | None = None
    internal: bool = False
    segment_size: int = field(default=1024**3, metadata=SIZE)
    inline_limit: int = field(default=8 * MIB, metadata=SIZE)
    max_segments: int = 1000  # Swift's default max_manifest_segments
    # Longer than any upload should take: younger segments may belong to a write in progress.
    orphan_age: float = field(default=24 * 3600.0, metadata=DURATION)
    connect_timeout: float = field(default=10.0, metadata=DURATION)
    read_timeout: float = field(default=300.0, metadata=DURATION)

    def __post_init__(self) -> None:
        self.positive("segment_size", "max_segments", "connect_timeout", "read_timeout")
        if self.inline_limit < 0:
            raise self.fail("inline_limit", "must not be negative")

    @property
    def tokens_url(self) -> str:
        base = self.identity_url.rstrip("/")
        return base if base.endswith("/tokens") else f"{base}/tokens"


@dataclass(frozen=True)
class DropboxSettings(ProviderSettings):
    kind = "dropbox"
    access_token: str | None = field(default=None, repr=False)
    refresh_token: str | None = field(default=None, repr=False)
    app_key: str | None = None
    app_secret: str | None = field(default=None, repr=False)
    root: str = "/"
    chunk_size: int = field(default=8 * MIB, metadata=SIZE)
    timeout: float = field(default=100.0, metadata=DURATION)
    retries: int = 3
    ca_certs: str | None = None

    def __post_init__(self) -> None:
        if not (self.access_token or self.refresh_token):
            raise self.fail("access_token", "set access_token or refresh_token")
        if not 0 < self.chunk_size <= 150 * 1000 * 1000:
            raise self.fail("chunk_size", "must be 1 byte to 150 MB")
        self.positive("timeout")


KINDS: dict[str, type[ProviderSettings]] = {
    cls.kind: cls
    for cls in (
        LocalSettings,
        S3Settings,
        GcsSettings,
        AzureSettings,
        RackspaceSettings,
        DropboxSettings,
    )
}


def check(config: Mapping[str, Any]) -> ProviderSettings:
    """The settings of a configuration of any kind (its ``type``)."""
    kind = str(config.get("type", ""))
    cls = KINDS.get(kind)
    if cls is None:
        raise errors.StorageMisconfigured(f"unknown storage type {kind!r}", field="type")
    return parse(cls, config)


def parse(cls: type[S], config: Mapping[str, Any]) -> S:
    """``cls`` from a configuration table: each value read through the coercion engine in
    the form its field declares (``form`` in its metadata, else its type's). A missing or
    empty value takes the field's default; without one it is required."""
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(config) - set(fields) - {"type"})
    if cls.strict and unknown:
        raise _error(cls.kind, unknown[0], f"is not a setting; known: {', '.join(fields)}")
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for name, spec in fields.items():
        value = config.get(name)
        if value is None or value == "":
            if spec.default is dataclasses.MISSING:
                raise _error(cls.kind, name, "is required")
            continue
        values[name] = _typed(cls.kind, name, value, spec.metadata.get("form"), hints[name])
    return cls(**values)


def _typed(kind: str, name: str, value: Any, form: coerce.Form | None, hint: Any) -> Any:
    accepted = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    options = [coerce.BY_TYPE.get(typing.get_origin(t) or t) for t in accepted]
    forms = [form] if form else [f for f in options if f is not None]
    for candidate in forms:
        try:
            return candidate.parse(name, value)
        except coerce.Invalid:
            continue
    raise _error(kind, name, "must be " + " or ".join(f.expected() for f in forms))


def _error(kind: str, name: str, problem: str) -> errors.StorageMisconfigured:
    return errors.StorageMisconfigured(f"{kind} storage: {name!r} {problem}", field=name)
