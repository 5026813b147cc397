"""minify_js and minify_css (text sources), fallback, and the classifiers this server
does not run (tags, sfw), through CDN URLs."""

from __future__ import annotations

import subprocess

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tests.api.harness import Harness
from tests.api.test_transform import decoded, get, picture, stored

SCRIPT = b"""/* a comment */
function add(first, second) {
    // another comment
    return first   +   second;
}
console.log(add(2, 3));
"""
STYLE = b"""/* header */
body {
    color : red ;
    margin:  0  auto;
}
"""


async def code_of(resp: object) -> str:
    return str((await resp.json())["error"]["code"])  # type: ignore[attr-defined]


async def test_minify_js_keeps_what_the_script_does(harness: Harness) -> None:
    handle = await stored(harness, SCRIPT, "app.js")
    resp, body = await get(harness, f"/minify_js=mangle:true,gzip:false/{handle}")
    assert resp.headers["Content-Type"].startswith("application/javascript")
    assert len(body) < len(SCRIPT) and b"comment" not in body
    node = subprocess.run(["node", "-e", body.decode()], capture_output=True, timeout=30)
    assert node.stdout.strip() == b"5"


async def test_minify_css(harness: Harness) -> None:
    handle = await stored(harness, STYLE, "site.css")
    resp, body = await get(harness, f"/minify_css=level:2/{handle}")
    assert resp.headers["Content-Type"].startswith("text/css")
    assert body == b"body{color:red;margin:0 auto}"


async def test_minify_answers_what_it_cannot_minify_safely_unchanged(harness: Harness) -> None:
    """A prober's cases: rjsmin collapsed the second template's spaces (its tracking of
    templates lost by the backtick in the first), rcssmin removed the one in the URL.
    The generated cases are tests/processing/test_minify_meaning.py."""
    script = b'var a=`${"`"}`; var b=`keep  two  spaces`; console.log(b)'
    style = b'a { background : url("a b.png") }'
    _, body = await get(harness, f"/minify_js/{await stored(harness, script, 't.js')}")
    assert body == script
    _, body = await get(harness, f"/minify_css/{await stored(harness, style, 'x.css')}")
    assert body == style


async def test_minify_refuses_binary_and_company(harness: Harness) -> None:
    image = await stored(harness, picture(40, 30, ".png"), "p.png")
    resp = await harness.cdn.get(f"/minify_js/{image}")
    assert resp.status == 415 and await code_of(resp) == "UNSUPPORTED_MEDIA_TYPE"
    text = await stored(harness, SCRIPT, "app.js")
    resp = await harness.cdn.get(f"/minify_js/flip/{text}")
    assert resp.status == 400 and await code_of(resp) == "INVALID_PARAMETER"
    resp = await harness.cdn.get(f"/minify_js=mangle:maybe/{text}")
    assert resp.status == 400 and await code_of(resp) == "INVALID_PARAMETER"


@pytest.mark.settings(processing_max_input_bytes=64)
async def test_minify_holds_to_the_input_limit(harness: Harness) -> None:
    handle = await stored(harness, SCRIPT, "app.js")
    resp = await harness.cdn.get(f"/minify_js/{handle}")
    assert resp.status == 413


@pytest.mark.parametrize("task", ["tags", "sfw"])
async def test_classifiers_answer_task_not_available(harness: Harness, task: str) -> None:
    handle = await stored(harness)
    resp = await harness.cdn.get(f"/{task}/{handle}")
    assert resp.status == 400 and await code_of(resp) == "TASK_NOT_AVAILABLE"
    unknown = await harness.cdn.get(f"/no_such_task=x:1/{handle}")
    assert await code_of(unknown) == "UNSUPPORTED_TASK"


async def test_fallback_serves_the_other_file_when_the_transformation_fails(
    harness: Harness,
) -> None:
    backup_bytes = picture(20, 10, ".png")
    backup = await stored(harness, backup_bytes, "backup.png")
    broken = await stored(harness, b"not an image at all", "broken.jpg")
    resp, body = await get(harness, f"/fallback=handle:{backup},cache:60/flip/{broken}")
    assert body == backup_bytes and "max-age=60" in resp.headers["Cache-Control"]
    missing = "A" * 20
    _, body = await get(harness, f"/flip/fallback=handle:{backup}/{missing}")
    assert body == backup_bytes
    good = await stored(harness, picture(40, 30, ".png"), "good.png")
    _, body = await get(harness, f"/fallback=handle:{backup}/flip/{good}")
    assert decoded(body).width == 40  # a transformation that works is not replaced
    resp = await harness.cdn.get(f"/flip/{broken}")
    assert resp.status in (415, 422)  # without fallback the failure answers


async def test_fallback_keeps_the_requests_security(harness: Harness) -> None:
    app = harness.secure_app
    backup = await stored(harness, picture(20, 10, ".png"), "backup.png", app=app)
    broken = await stored(harness, b"not an image", "broken.jpg", app=app)
    resp = await harness.cdn.get(f"/fallback=handle:{backup}/flip/{broken}")
    assert resp.status == 401  # no credentials: no fallback either
    only_broken = harness.policy(app, call=["convert", "read"], handle=broken)
    resp = await harness.cdn.get(f"/fallback=handle:{backup}/flip/{broken}", params=only_broken)
    assert resp.status == 403


@given(st.integers())
@settings(max_examples=30, deadline=None)
def test_fallback_cache_range(seconds: int) -> None:
    from stowage import errors
    from stowage.processing import grammar

    segment = f"fallback=handle:{'a' * 20},cache:{seconds}"
    if 1 <= seconds <= 31_536_000:
        assert grammar.parse_task(segment).get("cache") == seconds
    else:
        with pytest.raises(errors.InvalidParameter):
            grammar.parse_task(segment)


@given(st.text(min_size=1, max_size=30))
@settings(max_examples=30, deadline=None)
def test_a_fallback_that_names_no_handle_is_refused(junk: str) -> None:
    """It was taken whatever it said, and only failed when the fallback was needed."""
    from stowage import errors
    from stowage.core import names
    from stowage.processing import grammar

    value = junk.replace('"', "") + "x"
    assume(not names.is_handle(value))
    with pytest.raises(errors.InvalidParameter):
        grammar.parse_task(f'fallback=handle:"{value}"')


@pytest.mark.parametrize("name", ["store", "fallback"])
@pytest.mark.parametrize("between", [[], ["flip"], ["flip", "resize=width:10"]])
def test_a_task_that_appears_once_is_refused_twice(name: str, between: list[str]) -> None:
    """A second fallback was dropped unread (the first stood in): refused like a second
    store, wherever the two stand."""
    from stowage import errors
    from stowage.processing import chain

    task = f"{name}=handle:{'a' * 20}" if name == "fallback" else name
    with pytest.raises(errors.InvalidParameter, match="once"):
        chain.parse([task, *between, task])
    assert chain.parse([task, *between]) is not None


async def test_a_second_fallback_is_refused_not_stood_in_for(harness: Harness) -> None:
    """The chain's 400 for a second fallback was taken as a failed transformation, and
    the first fallback's file answered 200 (kept 300 s by caches)."""
    handle = await stored(harness)
    backup = await stored(harness, name="b.jpg")
    for chain in (
        f"fallback=handle:{backup}/fallback=handle:{backup}/resize=width:50",
        f"resize=width:50/fallback=handle:{backup}/flip/fallback=handle:{backup},cache:60",
    ):
        resp = await harness.cdn.get(f"/{chain}/{handle}")
        assert resp.status == 400, await resp.text()
        assert (await resp.json())["error"]["details"]["parameter"] == "fallback"
