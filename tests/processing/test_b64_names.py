"""A task name or an option key in filestack-js's base64 form holding anything but
letters, digits and ``_`` is refused (``400 INVALID_PARAMETER``, ``details.parameter`` =
``b64``), never spliced into the plain form to be read as other options:
``{"width:100,height": 50}`` had become two options, a name ``resize=width:100`` had
carried its own. Generated names and keys (seeds 5107, 5108), each one character of the
grammar or beyond put into a name the table has; the same names and keys without it are
still read as the plain form."""

from __future__ import annotations

import base64
import json
import random
from typing import Any

import pytest

from stowage import errors
from stowage.processing import grammar

H = "AbCdEfGhIjKlMnOpQrSt"
#: What the grammar reads (and more a key could hold): each is refused in a name or key.
INSERTED = (
    *':,=/[]"',
    " ",
    "\t",
    "\n",
    "%",
    "%3A",
    "%2C",
    "'",
    ".",
    "-",
    "+",
    "?",
    "#",
    "é",
    "\u00a0",
    "\uff1a",
    "\u212a",
)
TASKS: dict[str, dict[str, Any]] = {
    "resize": {"width": 100, "height": 50, "fit": "crop"},
    "blur": {"amount": 2},
    "rotate": {"deg": 90, "background": "red"},
    "border": {"width": 3, "color": "blue"},
    "quality": {"value": 60},
    "flip": {},
    "imagesize": {},
}


def _b64(value: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


def _broken(rng: random.Random, word: str) -> str:
    at = rng.randint(0, len(word))
    extra = rng.choice(INSERTED)
    if rng.random() < 0.3:  # the probe's shapes: options or a task inside the word
        extra = rng.choice([":100,height", "=width:100", ":1/flip", ",fit:crop"])
    return word[:at] + extra + word[at:]


@pytest.mark.parametrize("seed", [5107, 5108])
def test_a_name_or_key_with_other_characters_is_refused(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(400):
        name = rng.choice(sorted(TASKS))
        params = dict(TASKS[name])
        if params and rng.random() < 0.6:
            key = rng.choice(sorted(params))
            params[_broken(rng, key)] = params.pop(key)
            what = "key"
        else:
            name = _broken(rng, name)
            what = "task name"
        task: dict[str, Any] = {"name": name}
        if params or rng.random() < 0.5:
            task["params"] = params or rng.choice([True, False, None, {}])
        path = f"/KEY/b64/{_b64([{'name': 'flip'}, task])}/{H}"
        with pytest.raises(errors.InvalidParameter, match=what) as refused:
            grammar.parse_path(path)
        assert refused.value.details["parameter"] == "b64", path
        assert refused.value.status == 400


@pytest.mark.parametrize("seed", [5107, 5108])
def test_the_names_and_keys_of_the_table_are_read_as_the_plain_form(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(100):
        names = rng.sample(sorted(TASKS), rng.randint(1, 3))
        listed = [{"name": n, "params": TASKS[n] or True} for n in names]
        spelled = [  # any case, as the table reads a name
            {**t, "name": t["name"].upper() if rng.random() < 0.2 else t["name"]} for t in listed
        ]
        read = grammar.parse_path(f"/KEY/b64/{_b64(spelled)}/{H}")
        plain = [
            t["name"]
            + (
                "=" + ",".join(f"{k}:{v}" for k, v in t["params"].items())
                if t["params"] is not True
                else ""
            )
            for t in spelled
        ]
        assert read.tasks == grammar.parse_path("/KEY/" + "/".join([*plain, H])).tasks
