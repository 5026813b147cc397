"""The one task table: every image task has its operation, no two tasks or spellings
collide, and every parameter of every task is parsed and range-checked (values are
generated from each parameter's declared check: in range accepted, out of range a 400
naming ``task.param``)."""

from __future__ import annotations

import re
import string
import sys
import unicodedata
from decimal import ROUND_FLOOR, Decimal

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from stowage import booleans, errors
from stowage.processing import (
    catalogue,
    composite,
    documents,
    effects,
    effects_regions,
    facetasks,
    grammar,
    params,
    previewtask,
    request_tasks,
    subjects,
    videooptions,
)
from stowage.processing.base import Value, _text
from stowage.processing.params import Choice, Either, Integer, Number, Whole
from stowage.processing.table import Kind, Param, TaskSpec

SPECS = sorted(
    {spec.name: spec for spec in catalogue.TABLE.values()}.values(), key=lambda s: s.name
)
PARAMS = [(spec, param) for spec in SPECS for param in spec.params]
#: Draws per parameter and property: the 215 parameters through eight properties are
#: 1,085 cases, some 16,000 generated values a run. 25 a case took 59 s of a quiet
#: machine (120 in CI), nearly all of it in hypothesis' drawing; 15 take 33.
EXAMPLES = 15
WORDS = st.text(string.ascii_lowercase, min_size=1, max_size=12)
PLAIN = st.text(string.ascii_letters + string.digits + "._-", min_size=1, max_size=40)
HANDLES = st.text(string.ascii_letters + string.digits + "_", min_size=20, max_size=20)
SHORT = st.text(string.ascii_letters, min_size=1, max_size=19)  # no handle: too short
_UPRIGHT, _ACROSS = ["top", "bottom", "center", "middle"], ["left", "right", "center", "middle"]
#: A position pair: a vertical and a horizontal one, in either order.
PAIRS = st.tuples(st.sampled_from(_UPRIGHT), st.sampled_from(_ACROSS), st.booleans()).map(
    lambda p: (p[0], p[1]) if p[2] else (p[1], p[0])
)
#: Pairs that contradict themselves, or hold faces.
CONTRADICTIONS = st.sampled_from(
    [("top", "bottom"), ("bottom", "top"), ("left", "right"), ("top", "top"), ("left", "left")]
    + [("faces", name) for name in ("top", "left", "center", "faces")]
)
PAGE_RANGE = (
    st.integers(1, 9999)
    | st.integers(1, 999).map(lambda n: f"{n}-")
    | st.integers(1, 999).map(lambda n: f"-{n}")
    | st.tuples(st.integers(1, 99), st.integers(0, 99)).map(lambda p: f"{p[0]}-{sum(p)}")
)


def decimals(low: float, high: float) -> st.SearchStrategy[Value]:
    return st.integers(round(low * 1000), round(high * 1000)).map(lambda i: i / 1000)


def inside(check: object) -> st.SearchStrategy[Value]:
    """Values ``check`` must accept."""
    if isinstance(check, Integer):  # the schema's integer: a decimal is rounded
        return st.integers(check.low, check.high) | decimals(check.low, check.high)
    if isinstance(check, Number):
        return decimals(check.low, check.high)
    if isinstance(check, Whole):  # 0 means not given: test_zero_leaves_a_size_unset
        return st.integers(check.low, check.high) | decimals(check.low, _top(check))
    if isinstance(check, Choice):
        return st.sampled_from(check.names)
    if isinstance(check, Either):
        return inside(check.first) | inside(check.second)
    if isinstance(check, effects.Pair):
        return st.tuples(*[inside(Integer(check.low, check.high))] * 2)
    known: dict[object, st.SearchStrategy[Value]] = {
        params.boolean: st.sampled_from(booleans.WORDS) | st.booleans() | st.sampled_from([0, 1]),
        request_tasks.seconds: inside(Integer(0, request_tasks.MAX_EXPIRY)) | st.just("max"),
        params.text: PLAIN,
        request_tasks.token: PLAIN,
        params.texts: PLAIN | st.lists(PLAIN, min_size=1, max_size=4).map(tuple),
        params.color: st.sampled_from(sorted(params.COLOR_NAMES))
        | st.text("0123456789abcdef", min_size=6, max_size=6),
        params.dims: st.tuples(*[inside(Integer(0, 5000))] * 2, *[inside(Integer(1, 5000))] * 2),
        params.align: st.sampled_from(params.ALIGNS) | PAIRS,
        effects_regions.objects: st.lists(
            st.tuples(
                st.integers(0, 10_000),
                st.integers(0, 10_000),
                st.integers(1, 10_000),
                st.integers(1, 10_000),
            ),
            min_size=1,
            max_size=effects_regions.MAX_OBJECTS,
        ).map(tuple),
        facetasks.face_choice: st.just("all")
        | st.integers(1, facetasks.MAX_FACES)
        | st.lists(st.integers(1, facetasks.MAX_FACES), min_size=1, max_size=5).map(tuple),
        subjects.metadata_fields: st.sampled_from(subjects.METADATA_FIELDS)
        | st.lists(
            st.sampled_from(subjects.METADATA_FIELDS), min_size=1, max_size=4, unique=True
        ).map(tuple),
        videooptions.clock: st.integers(0, 86_399)
        | st.sampled_from(["00:00:05", "01:02:03.5", "59:59", "5.250", "0:0:1"]),
        videooptions.extension: st.sampled_from(["mp4", ".mp4", "webm", ".MOV", "m3u8", "3gp"]),
        composite.handle: HANDLES,
        composite.handles: HANDLES | st.lists(HANDLES, min_size=1, max_size=4).map(tuple),
        documents.page_ranges: st.lists(PAGE_RANGE, min_size=1, max_size=5).map(tuple),
        previewtask.stylesheet: st.builds(
            "https://{}.example.com/{}".format,
            st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=20),
            st.text("abcdefghijklmnopqrstuvwxyz0123456789._~!$&()*+=:@/-", max_size=40),
        ),
    }
    assert check in known, f"no generator for the check {check!r}: add it here"
    return known[check]


def half_up(value: Value) -> int:
    """``value`` rounded to the nearest whole number, halves up (2.5 is 3, -2.5 is -2),
    computed apart from the code under test: in decimal arithmetic, from its spelling."""
    assert isinstance(value, int | float)
    exact = Decimal(repr(value))
    return int((exact + Decimal("0.5")).to_integral_value(rounding=ROUND_FLOOR))


def _top(check: Whole) -> float:
    """The largest decimal ``check`` takes: below the modulus of an angle that wraps."""
    return check.modulo - 0.001 if check.modulo else check.high


def outside(check: object) -> st.SearchStrategy[Value]:
    """Values ``check`` must refuse."""
    if isinstance(check, Integer):
        return st.integers(-(10**11), check.low - 1) | st.integers(check.high + 1, 10**11)
    if isinstance(check, Number):
        return decimals(-1e6, check.low - 0.001) | decimals(check.high + 0.001, 1e6)
    if isinstance(check, Whole):
        floor = 0 if check.zero_unset else check.low
        above = check.modulo or check.high + 0.001  # an angle wraps: 359.6 is 0, 360 is out
        return decimals(-1e6, floor - 0.001) | decimals(above, 1e6)
    if isinstance(check, Choice):
        return WORDS.filter(lambda w: w not in check.names)
    if isinstance(check, Either):
        both = outside(check.first) | outside(check.second)
        return both.filter(lambda v: _refused(check.first, v) and _refused(check.second, v))
    if isinstance(check, effects.Pair):
        wrong = outside(Integer(check.low, check.high))
        return (
            st.tuples(wrong, st.integers(check.low, check.high))
            | st.integers()
            | st.tuples(*[st.integers(check.low, check.high)] * 3)
        )
    nested = st.just((("a",),))
    known: dict[object, st.SearchStrategy[Value]] = {
        params.boolean: WORDS.filter(lambda w: w not in booleans.WORDS)
        | st.integers().filter(lambda n: n not in (0, 1)),
        request_tasks.seconds: st.integers(-(10**11), -1)
        | st.integers(request_tasks.MAX_EXPIRY + 1, 10**11)
        | WORDS.filter(lambda w: w != "max"),
        params.text: st.lists(PLAIN, min_size=1, max_size=3).map(tuple),
        request_tasks.token: st.lists(PLAIN, min_size=1, max_size=3).map(tuple),
        videooptions.clock: st.integers(86_400, 10**6)
        | st.sampled_from(["24:00:00", "00:60:00", "1:2:3:4", "abc", "-5"]),
        videooptions.extension: st.sampled_from(["toolongext9", "mp-4", "m p4", "mp4!"]),
        params.texts: nested,
        params.color: st.text("ghijkmnopqsuvxz", min_size=1, max_size=8).filter(
            lambda w: w not in params.COLOR_NAMES  # "pink" is one
        ),
        params.dims: st.tuples(st.integers(0, 9), st.integers(0, 9), st.integers(1, 9))
        | st.tuples(st.integers(0, 9), st.integers(0, 9), st.integers(0, 9), st.just(0))
        | st.tuples(st.integers(-99, -1), st.integers(0, 9), st.integers(1, 9), st.integers(1, 9)),
        params.align: WORDS.filter(lambda w: w not in params.ALIGNS)
        | st.lists(st.sampled_from(params.ALIGNS), min_size=3, max_size=4).map(tuple)
        | CONTRADICTIONS,
        effects_regions.objects: st.just(((0, 0, 0, 5),))
        | st.just(((10_001, 0, 5, 5),))
        | st.just(((1, 2, 3),))
        | st.just(tuple((0, 0, 5, 5) for _ in range(effects_regions.MAX_OBJECTS + 1)))
        | st.integers(),
        facetasks.face_choice: WORDS.filter(lambda w: w != "all")
        | st.integers(-(10**6), 0)
        | st.integers(facetasks.MAX_FACES + 1, 10**6)
        | st.lists(st.integers(facetasks.MAX_FACES + 1, 10**6), min_size=1, max_size=3).map(tuple),
        subjects.metadata_fields: WORDS.filter(lambda w: w not in subjects.METADATA_FIELDS)
        | st.sampled_from(subjects.METADATA_FIELDS).map(lambda name: (name, name)),
        composite.handle: SHORT | st.lists(HANDLES, min_size=2, max_size=3).map(tuple),
        composite.handles: SHORT | st.just(()) | st.lists(SHORT, min_size=2, max_size=3).map(tuple),
        documents.page_ranges: st.just(0)
        | st.sampled_from(["x", "0-2", "3-1", "1-2-3", "--"])
        | st.just(((1,),)),
        previewtask.stylesheet: st.sampled_from(
            ["http://a.example/x.css", "javascript:alert(1)", "https://", "//a.example/x.css"]
        )
        | st.builds("https://a.example/{}x.css".format, st.sampled_from(list("'<>; ,#`\\{}|^")))
        | st.integers(),
    }
    assert check in known, f"no generator for the check {check!r}: add it here"
    return known[check]


def _refused(check: params.Convert, value: Value) -> bool:
    try:
        check(value)
    except ValueError:
        return True
    return False


def segment(spec: TaskSpec, spelling: str, value: Value, data: st.DataObject) -> str:
    """``spec=spelling:value``, with a valid value of a parameter the task needs."""
    items = [f"{spelling}:{_text(value)}"]
    needed = [p for p in spec.params if p.name in spec.needs_one_of]
    if needed and not any(spelling in (p.name, *p.short) for p in needed):
        items.append(f"{needed[0].name}:{_text(data.draw(inside(needed[0].check)))}")
    return f"{spec.name}={','.join(items)}"


def _id(pair: tuple[TaskSpec, Param]) -> str:
    return f"{pair[0].name}.{pair[1].name}"


def test_every_image_task_has_an_operation_and_no_other_does() -> None:
    for spec in SPECS:
        assert (spec.op is not None) == (spec.kind is Kind.IMAGE), spec.name
        assert spec.op is None or callable(spec.op)
    assert {"resize", "crop", "rotate", "flip", "output", "store", "cache"} <= set(SPECS_NAMES)


SPECS_NAMES = [spec.name for spec in SPECS]


def test_no_two_tasks_or_spellings_collide() -> None:
    names = [n for spec in SPECS for n in (spec.name, *spec.aliases)]
    assert len(names) == len(set(names)) == len(catalogue.TABLE)
    for spec in SPECS:
        spellings = [s for p in spec.params for s in (p.name, *p.short)]
        assert len(spellings) == len(set(spellings)), spec.name
    twice = (*catalogue.MODULES, (TaskSpec("flip", op=lambda image, task: image),))
    with pytest.raises(RuntimeError, match="declared twice"):
        catalogue._table(twice)
    alias = (*catalogue.MODULES, (TaskSpec("x", op=lambda i, t: i, aliases=("round_corners",)),))
    with pytest.raises(RuntimeError, match="declared twice"):
        catalogue._table(alias)
    with pytest.raises(RuntimeError, match="operation"):
        catalogue._table(((TaskSpec("noop"),),))


@pytest.mark.parametrize("pair", PARAMS, ids=_id)
@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data())
def test_every_parameter_in_range_is_accepted(
    pair: tuple[TaskSpec, Param], data: st.DataObject
) -> None:
    spec, param = pair
    value = data.draw(inside(param.check))
    for spelling in (param.name, *param.short):
        task = grammar.parse_task(segment(spec, spelling, value, data))
        assert task.name == spec.name
        assert task.get(param.name) == param.check(value)


@pytest.mark.parametrize("pair", PARAMS, ids=_id)
@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data())
def test_every_parameter_out_of_range_is_refused(
    pair: tuple[TaskSpec, Param], data: st.DataObject
) -> None:
    spec, param = pair
    value = data.draw(outside(param.check))
    for spelling in (param.name, *param.short):
        with pytest.raises(errors.InvalidParameter) as caught:
            grammar.parse_task(segment(spec, spelling, value, data))
        assert caught.value.status == 400
        assert caught.value.code == "INVALID_PARAMETER"
        assert caught.value.details["parameter"] == f"{spec.name}.{param.name}"
        if isinstance(param.check, Either):  # the reason names both kinds of value taken
            assert "; or " in str(caught.value), str(caught.value)


def quoted(value: Value) -> str:
    """``value`` with every item in double quotes: ``"60"``, ``["1","2"]``."""
    if isinstance(value, tuple):
        return "[" + ",".join(quoted(v) for v in value) + "]"
    return '"' + (value if isinstance(value, str) else _text(value)) + '"'


@pytest.mark.parametrize("pair", PARAMS, ids=_id)
@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data())
def test_every_parameter_quoted_is_the_value_unquoted(
    pair: tuple[TaskSpec, Param], data: st.DataObject
) -> None:
    """A quoted number, boolean or name is read as the same value unquoted, by every
    check (``cache=expiry:"60"`` was refused while ``resize=width:"60"`` worked)."""
    spec, param = pair
    value = data.draw(inside(param.check))
    for spelling in (param.name, *param.short):
        plain = segment(spec, spelling, value, data)
        item = f"{spelling}:{_text(value)}"
        assert plain.startswith(f"{spec.name}={item}")
        both = plain.replace(item, f"{spelling}:{quoted(value)}", 1)
        task = grammar.parse_task(both)
        assert task.get(param.name) == grammar.parse_task(plain).get(param.name), both


def respelled(value: Value, data: st.DataObject) -> str:
    """``value`` with each number spelled as a saved URL may have it: leading zeros or a
    plus sign (``0100``, ``+100``), a decimal with zeros around it (``00.50``), with
    seventeen digits or an exponent as a program prints a computed one (``1e-07``)."""
    if isinstance(value, tuple):
        return "[" + ",".join(respelled(v, data) for v in value) + "]"
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return _text(value)
    zeros = "0" * data.draw(st.integers(1, 3))
    if isinstance(value, int):
        return data.draw(st.sampled_from([zeros + str(value), "+" + str(value)]))
    return data.draw(
        st.sampled_from(
            [
                zeros + repr(value) + "0" * data.draw(st.integers(0, 2)),
                f"{value:.16e}",  # 1.3333333333333334e+02: as C and Python print it
                f"{value:.17g}",  # 1.0000000000000001e-07, 133.33333333333334: JS, Python
            ]
        )
    )


def _reads_numbers(check: object) -> bool:
    if isinstance(check, Either):
        return _reads_numbers(check.first) or _reads_numbers(check.second)
    return isinstance(check, Integer | Whole | Number | effects.Pair) or check in (
        params.dims,
        effects_regions.objects,
        facetasks.face_choice,
        request_tasks.seconds,
        documents.page_ranges,  # pages:[2.0,3.0], [+2], [2e0]: filestack-python's floats
    )


NUMERIC = [(spec, param) for spec, param in PARAMS if _reads_numbers(param.check)]


def _has_number(value: Value) -> bool:
    if isinstance(value, tuple):
        return any(_has_number(v) for v in value)
    return isinstance(value, int | float) and not isinstance(value, bool) and value >= 0


@pytest.mark.parametrize("pair", NUMERIC, ids=_id)
@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data())
def test_every_number_spelled_otherwise_is_the_same_number(
    pair: tuple[TaskSpec, Param], data: st.DataObject
) -> None:
    """A number with leading zeros or a plus sign is that number wherever a number is
    read, alone or in a list (``width:0100`` was refused while ``width:100`` worked)."""
    spec, param = pair
    value = data.draw(inside(param.check))
    assume(_has_number(value))
    for spelling in (param.name, *param.short):
        plain = segment(spec, spelling, value, data)
        item = f"{spelling}:{_text(value)}"
        other = plain.replace(item, f"{spelling}:{respelled(value, data)}", 1)
        task = grammar.parse_task(other)
        assert task.get(param.name) == grammar.parse_task(plain).get(param.name), other


@pytest.mark.parametrize("pair", PARAMS, ids=_id)
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_empty_items_between_options_change_nothing(
    pair: tuple[TaskSpec, Param], data: st.DataObject
) -> None:
    """``resize=width:100,`` and ``a:1,,b:2`` are the task without the empty items."""
    spec, param = pair
    plain = segment(spec, param.name, data.draw(inside(param.check)), data)
    name, _, body = plain.partition("=")
    items = grammar.split(body, ",")
    for _ in range(data.draw(st.integers(1, 3))):
        items.insert(data.draw(st.integers(0, len(items))), data.draw(st.sampled_from(["", " "])))
    spaced = f"{name}={','.join(items)}"
    assert grammar.parse_task(spaced) == grammar.parse_task(plain), spaced


def test_store_locations_are_the_api_providers() -> None:
    from stowage.storage import API_PROVIDERS

    location = catalogue.TABLE["store"].param("location")
    assert location is not None and isinstance(location.check, Choice)
    assert set(location.check.names) == {name.lower() for name in API_PROVIDERS}


def test_the_docs_list_every_task_with_its_short_names() -> None:
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "transformations.md").read_text()
    rows = {line.split("|")[1].strip(): line for line in doc.splitlines() if line.startswith("| `")}
    for spec in SPECS:
        if spec.kind is Kind.REQUEST and spec.name != "store":
            # security, cache, fallback: in the addresses; debug, which takes no option, too
            assert f"`{spec.name}=" in doc or f"`/{spec.name}/" in doc, spec.name
            continue
        row = next((line for key, line in rows.items() if key.startswith(f"`{spec.name}`")), "")
        assert row, f"docs/transformations.md has no row for {spec.name}"
        for param in spec.params:
            assert f"`{param.name}`" in row, f"{spec.name}.{param.name} is not in its row"
            for short in param.short:
                assert f"(`{short}`)" in row, f"{spec.name}.{param.name}'s short name {short}"


WHOLES = [(spec, param) for spec, param in PARAMS if isinstance(param.check, Whole)]


@pytest.mark.parametrize("pair", WHOLES, ids=_id)
@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data())
def test_a_decimal_is_rounded_to_the_whole_number(
    pair: tuple[TaskSpec, Param], data: st.DataObject
) -> None:
    """The SDK schema types sides, percentages and angles as numbers (``width:150.5``)."""
    spec, param = pair
    check = param.check
    assert isinstance(check, Whole)
    value = data.draw(decimals(check.low, _top(check)))
    task = grammar.parse_task(segment(spec, param.name, value, data))
    half_up = int(value + 0.5)
    assert task.get(param.name) == (half_up % check.modulo if check.modulo else half_up)


def _integer(check: object) -> Integer | None:
    """The schema-integer check ``check`` is or starts with (``radius``: a number or max)."""
    first = check.first if isinstance(check, Either) else check
    return first if isinstance(first, Integer) else None


#: (frame_count's 1-1 holds no decimal)
INTEGERS = [
    (spec, param)
    for spec, param in PARAMS
    if (check := _integer(param.check)) is not None and check.low < check.high
]


@pytest.mark.parametrize("pair", INTEGERS, ids=_id)
@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data())
def test_a_decimal_in_an_integers_range_is_rounded_half_up(
    pair: tuple[TaskSpec, Param], data: st.DataObject
) -> None:
    """Every option the SDK schema types ``integer`` takes a decimal in its range, rounded
    half up, as sides and angles are (``pixelate=amount:2.5`` was refused)."""
    spec, param = pair
    check = _integer(param.check)
    assert check is not None
    value = data.draw(decimals(check.low, check.high).filter(lambda v: v != int(v)))
    for spelling in (param.name, *param.short):
        task = grammar.parse_task(segment(spec, spelling, value, data))
        assert task.get(param.name) == half_up(value), (spec.name, spelling, value)


def _rounding(check: object) -> Integer | Whole | None:
    return _integer(check) or (check if isinstance(check, Whole) else None)


ROUNDED = [(s, p) for s, p in PARAMS if (c := _rounding(p.check)) is not None and c.low < c.high]


@pytest.mark.parametrize("pair", ROUNDED, ids=_id)
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_a_number_a_hair_from_a_half_rounds_to_its_side(
    pair: tuple[TaskSpec, Param], data: st.DataObject
) -> None:
    """Halves up, exactly: ``width:100.49999999999999999999`` (a float of 100.5) was 101,
    and ``0.49999999999999994`` (the float under 0.5) 1."""
    spec, param = pair
    check = _rounding(param.check)
    assert check is not None
    whole = data.draw(st.integers(check.low, check.high - 1))
    under = f"{whole}.4" + "9" * data.draw(st.integers(13, 38))
    over = f"{whole}.5" + "0" * data.draw(st.integers(0, 30))
    for text, expected in ((under, whole), (over, whole + 1)):
        if isinstance(check, Whole) and check.zero_unset and expected == 0:
            continue  # 0 leaves the size unset: test_zero_leaves_a_size_unset
        task = grammar.parse_task(segment(spec, param.name, text, data))
        modulo = check.modulo if isinstance(check, Whole) else 0
        assert task.get(param.name) == (expected % modulo if modulo else expected), text


def test_blur_and_sharpen_amounts_are_the_schemas_integers() -> None:
    """filestack-js types blur's and sharpen's ``amount`` as integer: 0.5 is 1, not a sigma
    of 0.5."""
    for name in ("blur", "sharpen"):
        param = catalogue.TABLE[name].param("amount")
        assert param is not None and _integer(param.check) == Integer(0, 20), name


@pytest.mark.parametrize("pair", [p for p in WHOLES if p[1].check.zero_unset], ids=_id)  # type: ignore[attr-defined]
@settings(max_examples=5, deadline=None)
@given(data=st.data())
def test_zero_leaves_a_size_unset(pair: tuple[TaskSpec, Param], data: st.DataObject) -> None:
    """0, which the SDK schema allows, is the parameter not given; so is a decimal that
    rounds to 0 (``width:0.4`` made a 1-pixel-wide image)."""
    spec, param = pair
    others = [p for p in spec.needs_one_of if p != param.name]
    zero = data.draw(st.just(0) | decimals(0.001, 0.499))
    text = segment(spec, param.name, zero, data)
    if param.name in spec.needs_one_of and others:
        text += f",{others[0]}:20"
    assert param.name not in dict(grammar.parse_task(text).options)


# --- only ASCII digits, blanks and letters are read as such ----------------------------------

#: Every digit of another script (``int()`` reads them: ``int("\u0661\u0662")`` is 12).
OTHER_DIGITS = [
    chr(c)
    for c in range(sys.maxunicode + 1)
    if unicodedata.category(chr(c)) == "Nd" and not chr(c).isascii()
]
#: Every blank ``str.strip()`` trims that is not ASCII (no-break space, U+2028, U+3000, ...).
OTHER_BLANKS = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace() and c > 127]
#: Every character that is not ASCII but lower-cases to ASCII (the KELVIN SIGN is ``k``).
FOLDED_TO_ASCII = {
    chr(c).lower(): chr(c)
    for c in range(128, sys.maxunicode + 1)
    if chr(c).lower().isascii() and chr(c).lower() != chr(c)
}
WORDY = [(spec, param) for spec, param in PARAMS if not isinstance(param.check, params.Text)]


def test_the_other_scripts_characters_are_found() -> None:
    assert len(OTHER_DIGITS) > 500 and "\u0661" in OTHER_DIGITS and "\uff11" in OTHER_DIGITS
    assert {"\u00a0", "\u2028", "\u3000"} <= set(OTHER_BLANKS)
    assert FOLDED_TO_ASCII == {"k": "\u212a"}


def _refused_as(text: str, spec: TaskSpec) -> None:
    with pytest.raises(errors.InvalidParameter) as caught:
        grammar.parse_task(text)
    assert caught.value.status == 400 and caught.value.code == "INVALID_PARAMETER", text
    assert str(caught.value.details["parameter"]).startswith(f"{spec.name}."), text


@pytest.mark.parametrize("pair", NUMERIC, ids=_id)
@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data())
def test_a_digit_of_another_script_is_no_digit(
    pair: tuple[TaskSpec, Param], data: st.DataObject
) -> None:
    """``width:\uff11\uff10\uff10`` (fullwidth) or ``amount:\u0661\u0660`` is no number,
    wherever a number is read: one ASCII digit of a value the check takes becomes another
    script's."""
    spec, param = pair
    value = data.draw(inside(param.check))
    item = f"{param.name}:{_text(value)}"
    plain = segment(spec, param.name, value, data)
    places = [i for i, char in enumerate(item) if char in string.digits]
    assume(places)
    at = data.draw(st.sampled_from(places))
    wanted = int(item[at])
    other = data.draw(st.sampled_from([d for d in OTHER_DIGITS if unicodedata.digit(d) == wanted]))
    _refused_as(plain.replace(item, item[:at] + other + item[at + 1 :], 1), spec)


@pytest.mark.parametrize("pair", WORDY, ids=_id)
@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data())
def test_a_blank_or_letter_of_another_script_is_none_of_the_grammars(
    pair: tuple[TaskSpec, Param], data: st.DataObject
) -> None:
    """A value of any kind that is not text, with a Unicode blank before or after it, or
    an ASCII letter swapped for a character that lower-cases to it, is refused: only
    ASCII spaces and tabs are trimmed and only ASCII letters folded (``width:\\u00a0100``,
    ``fit:\\u2028crop`` and ``color:blac\\u212a`` were taken)."""
    spec, param = pair
    value = data.draw(inside(param.check))
    item = f"{param.name}:{_text(value)}"
    plain = segment(spec, param.name, value, data)
    blank = data.draw(st.sampled_from(OTHER_BLANKS))
    spaced = data.draw(st.sampled_from([f"{blank}{_text(value)}", f"{_text(value)}{blank}"]))
    _refused_as(plain.replace(item, f"{param.name}:{spaced}", 1), spec)
    _refused_as(plain.replace(item, f"{blank}{item}", 1), spec)  # around the option's name
    for ascii_letter, other in FOLDED_TO_ASCII.items():
        for text in (item, item.upper()):
            if ascii_letter in text.lower():
                swapped = re.sub(ascii_letter, other, text, count=1, flags=re.I | re.A)
                _refused_as(plain.replace(item, swapped, 1), spec)
