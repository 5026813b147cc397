"""Transformation URLs that filestack-js builds from generated options, fetched from a real
``stowage serve``. Options are drawn from the SDK's own compiled schema (every task but
the documents' and video's, every parameter it allows, 1-3 tasks a chain), on a JPEG and
a PNG, with a tall PNG as the file of watermark, collage and animate. Every answer is a
result or a client error of the documented shape; never a 5xx, an "invalid image" for
these good files, or a job run to its deadline. Generated chains like these found that a
watermark's file became an animation frame, that tasks after a collage read its files
out of order, and that ``fit:crop`` into a tall cell ran a job to its deadline."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import pytest
import pyvips
import requests
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stowage import errors
from stowage.processing import grammar
from tests.processing.test_schema_coverage import ELSEWHERE, HANDLE, allowed, compiled_schema
from tests.sdk.stack import Stack, run_js

SCHEMA = compiled_schema()["properties"]
TASKS = sorted(set(SCHEMA) - ELSEWHERE - {"tags", "sfw", "urlscreenshot"})
NEVER = {"INVALID_IMAGE", "PROCESSING_TIMEOUT", "INTERNAL_ERROR", "NOT_FOUND"}


@st.composite
def task_options(draw: st.DrawFn, task: str) -> Any:
    """One task's options as an SDK user passes them: some of its parameters."""
    spec = SCHEMA[task]
    alternative = draw(st.sampled_from(spec.get("oneOf", [spec])))
    found: dict[str, Any] = {}
    for name, prop in alternative.get("properties", {}).items():
        values = allowed(prop, name)
        if not values.is_empty and draw(st.booleans()):
            value = draw(values)
            found[name] = list(value) if isinstance(value, tuple) else value
    return found or True


@st.composite
def option_sets(draw: st.DrawFn) -> dict[str, Any]:
    tasks = draw(st.lists(st.sampled_from(TASKS), min_size=1, max_size=3, unique=True))
    return {task: draw(task_options(task)) for task in tasks}


@pytest.fixture(scope="module")
def handles(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("generated")
    xy = pyvips.Image.xyz(640, 480)
    photo = (xy[0] * 255 / 640).bandjoin([xy[1] * 255 / 480, 128]).cast("uchar")
    grey = pyvips.Image.gaussnoise(200, 1200, sigma=40, mean=128, seed=5).cast("uchar")
    tall = grey.bandjoin([grey.flip("horizontal"), grey.flip("vertical")])
    made = {"jpg": (photo, "photo.jpg"), "png": (tall.rot90(), "wide.png"), "file": (tall, "t.png")}
    found = {}
    for role, (image, name) in made.items():
        image.write_to_file(str(folder / name))
        url = f"{stack.api}/api/store/S3?key={stack.open_key}&filename={name}"
        answer = requests.post(url, data=(folder / name).read_bytes(), timeout=60)
        assert answer.status_code == 200, answer.text
        found[role] = answer.json()["url"].rsplit("/", 1)[1]
    return found


def _with_source(path: str, source: str) -> str:
    """The path with the main file last (the SDK wrote the placeholder there too)."""
    head, _, _ = path.rpartition("/")
    return f"{head}/{source}"


@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(sets=st.lists(option_sets(), min_size=15, max_size=15), png=st.booleans())
def test_a_url_the_sdk_builds_gives_a_result_or_a_client_error(
    stack: Stack, handles: dict[str, str], sets: list[dict[str, Any]], png: bool
) -> None:
    source = handles["png" if png else "jpg"]
    built = run_js(stack, "transformUrls", source=HANDLE, optionSets=sets)
    results = 0
    for options, answer in zip(sets, built, strict=True):
        if "url" not in answer:
            continue  # the SDK refused the options itself (its schema's own rules)
        path = urlsplit(answer["url"]).path.replace(HANDLE, handles["file"])
        response = requests.get(stack.cdn + _with_source(path, source), timeout=120)
        where = (options, path)
        assert response.status_code < 500, (where, response.text[:300])
        if response.status_code >= 400:
            code = response.json()["error"]["code"]
            assert code not in NEVER, (where, response.text[:300])
        else:
            assert response.content, where
            results += 1
    assert results >= len(sets) // 4, results  # not a run where everything was refused


@settings(
    max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(sets=st.lists(option_sets(), min_size=15, max_size=15))
def test_the_base64_form_the_sdk_builds_is_the_same_url(
    stack: Stack, handles: dict[str, str], sets: list[dict[str, Any]]
) -> None:
    """``client.transform(source, options, true)``: ``/<KEY>/b64/<tasks JSON>/b64://<source>``
    reads as the plain form of the same options, parsed or refused alike; the first few
    that parse answer the same bytes as their plain form."""
    source = handles["jpg"]
    plain = run_js(stack, "transformUrls", source=source, optionSets=sets)
    coded = run_js(stack, "transformUrls", source=source, optionSets=sets, b64=True)
    fetched = 0
    for options, one, other in zip(sets, plain, coded, strict=True):
        if "url" not in one:
            continue
        path, b64_path = urlsplit(one["url"]).path, urlsplit(other["url"]).path
        assert "/b64/" in b64_path and "/b64://" in b64_path, b64_path
        assert _read(b64_path) == _read(path), options
        # The placeholder of a watermark's or collage's file is inside the base64 too;
        # a store makes a new file each time.
        kept = HANDLE not in path and "store" not in options
        if fetched < 3 and kept and not isinstance(_read(path), tuple):
            first = requests.get(stack.cdn + path, timeout=120)
            second = requests.get(stack.cdn + b64_path, timeout=120)
            assert (second.status_code, second.content) == (first.status_code, first.content)
            fetched += 1


def _read(path: str) -> object:
    try:
        return grammar.parse_path(path)
    except errors.StowageError as exc:
        return (exc.code, exc.message)
