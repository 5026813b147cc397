"""``debug``, the hosted service's debug mode (what the PHP, Java and Ruby SDKs'
``debug()`` ask): ``/debug/<tasks>/<H>``, ``/<APIKEY>/debug/<tasks>/<H or URL>``,
``/debug/<APIKEY>/<tasks>/<URL>`` and the process address answer a JSON report that
agrees with what the same URL without ``debug`` answers: its status and error, or its
result's type, size and sides."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from stowage.processing import autoimage, grammar
from tests.api.harness import Harness
from tests.api.test_transform import decoded, picture, stored
from tests.api.test_transform_urls import Origin, origin  # noqa: F401 (the fixture)
from tests.processing.test_generated_chains import segments

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")

SOURCES = {"p.jpg": picture(64, 48), "p.png": picture(50, 40, ".png"), "a.gif": None}
DRAWN = ("image/jpeg", "image/png", "image/webp", "image/gif")


def _animation() -> bytes:
    import pyvips

    frames = [pyvips.Image.black(40, 30).linear(1, 60 * i).cast("uchar") for i in range(3)]
    joined = pyvips.Image.arrayjoin(frames, across=1).copy()
    joined.set_type(pyvips.GValue.gint_type, "page-height", 30)
    data: bytes = joined.gifsave_buffer()
    return data


async def _report(harness: Harness, path: str, **kw: Any) -> dict[str, Any]:
    resp = await harness.cdn.get(path, **kw)
    assert resp.status == 200, await resp.text()
    assert resp.headers["Content-Type"].startswith("application/json")
    assert resp.headers["Cache-Control"] == "no-store"
    body: dict[str, Any] = await resp.json()
    assert body["debug"] is True and body["processing_time"].endswith("ms")
    return body


#: What a report does not run (``test_what_debug_does_not_run_is_reported_so``).
NOT_RUN = ("store", "zip", "preview", "video_convert", "doc_to_images")


def _runs(chosen: list[str]) -> bool:
    return not any(segment.partition("=")[0] in NOT_RUN for segment in chosen)


@given(chosen=segments().filter(_runs), name=st.sampled_from(sorted(SOURCES)))
@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
async def test_a_report_agrees_with_the_transformation(
    harness: Harness, chosen: list[str], name: str
) -> None:
    data = SOURCES[name] or _animation()
    handle = await stored(harness, data, name)
    tasks = "/".join(chosen)
    plain = await harness.cdn.get(f"/{tasks}/{handle}")
    body = await plain.read()
    event(f"the transformation answered {plain.status}")
    if plain.status in (429, 503):  # the request's own refusals are not reported
        assert (await harness.cdn.get(f"/debug/{tasks}/{handle}")).status == plain.status
        return
    report = await _report(harness, f"/debug/{tasks}/{handle}")
    assert report["task_uri"] == tasks and report["apikey"] is None
    assert report["status"]["http_code"] == plain.status, (chosen, report["status"])
    if plain.status != 200:
        error = json.loads(body)["error"]
        assert (report["status"]["code"], report["status"]["message"]) == (
            error["code"],
            error["message"],
        )
        assert report["result"] is None
        return
    ran, _ = autoimage.negotiated(chosen, "*/*")  # aiohttp's Accept: no auto_image format
    assert report["chain"] == [_read(segment) for segment in ran]
    assert report["source"] == {"handle": handle, "mimetype": _type(name), "size": len(data)}
    result = report["result"]
    assert (result["mimetype"], result["size"]) == (plain.headers["Content-Type"], len(body))
    if result["mimetype"] in DRAWN:
        image = decoded(body)
        assert (result["width"], result["height"]) == (image.width, image.height)


def _read(segment: str) -> dict[str, Any]:
    task = grammar.parse_task(segment)
    return json.loads(json.dumps({"task": task.name, "params": dict(task.options)}))


def _type(name: str) -> str:
    return {"jpg": "image/jpeg", "png": "image/png", "gif": "image/gif"}[name.rsplit(".")[-1]]


async def test_a_path_that_does_not_parse_is_reported_as_written(harness: Harness) -> None:
    handle = await stored(harness)
    key = harness.open_app.api_key
    tasks = "resize=width:501,heigt:501/detect_faces=filter:40"
    plain = await harness.cdn.get(f"/{key}/{tasks}/{handle}")
    assert plain.status == 400
    report = await _report(harness, f"/{key}/debug/{tasks}/{handle}")
    assert (report["apikey"], report["task_uri"], report["chain"]) == (key, tasks, None)
    error = (await plain.json())["error"]
    assert report["status"] == {
        "message": error["message"],
        "http_code": 400,
        "code": "INVALID_PARAMETER",
    }
    missing = await _report(harness, "/debug/flip/" + "Z" * 20)
    assert missing["status"]["http_code"] == 404 and missing["source"] is None


async def test_the_app_security_applies_as_to_the_transformation(harness: Harness) -> None:
    app = harness.secure_app
    handle = await stored(harness, app=app)
    assert (await harness.cdn.get(f"/debug/flip/{handle}")).status == 401
    wrong = {"policy": "e30=", "signature": "0" * 64}
    assert (await harness.cdn.get(f"/debug/flip/{handle}", params=wrong)).status == 403
    allowed = harness.policy(app, call=["convert"], handle=handle)
    report = await _report(harness, f"/debug/flip/{handle}", params=allowed)
    assert report["status"]["http_code"] == 200 and report["result"]["width"] == 640
    inline = f"security=p:{allowed['policy']},s:{allowed['signature']}"
    report = await _report(harness, f"/{app.api_key}/debug/{inline}/flip/{handle}")
    assert report["task_uri"] == "flip" and report["apikey"] == app.api_key
    assert allowed["signature"] not in json.dumps(report)
    other = await stored(harness, app=app)
    for_other = harness.policy(app, call=["convert"], handle=other)
    refused = await harness.cdn.get(f"/debug/flip/{handle}", params=for_other)
    assert refused.status == 403


async def test_auto_image_is_reported_as_negotiated(harness: Harness) -> None:
    handle = await stored(harness)
    accept = {"Accept": "image/webp,*/*"}
    report = await _report(harness, f"/debug/auto_image/resize=width:100/{handle}", headers=accept)
    assert report["chain"][0] == {"task": "output", "params": {"format": "webp"}}
    assert report["result"]["mimetype"] == "image/webp"
    assert (report["result"]["width"], report["result"]["height"]) == (100, 75)


async def test_a_url_source_and_the_process_address(harness: Harness, site: Origin) -> None:
    key = harness.open_app.api_key
    report = await _report(harness, f"/{key}/debug/resize=width:30/{site.url}")
    assert report["source"] == {"url": site.url} and report["task_uri"] == "resize=width:30"
    assert (report["result"]["width"], report["result"]["height"]) == (30, 15)
    ruby = await _report(harness, f"/debug/{key}/resize=width:30/{site.url}")  # its order
    assert (ruby["apikey"], ruby["result"]) == (key, report["result"])
    handle = await stored(harness)
    among = await _report(harness, f"/resize=width:50/debug/flip/{handle}")
    assert among["task_uri"] == "resize=width:50/flip" and among["result"]["width"] == 50
    resp = await harness.api.get(f"/process/debug/rotate=deg:90/{handle}")
    assert resp.status == 200
    found = await resp.json()
    assert (found["result"]["width"], found["result"]["height"]) == (480, 640)


@pytest.fixture
def site(origin: Origin) -> Origin:  # noqa: F811 (the fixture imported above)
    """An origin server of a 300 x 150 PNG (``test_transform_urls``)."""
    return origin


@pytest.mark.parametrize("tasks", ["", *NOT_RUN])
async def test_what_debug_does_not_run_is_reported_so(harness: Harness, tasks: str) -> None:
    handle = await stored(harness)
    before = await _count(harness)
    report = await _report(harness, f"/debug/{tasks}{'/' if tasks else ''}{handle}")
    assert report["status"]["http_code"] == 400 and report["status"]["code"] == "INVALID_PARAMETER"
    assert "debug" in report["status"]["message"] and report["result"] is None
    assert await _count(harness) == before


async def _count(harness: Harness) -> int:
    return len(await harness.service.registry.list_files(harness.open_app.api_key, limit=10_000))


@pytest.mark.parametrize("tasks", ["", "resize=w:10/store", "zip", "preview", "video_convert"])
async def test_what_debug_does_not_run_still_checks_the_credentials(
    harness: Harness, tasks: str
) -> None:
    """A report of a chain it does not run once answered 200 to any caller: the refusal of
    the credentials comes first, as it would without ``debug``; a list's every file too."""
    app = harness.secure_app
    handle, other = await stored(harness, app=app), await stored(harness, app=app)
    prefix = f"/debug/{tasks}{'/' if tasks else ''}"
    cases = [
        (f"{prefix}{handle}", {}, 401),
        (f"{prefix}{handle}", {"policy": "e30=", "signature": "0" * 64}, 403),
        (f"{prefix}{handle}", harness.policy(app, call=["read"]), 403),
        (f"{prefix}{handle}", harness.policy(app, call=["convert"], handle=other), 403),
    ]
    source = f"[{handle},{other}]" if tasks == "zip" else handle  # only zip reads a list
    if tasks == "zip":
        only_first = harness.policy(app, call=["convert"], handle=handle)
        cases.append((f"{prefix}{source}", only_first, 403))
    for path, params, status in cases:
        refused = await harness.cdn.get(path, params=params)
        assert refused.status == status, (path, params, await refused.text())
    allowed = harness.policy(app, call=["convert"])
    report = await _report(harness, f"{prefix}{source}", params=allowed)
    assert report["status"]["http_code"] == 400 and report["result"] is None


async def test_what_debug_does_not_run_checks_a_url_against_the_policy(
    harness: Harness, site: Origin
) -> None:
    app = harness.secure_app
    elsewhere = harness.policy(app, call=["convert", "store"], url="https://elsewhere/.*")
    refused = await harness.cdn.get(f"/{app.api_key}/debug/store/{site.url}", params=elsewhere)
    assert refused.status == 403, await refused.text()
    allowed = harness.policy(app, call=["convert", "store"], url="http://127\\.0\\.0\\.1:.*")
    report = await _report(harness, f"/{app.api_key}/debug/store/{site.url}", params=allowed)
    assert report["status"]["http_code"] == 400 and report["result"] is None
