"""Numbers in filestack-js's base64 form (``b64/<tasks JSON>``) read as the plain form the
same SDK writes for the same option: JavaScript's ``String(number)``. Python's ``repr``
wrote ``1.2276464256524289e-05`` where the plain URL holds ``0.000012276464256524289``,
so the two forms of one option set were read (and refused) differently."""

from __future__ import annotations

import json
import random
import struct
import subprocess

import pytest

from stowage.processing.b64paths import _number


def _generated(count: int) -> list[float]:
    rng = random.Random(20261202)
    values: list[float] = [0.0, -0.0, 1.0, 5e-324, 1e-7, 9.99e-8, 1e21, 9.99e20, 123456789.0]
    while len(values) < count:
        kind = rng.randrange(3)
        if kind == 0:  # any finite double, by its bits
            value = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
            if value == value and abs(value) != float("inf"):
                values.append(value)
        elif kind == 1:  # around the edges of fixed notation
            values.append(rng.choice([1e-7, 1e-4, 1e16, 1e21]) * rng.uniform(0.5, 2.0))
        else:  # what an option holds: a few digits, small or large
            values.append(
                round(rng.uniform(-1000, 1000), rng.randrange(0, 8)) * 10 ** rng.randrange(-9, 9)
            )
    return values


@pytest.mark.needs("node", by="scripts/setup.d/60-filestack-sdks.sh")
def test_a_number_is_written_as_javascript_writes_it() -> None:
    values = _generated(3000)
    script = (
        "const v = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        "console.log(JSON.stringify(v.map(String)))"
    )
    found = subprocess.run(
        ["node", "-e", script], input=json.dumps(values), capture_output=True, text=True, check=True
    )
    expected = json.loads(found.stdout)
    wrong = [
        (v, _number(v), js) for v, js in zip(values, expected, strict=True) if _number(v) != js
    ]
    assert not wrong, wrong[:5]
