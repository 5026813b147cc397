"""The first File API's addresses that saved links hold: ``/api/file/<H>/convert?...`` on
both origins and ``/api/file/<H>`` on the CDN (filepicker.io's CDN links), answered
with the pixels today's chain gives, under the app's security."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest

from tests.api.harness import Harness
from tests.api.test_transform import decoded, picture, stored
from tests.api.test_transform_rules import code_of


@pytest.mark.parametrize("origin", ["api", "cdn"])
async def test_convert_resizes_crops_and_converts(harness: Harness, origin: str) -> None:
    handle = await stored(harness, picture(200, 100))
    client = getattr(harness, origin)
    resp = await client.get(f"/api/file/{handle}/convert", params={"w": "100", "format": "png"})
    body = await resp.read()
    assert resp.status == 200, body[:300]
    assert resp.headers["Content-Type"] == "image/png"
    assert (decoded(body).width, decoded(body).height) == (100, 50)
    # resize first, then crop; crop_first=true turns the order round
    plain = {"w": "100", "crop": "0,0,50,20", "format": "png"}
    for first, size in (("false", (50, 20)), ("true", (100, 40))):
        resp = await client.get(
            f"/api/file/{handle}/convert", params={**plain, "crop_first": first}
        )
        image = decoded(await resp.read())
        assert resp.status == 200 and (image.width, image.height) == size


async def test_fit_align_rotate_filter_and_watermark(harness: Harness) -> None:
    handle = await stored(harness, picture(300, 200))
    mark = await stored(harness, picture(40, 40, ".png"), "mark.png")
    query = {
        "w": "120", "h": "120", "fit": "crop", "align": "faces", "rotate": "-90",
        "filter": "blur", "blurAmount": "2", "format": "jpg", "quality": "70",
        "watermark": f"https://www.filepicker.io/api/file/{mark}", "watersize": "50",
        "waterposition": "top,left",
    }  # fmt: skip
    resp = await harness.cdn.get(f"/api/file/{handle}/convert", params=query)
    body = await resp.read()
    assert resp.status == 200, body[:300]
    assert resp.headers["Content-Type"] == "image/jpeg"
    assert (decoded(body).width, decoded(body).height) == (120, 120)
    resp = await harness.cdn.get(f"/api/file/{handle}/convert", params={"rotate": "-90"})
    image = decoded(await resp.read())
    assert (image.width, image.height) == (200, 300)


async def test_a_cdn_link_of_the_first_api_is_the_file(harness: Harness) -> None:
    data = picture(30, 20)
    handle = await stored(harness, data)
    for path in (f"/api/file/{handle}", f"/api/file/{handle}/convert"):
        resp = await harness.cdn.get(path)
        assert resp.status == 200 and await resp.read() == data


async def test_security_and_refusals(harness: Harness) -> None:
    app = harness.secure_app
    handle = await stored(harness, picture(64, 64), app=app)
    url = f"/api/file/{handle}/convert"
    assert (await harness.cdn.get(url, params={"w": "10"})).status == 401
    read_only = harness.policy(app, call=["read"])
    resp = await harness.cdn.get(url, params={"w": "10", **read_only})
    assert resp.status == 403 and await code_of(resp) == "POLICY_DENIED"
    convert = harness.policy(app, call=["convert"], handle=handle)
    resp = await harness.api.get(url, params={"w": "10", **convert})
    assert resp.status == 200 and decoded(await resp.read()).width == 10
    for bad in ({"w": "10", "zoom": "2"}, {"w": "10/flip"}, {"w": "20000"}):
        resp = await harness.cdn.get(url, params={**bad, **convert})
        assert resp.status == 400, bad
        assert await code_of(resp) == "INVALID_PARAMETER"


async def test_a_post_stores_the_result_as_a_new_file(harness: Harness) -> None:
    """The old API stored a conversion when it was POSTed, with its storage parameters."""
    handle = await stored(harness, picture(200, 100))
    query = {"w": "50", "format": "png", "path": "old/api/", "filename": "small.png"}
    resp = await harness.api.post(f"/api/file/{handle}/convert", params=query)
    result = await resp.json()
    assert resp.status == 200, result
    assert result["handle"] != handle and result["filename"] == "small.png"
    assert result["key"].startswith("old/api/") and result["type"] == "image/png"
    resp = await harness.cdn.get(f"/{result['handle']}")
    image = decoded(await resp.read())
    assert (image.width, image.height) == (50, 25)


async def test_a_post_to_the_cdn_origin_is_sent_to_the_api_origin(harness: Harness) -> None:
    """It answered 400 UNSUPPORTED_TASK 'file' (the path read as a chain); the CDN origin
    stores nothing, so it sends the POST on (308), as it does a chain with store."""
    handle = await stored(harness, picture(200, 100))
    query = {"w": "40", "format": "png"}
    moved = await harness.cdn.post(
        f"/api/file/{handle}/convert", params=query, allow_redirects=False
    )
    assert moved.status == 308, await moved.text()
    location = moved.headers["Location"]
    assert location.endswith(f"/api/file/{handle}/convert?w=40&format=png")
    stored_resp = await harness.api.post(location[location.index("/api/file/") :])
    assert stored_resp.status == 200, await stored_resp.text()
    assert (await stored_resp.json())["type"] == "image/png"


async def test_the_first_apis_links_take_a_trailing_slash(harness: Harness) -> None:
    """``/api/file/H/convert/?w=50`` was read on the CDN as a chain (400 UNSUPPORTED_TASK
    'file') and was no route on the API origin (404); every other form takes the slash.
    Each legacy path, with and without it, on both origins, GET and POST, answers alike."""
    rng = random.Random(5)
    for _ in range(3):
        width, height = rng.randint(40, 120), rng.randint(40, 120)
        data = picture(width, height)
        handle = await stored(harness, data)
        side = rng.randint(5, 30)
        query = {"w": str(side), "format": "png"}
        for slash in ("", "/"):
            for origin in ("api", "cdn"):
                client = getattr(harness, origin)
                resp = await client.get(f"/api/file/{handle}/convert{slash}", params=query)
                body = await resp.read()
                assert resp.status == 200, (origin, slash, body[:300])
                assert decoded(body).width == side
                half_up = int(Fraction(height * side, width) + Fraction(1, 2))  # as every side
                assert decoded(body).height == max(1, half_up)
            resp = await harness.cdn.get(f"/api/file/{handle}{slash}")
            assert resp.status == 200 and await resp.read() == data, slash
            resp = await harness.cdn.get(f"/api/file/{handle}/convert{slash}")
            assert resp.status == 200 and await resp.read() == data, slash
            resp = await harness.api.post(f"/api/file/{handle}/convert{slash}", params=query)
            made = await resp.json()
            assert resp.status == 200 and made["type"] == "image/png", made
            moved = await harness.cdn.post(
                f"/api/file/{handle}/convert{slash}", params=query, allow_redirects=False
            )
            assert moved.status == 308, (slash, await moved.text())
