"""Where the client finds its server and credentials: options, then the environment
(``STOWAGE_URL``, ``STOWAGE_KEY``, ``STOWAGE_SECRET``), then a profile file
(``~/.config/stowage/profile.toml`` or ``--profile``)."""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

DEFAULT_PROFILE = Path("~/.config/stowage/profile.toml")
DEFAULT_URL = "http://127.0.0.1:8080"


@dataclass(frozen=True)
class Profile:
    url: str
    key: str
    secret: str = ""

    @property
    def root(self) -> str:
        """The API origin, without a trailing ``/api``."""
        return self.url.rstrip("/").removesuffix("/api")


def load(path: str | None = None, section: str = "default", **given: str | None) -> Profile:
    """``given`` (options) win over the environment, which wins over the file."""
    values = _file(path, section)
    for name in ("url", "key", "secret"):
        env = os.environ.get(f"STOWAGE_{name.upper()}")
        if env:
            values[name] = env
        if given.get(name):
            values[name] = str(given[name])
    if not values.get("key"):
        raise ValueError(
            "no API key: set STOWAGE_KEY, pass --key, or write key = ... in "
            f"{path or DEFAULT_PROFILE}"
        )
    return Profile(values.get("url") or DEFAULT_URL, values["key"], values.get("secret", ""))


def _file(path: str | None, section: str) -> dict[str, str]:
    file = Path(path).expanduser() if path else DEFAULT_PROFILE.expanduser()
    if not file.is_file():
        if path:
            raise ValueError(f"profile file {file} does not exist")
        return {}
    data = tomllib.loads(file.read_text())
    table = data.get(section, data)  # [default] table, or flat keys
    if not isinstance(table, dict):
        raise ValueError(f"{file}: [{section}] is not a table")
    return {k: str(v) for k, v in table.items() if k in ("url", "key", "secret")}
