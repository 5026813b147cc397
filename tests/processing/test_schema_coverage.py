"""Every task of filestack-js's transformation schema is in the task table, except the
ones the documents and video work owns."""

from __future__ import annotations

import functools
import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from stowage import errors
from stowage.processing import catalogue, grammar, video
from stowage.processing.base import _text
from tests.processing.test_catalogue import inside

SCHEMA = Path(__file__).resolve().parents[2] / (
    ".test-servers/filestack-js/node_modules/filestack-js/src/schema/transforms.schema.ts"
)
ELSEWHERE = {"video_convert", "pdfinfo", "pdfconvert", "doc_to_images"}


def schema_tasks() -> set[str]:
    """The keys of the schema's top-level ``properties`` object (four spaces deep)."""
    text = SCHEMA.read_text(encoding="utf-8")
    body = text[text.index("properties: {") :]
    return set(re.findall(r"^    ([a-z_]+): \{", body, flags=re.MULTILINE))


def test_every_schema_task_is_in_the_table() -> None:
    names = schema_tasks()
    assert len(names) >= 50 and {"resize", "fallback", "minify_js", "tags"} <= names
    missing = sorted(n for n in names if n not in catalogue.TABLE and n not in ELSEWHERE)
    assert missing == []


# --- every value the schema lets an SDK send is accepted ------------------------------------

COMPILED = SCHEMA.parents[2] / "build/main/schema/transforms.schema.js"
DEFINITIONS = COMPILED.with_name("definitions.schema.js")
#: Where the table is stricter than the schema, and why (docs/decisions.md, "Every value
#: the SDK schema allows"): the values refused (None: the parameter is left out).
STRICTER: dict[tuple[str, str], tuple[str, Callable[[Any], bool] | None]] = {
    ("cache", "expiry"): ("a negative number of seconds (the schema sets no minimum)", None),
    ("video_convert", "extname"): ("any text, where a file extension is needed", None),
    ("video_convert", "clip_length"): (
        "a clip of no length (00:00:00), which makes no file",
        lambda clock: set(clock) <= set("0:"),
    ),
    ("pdfconvert", "pages"): (
        "page 0 or a range that runs backwards (10-1), which the pattern of a range as text "
        "allows (a page number's minimum is 1)",
        lambda ranges: any(_no_pages(str(r)) for r in ranges),
    ),
}


def _no_pages(text: str) -> bool:
    numbers = [int(n) for n in re.findall("[0-9]+", text)]
    return 0 in numbers or numbers != sorted(numbers)


HANDLE = "A" * 10 + "b" * 10


def compiled_schema() -> dict[str, Any]:
    return _exported(COMPILED, "TransformSchema")


@functools.cache
def definitions() -> dict[str, Any]:
    """The shared definitions the schema's ``$ref`` names (``positionDef``, ``colorDef``)."""
    found: dict[str, Any] = _exported(DEFINITIONS, "DefinitionsSchema")["definitions"]
    return found


def _exported(module: Path, name: str) -> dict[str, Any]:
    script = f"console.log(JSON.stringify(require({str(module)!r}).{name}))"
    found = subprocess.run(["node", "-e", script], capture_output=True, text=True, check=True)
    schema: dict[str, Any] = json.loads(found.stdout)
    return schema


def allowed(prop: dict[str, Any], name: str) -> st.SearchStrategy[Any]:
    """Values the schema's property allows (handles where it asks for a handle)."""
    if "$ref" in prop:  # resolved: align's positionDef once hid "middle" from the draws
        named = definitions()[prop["$ref"].rstrip("/").rpartition("/")[2]]
        return allowed({**named, **{k: v for k, v in prop.items() if k != "$ref"}}, name)
    alternatives = prop.get("oneOf", []) + prop.get("anyOf", [])
    if alternatives:
        return st.one_of([allowed(alt, name) for alt in alternatives])
    if "enum" in prop:
        return st.sampled_from(prop["enum"])
    kind = prop.get("type")
    if "pattern" in prop:  # clip_length's clock: \d in JavaScript is an ASCII digit
        return st.from_regex(prop["pattern"].replace("\\d", "[0-9]"), fullmatch=True)
    if kind == "boolean":
        return st.booleans()
    if kind in ("integer", "number"):
        low, high = prop.get("minimum", 0), prop.get("maximum", 10**6)
        whole = st.integers(int(low), int(high))
        decimal = st.integers(int(low * 1000), int(high * 1000)).map(lambda n: n / 1000)
        # As a program computes them (400/3, 0.1*3, 1e-7): the SDKs print every digit and
        # write small numbers with an exponent (JS below 1e-6, Python below 1e-4).
        computed = st.floats(low, high, allow_nan=False, allow_infinity=False)
        return whole if kind == "integer" else whole | decimal | computed
    if kind == "array":
        items = prop.get("items", {"type": "string"})
        if isinstance(items, list):
            return st.tuples(*[allowed(item, name) for item in items])
        least = max(1, prop.get("minItems", 1))
        return st.lists(allowed(items, name), min_size=least, max_size=least + 2).map(tuple)
    if name in ("file", "files", "handle"):
        return st.just(HANDLE)
    return st.nothing()  # text of no stated form (a colour, a URL): the table's own values


SDK_PARAMS = [
    (task, name, prop)
    for task, spec in sorted(compiled_schema()["properties"].items())
    if task not in {"tags", "sfw", "urlscreenshot"}
    for alt in spec.get("oneOf", [spec])
    for name, prop in alt.get("properties", {}).items()
    if STRICTER.get((task, name), ("", len))[1] is not None
]


@pytest.mark.parametrize(
    ("task", "name", "prop"), SDK_PARAMS, ids=[f"{t}.{n}" for t, n, _ in SDK_PARAMS]
)
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_every_value_the_sdk_schema_allows_is_accepted(
    task: str, name: str, prop: dict[str, Any], data: st.DataObject
) -> None:
    """filestack-js validates options against this schema before it builds the URL: a URL
    it builds must not be refused for a value it let through."""
    spec = catalogue.TABLE[task]
    param = spec.param(name)
    assert param is not None, f"{task} takes no {name}, which the schema lets the SDK send"
    values = allowed(prop, name)
    value = data.draw(inside(param.check) if values.is_empty else values)
    refused = STRICTER.get((task, name), ("", None))[1]
    assume(refused is None or not refused(value))
    needed = [p for p in spec.params if p.name in spec.needs_one_of]
    text = f"{task}={name}:{_text(value)}"
    if needed and name not in spec.needs_one_of:
        text += f",{needed[0].name}:{_text(data.draw(inside(needed[0].check)))}"
    try:
        parsed = grammar.parse_task(text)
        if task == video.NAME:  # its options are read again into the job's ffmpeg plan
            video.plan(parsed)
    except errors.InvalidParameter as exc:
        # 0 as not given, with nothing else; a watermark's place with no watermark
        assert "needs" in str(exc), (text, str(exc))


def _asks_nothing(spec: dict[str, Any]) -> bool:
    """The schema lets ``{}`` through: an object alternative that requires no property."""
    return any(
        alt.get("type", "object") == "object"
        and "required" not in alt
        and not any("required" in sub for sub in alt.get("anyOf", []) + alt.get("oneOf", []))
        for alt in spec.get("oneOf", [spec])
    )


BARE_TASKS = sorted(
    task
    for task, spec in compiled_schema()["properties"].items()
    if task not in ELSEWHERE | {"tags", "sfw", "urlscreenshot"} and _asks_nothing(spec)
)


@pytest.mark.parametrize("task", BARE_TASKS)
def test_a_task_the_schema_lets_through_empty_is_accepted_bare(task: str) -> None:
    """``client.transform(h, {quality: {}})`` builds ``/quality/``: a task whose schema
    requires no option is taken with none."""
    assert len(BARE_TASKS) >= 30
    assert grammar.parse_task(task).name == task


def test_a_screenshots_device_of_no_name_is_the_schemas_default() -> None:
    """filestack-js's schema types ``urlscreenshot``'s ``device`` as any text, defaulting to
    ``""``; the SDK builds ``device:`` for it, which was ``400`` (not one of the names)."""
    alternatives = compiled_schema()["properties"]["urlscreenshot"]["oneOf"]
    device = next(alt for alt in alternatives if "properties" in alt)["properties"]["device"]
    assert device == {"type": "string", "default": ""}
    for spelled in ("device:", 'device:""', "width:300,device:"):
        assert "device" not in dict(grammar.parse_task(f"urlscreenshot={spelled}").options)
    with pytest.raises(errors.InvalidParameter):
        grammar.parse_task("urlscreenshot=device:nokia")
