"""What every settings module shares: a setting's declaration."""

from __future__ import annotations

import json
from dataclasses import field
from typing import Any

from stowage.values import coerce

GiB = 1024**3
MiB = 1024**2


def setting(default: Any, help: str, form: coerce.Form | None = None) -> Any:
    """A setting: its default, its help text and, when its type alone does not say it, the
    form its values take (a size, a duration, a range, a choice, a URL)."""
    metadata = {"help": help, "form": form}
    if isinstance(default, dict | list):
        return field(default_factory=lambda: json.loads(json.dumps(default)), metadata=metadata)
    return field(default=default, metadata=metadata)
