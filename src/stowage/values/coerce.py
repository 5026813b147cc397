"""The one coercion engine of settings: service settings (``config.py``) and each
provider's (``values/storage.py``) are read through it, so a value is written the same
way wherever it goes.

A ``Form`` says how a value is written and what it may be: a boolean (``booleans``'
words), an integer or a number with a range, a size (``8MiB``, ``10GB``, bytes), a
duration (``250ms``, ``30s``, ``5m``, ``2h``, ``7d``, seconds), a URL of given schemes, one
of some choices, a list, a table. ``parse`` returns the typed value or raises ``Invalid``,
whose message names the setting and the expected form in one line.
"""

from __future__ import annotations

import ipaddress
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from stowage import booleans

_SIZE_UNITS = {
    "": 1,
    "b": 1,
    "k": 1024,
    "kb": 1000,
    "kib": 1024,
    "m": 1024**2,
    "mb": 1000**2,
    "mib": 1024**2,
    "g": 1024**3,
    "gb": 1000**3,
    "gib": 1024**3,
    "t": 1024**4,
    "tb": 1000**4,
    "tib": 1024**4,
}
_DURATION_UNITS = {"": 1.0, "ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_AMOUNT = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)\s*$", re.IGNORECASE)


class Invalid(ValueError):
    """A value that does not fit its form: ``str(exc)`` is the one line to show."""

    def __init__(self, name: str, expected: str, value: Any = None, *, why: str = "") -> None:
        self.name, self.expected = name, expected
        shown = repr(value)
        if _hidden(name, expected, value):
            shown = "a secret" if _secret(name) else "a value not shown (it may hold credentials)"
        told = f"; {why}" if why else f"; got {shown}"
        super().__init__(f"setting {name}: expected {expected}{told}")


@dataclass(frozen=True)
class Form:
    kind: str  # bool, int, float, size, duration, str, url, urls, choice, list, table, path,
    # header (a header's value)
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    #: url: the schemes accepted; ``empty``: "" (unset) is accepted too.
    schemes: tuple[str, ...] = ("http", "https")
    empty: bool = True
    #: int/size/duration: the result is an int (else a float for numbers and durations).
    whole: bool = False

    def expected(self) -> str:
        what = {
            "bool": f"a boolean ({', '.join(booleans.WORDS)})",
            "int": "an integer",
            "float": "a number",
            "size": "a size (bytes, or with a unit: 512KiB, 8MiB, 10GB)",
            "duration": "a duration (seconds, or with a unit: 250ms, 30s, 5m, 2h, 7d)",
            "str": "a string",
            "url": f"a URL ({' or '.join(s + '://...' for s in self.schemes)})",
            "choice": "one of " + ", ".join(self.choices),
            "list": "a list of strings (a TOML list, or comma-separated)",
            "urls": f"a list of URLs ({' or '.join(s + '://...' for s in self.schemes)}; "
            "a TOML list, or comma-separated)",
            "table": "a table (a TOML table, or JSON)",
            "path": "a path",
            "networks": "comma-separated addresses or networks (127.0.0.1, 10.0.0.0/8, ::1)",
            "header": "a header value (printable ASCII, not blank)",
        }[self.kind]
        if self.kind == "url" and self.empty:
            what += " or empty"
        return what + self._range()

    def _range(self) -> str:
        if self.kind == "header" and self.high is not None:
            return f" of at most {_num(self.high)} characters"
        if self.low is not None and self.high is not None:
            return f" from {_num(self.low)} to {_num(self.high)}"
        if self.low is not None:
            return f" of at least {_num(self.low)}"
        if self.high is not None:
            return f" of at most {_num(self.high)}"
        return ""

    def parse(self, name: str, value: Any) -> Any:
        try:
            result = _READERS[self.kind](self, value)
        except (ValueError, TypeError, OverflowError):
            result = None
        if result is None or not self._in_range(result):
            raise Invalid(name, self.expected(), value)
        return result

    def _in_range(self, value: Any) -> bool:
        if self.kind == "header":
            return self.high is None or len(value) <= self.high
        if self.kind not in ("int", "float", "size", "duration"):
            return True
        return (self.low is None or value >= self.low) and (self.high is None or value <= self.high)


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _secret(name: str) -> bool:
    words = ("secret", "key", "token", "password", "credentials", "registry_url")
    return any(word in name for word in words)


def _hidden(name: str, expected: str, value: Any) -> bool:
    """A value an error must not repeat: a secret's, a table's (a storage table holds
    its credentials), or one holding a URL with a user part (``https://user:pw@host``)."""
    text = str(value)
    return _secret(name) or "table" in expected or ("://" in text and "@" in text)


def _bool(form: Form, value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and booleans.is_word(value):
        return booleans.parse(value, "value")
    return None


def _amount(value: Any, units: Mapping[str, float] | None) -> float | None:
    """A number, or a string of one (with one of ``units`` when given)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        amount = float(value)
    elif not isinstance(value, str):
        return None
    elif units is None:
        amount = float(value)
    else:
        match = _AMOUNT.match(value)
        unit = units.get(match[2].lower()) if match else None
        if match is None or unit is None:
            return None
        amount = float(match[1]) * unit
    return amount if math.isfinite(amount) else None


def _whole(amount: float | None) -> int | None:
    return int(amount) if amount is not None and amount.is_integer() else None


def _int(form: Form, value: Any) -> int | None:
    return _whole(_amount(value, None))


def _float(form: Form, value: Any) -> float | None:
    return _amount(value, None)


def _size(form: Form, value: Any) -> int | None:
    return _whole(_amount(value, _SIZE_UNITS))


def _duration(form: Form, value: Any) -> float | int | None:
    seconds = _amount(value, _DURATION_UNITS)
    return _whole(seconds) if form.whole else seconds


def _str(form: Form, value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _networks(form: Form, value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    for entry in (e.strip() for e in value.split(",")):
        if entry:
            ipaddress.ip_network(entry, strict=False)  # ValueError: refused
    return value


def _header(form: Form, value: Any) -> str | None:
    """Sent as it is in a request's header: no line break, control or non-ASCII
    character can split or corrupt the request."""
    if not isinstance(value, str) or not value.strip():
        return None
    return value if all(" " <= c <= "~" for c in value) else None


def _url(form: Form, value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    if value == "":
        return value if form.empty else None
    parts = urlsplit(value)
    return value if parts.scheme in form.schemes and parts.netloc else None


def _choice(form: Form, value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    return value if value in form.choices else None


def _list(form: Form, value: Any) -> list[str] | None:
    if isinstance(value, str):  # comma-separated in the environment
        return [item.strip() for item in value.split(",") if item.strip()]
    if isinstance(value, list | tuple) and all(isinstance(item, str) for item in value):
        return list(value)
    return None


def _urls(form: Form, value: Any) -> list[str] | None:
    items = _list(form, value)
    one = Form("url", schemes=form.schemes, empty=False)
    if items is None or any(_url(one, item) is None for item in items):
        return None
    return items


def _table(form: Form, value: Any) -> dict[str, Any] | None:
    if isinstance(value, str):
        value = json.loads(value)
    return dict(value) if isinstance(value, Mapping) else None


def _path(form: Form, value: Any) -> Path | None:
    # Absolute from the folder the process starts in: sandboxed engines (bubblewrap) bind
    # folders by absolute path, and a relative data_dir made every Office conversion fail.
    # ``~`` as a shell would read it: a TOML file or a quoted variable is not expanded.
    return Path(value).expanduser().absolute() if isinstance(value, str | Path) else None


_READERS: dict[str, Any] = {
    "bool": _bool,
    "int": _int,
    "float": _float,
    "size": _size,
    "duration": _duration,
    "str": _str,
    "url": _url,
    "choice": _choice,
    "list": _list,
    "urls": _urls,
    "table": _table,
    "path": _path,
    "networks": _networks,
    "header": _header,
}

#: The form of a type when a setting declares none.
BY_TYPE: dict[type, Form] = {
    bool: Form("bool"),
    int: Form("int"),
    float: Form("float"),
    str: Form("str"),
    Path: Form("path"),
    list: Form("list"),
    dict: Form("table"),
}


def size(low: float | None = 0, high: float | None = None) -> Form:
    return Form("size", low=low, high=high, whole=True)


def duration(low: float | None = 0, high: float | None = None, *, whole: bool = False) -> Form:
    return Form("duration", low=low, high=high, whole=whole)


def integer(low: float | None = None, high: float | None = None) -> Form:
    return Form("int", low=low, high=high)


def number(low: float | None = None, high: float | None = None) -> Form:
    return Form("float", low=low, high=high)


def url(*schemes: str, empty: bool = True) -> Form:
    return Form("url", schemes=schemes or ("http", "https"), empty=empty)


def urls(*schemes: str) -> Form:
    return Form("urls", schemes=schemes or ("http", "https"))


def networks() -> Form:
    return Form("networks")


def header(longest: int) -> Form:
    return Form("header", high=longest)


def choice(*choices: str) -> Form:
    return Form("choice", choices=choices)
