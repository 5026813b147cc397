"""A policy's rules against the calls they bind (docs/security.md): ``path`` and
``container`` bind a store's place and a stored file, not a URL source; ``handle`` lets
its own file's transformation be stored; and every policy sent is checked (one pair:
a second ``security`` task, a repeated query parameter or a query pair that differs
from the path's is a 400). Generated cases: seeded policies with random rule subsets."""

from __future__ import annotations

import base64
import json
import random
import re
import time
from typing import Any
from urllib.parse import quote

import aiohttp
from yarl import URL

from stowage.core.security import sign
from tests.api.harness import Harness
from tests.api.test_transform import decoded, picture

SEEDS = range(12)
PATHS = ["keep/.*", "other/.*", "(keep|other)/.*"]
URLS = ["http://127\\.0\\.0\\.1:.*", None]


def _security(pair: dict[str, str]) -> str:
    return f"security=p:{pair['policy']},s:{pair['signature']}"


def _placed(rules: dict[str, Any], path: str, container: str) -> bool:
    """Whether the policy's ``path`` and ``container`` rules allow this place."""
    return all(
        re.fullmatch(rules[name], value)
        for name, value in (("path", path), ("container", container))
        if name in rules
    )


async def _json(resp: aiohttp.ClientResponse) -> dict[str, Any]:
    body: dict[str, Any] = await resp.json(content_type=None)
    return body


async def test_path_and_container_bind_stores_not_url_sources(
    harness: Harness, image_site: str
) -> None:
    """A ``path`` or ``container`` rule refused every transformation of a URL (403 "policy
    does not allow this path"), stored or not. The URL's transformation is now held to
    ``url`` alone; its store to the store's path and container; a stored file the tasks
    name (a watermark's) to its own key and container."""
    app = harness.secure_app
    mark = await harness.store(picture(20, 10, ".png"), app, filename="m.png", path="keep/")
    default = str(mark["container"])
    key, url = app.api_key, image_site
    for seed in SEEDS:
        rng = random.Random(seed)
        rules: dict[str, Any] = {"call": ["convert", "store"]}
        if rng.random() < 0.8:
            rules["path"] = rng.choice(PATHS)
        if rng.random() < 0.5:
            rules["container"] = rng.choice([re.escape(default), "elsewhere"])
        if (chosen := rng.choice(URLS)) is not None:
            rules["url"] = chosen
        pair = harness.policy(app, **rules)
        width = rng.randint(8, 60)
        form = rng.choice(["one", "list", "watermark"])
        tasks = {
            "one": f"resize=width:{width}",
            "list": f"animate=width:{width},delay:100",
            "watermark": f"watermark=file:{mark['handle']}/resize=width:{width}",
        }[form]
        source = f'["{url}","{url}"]' if form == "list" else url

        mark_ok = form != "watermark" or _placed(rules, mark["key"], default)
        resp = await harness.cdn.get(f"/{key}/{_security(pair)}/{tasks}/{source}")
        body = await resp.read()
        case = (seed, rules, form)
        if mark_ok:
            assert resp.status == 200, (case, body[:300])
            assert decoded(body).width == width, case
        else:
            assert resp.status == 403, (case, body[:300])

        folder = rng.choice(["keep/", "other/", "else/"])
        store = f"store=path:{quote(chr(34) + folder + chr(34))}"
        resp = await harness.api.post(f"/process/{key}/{_security(pair)}/{tasks}/{store}/{source}")
        found = await _json(resp)
        if mark_ok and _placed(rules, folder + "x.png", default):
            assert resp.status == 200, (case, folder, found)
            assert found["key"].startswith(folder), (case, found)
            read = harness.policy(app, call=["read"])
            stored = await harness.cdn.get(f"/{found['handle']}", params=read)
            assert decoded(await stored.read()).width == width, case
        else:
            assert resp.status == 403, (case, folder, found)
            assert found["error"]["code"] == "POLICY_DENIED", (case, found)


async def test_a_handle_policy_stores_its_own_handles_transformation(harness: Harness) -> None:
    """``store`` of ``/security=<handle policy>/resize=.../store/<that handle>`` was a 403
    "policy is for another handle" (the store carried no handle), on the processing URL
    and on the first File API's ``convert`` alike. It stores; another handle does not."""
    app = harness.secure_app
    handles = []
    for index in range(3):
        made = await harness.store(picture(64, 32, ".png"), app, filename=f"{index}.png")
        handles.append(str(made["handle"]))
    for seed in SEEDS:
        rng = random.Random(seed)
        mine, asked = rng.choice(handles), rng.choice(handles)
        pair = harness.policy(app, call=["convert", "store"], handle=mine)
        width = rng.randint(4, 40)
        if rng.random() < 0.5:
            resp = await harness.api.post(
                f"/process/{_security(pair)}/resize=width:{width}/store/{asked}"
            )
        else:
            resp = await harness.api.post(
                f"/api/file/{asked}/convert", params={"w": str(width), **pair}
            )
        found = await _json(resp)
        if asked != mine:
            assert resp.status == 403 and found["error"]["code"] == "POLICY_DENIED", found
            continue
        assert resp.status == 200, (seed, found)
        handle = found.get("handle") or str(found["url"]).rsplit("/", 1)[-1]
        read = harness.policy(app, call=["read"])
        stored = await harness.cdn.get(f"/{handle}", params=read)
        assert decoded(await stored.read()).width == width


def _pairs(harness: Harness, rng: random.Random) -> list[tuple[dict[str, str], bool]]:
    """One to three policies, each good, badly signed or expired: (pair, verifies)."""
    app = harness.secure_app
    made = []
    for _ in range(rng.randint(1, 3)):
        kind = rng.choice(["good", "bad", "expired"])
        expiry = int(time.time()) + (-3600 if kind == "expired" else 600)
        pair = harness.policy(app, call=["read", "convert"], expiry=expiry)
        if kind == "bad":
            pair["signature"] = "0" * 64
        made.append((pair, kind == "good"))
    return made


async def test_every_policy_sent_is_checked(harness: Harness) -> None:
    """The last ``security`` task won, a path's pair beat a bad query pair, the first of
    two ``signature`` parameters won, and HTTP Basic hid a bad query pair: a bad or
    expired policy passed next to a good one. One pair is sent, and checked, or 400."""
    app = harness.secure_app
    handle = str((await harness.store(picture(30, 20, ".png"), app, filename="p.png"))["handle"])
    basic = {"Authorization": "Basic " + base64.b64encode(f"app:{app.secret}".encode()).decode()}
    for seed in range(40):
        rng = random.Random(seed)
        pairs = _pairs(harness, rng)
        segments = rng.randint(0, len(pairs))
        in_path, in_query = pairs[:segments], pairs[segments:]
        if rng.random() < 0.3 and in_path and not in_query:
            in_query = [in_path[0]]  # the same pair in the path and the query
        query = [(n, pair[n]) for pair, _ in in_query for n in ("policy", "signature")]
        auth = basic if rng.random() < 0.3 else {}
        path = "".join(f"/{_security(pair)}" for pair, _ in in_path)
        if not in_path and rng.random() < 0.5:
            resp = await harness.api.get(f"/api/file/{handle}", params=query, headers=auth)
        else:
            resp = await harness.cdn.get(f"{path}/flip/{handle}", params=query, headers=auth)
        body = await resp.read()
        sent = {(p["policy"], p["signature"]) for p, _ in in_path + in_query}
        case = (seed, len(in_path), len(in_query), bool(auth))
        if len(in_path) > 1 or len(in_query) > 1 or len(sent) > 1:
            assert resp.status == 400, (case, body[:300])
            assert (await _json(resp))["error"]["code"] == "INVALID_PARAMETER", case
        elif not sent:
            assert resp.status == (200 if auth else 401), (case, body[:300])
        elif all(ok for _, ok in in_path + in_query):
            assert resp.status == 200, (case, body[:300])
        else:
            assert resp.status == 403, (case, body[:300])
            code = (await _json(resp))["error"]["code"]
            assert code in ("INVALID_SIGNATURE", "POLICY_EXPIRED"), (case, code)


async def test_a_json_process_request_takes_each_task_once(harness: Harness) -> None:
    """Two ``security`` tasks were merged, the second's values winning: one pair went
    unchecked. Any task twice is a 400."""
    app = harness.secure_app
    good = harness.policy(app, call=["store"])
    bad = {**good, "signature": "0" * 64}
    for twice in ("security", "store"):
        tasks: list[dict[str, Any]] = [
            {"name": "store", "params": {}},
            {"name": "security", "params": bad},
            {"name": twice, "params": good if twice == "security" else {}},
        ]
        body = {"apikey": app.api_key, "sources": ["http://127.0.0.1:9/a.png"], "tasks": tasks}
        resp = await harness.api.post("/process", json=body)
        found = await _json(resp)
        assert resp.status == 400, found
        assert found["error"]["details"]["parameter"] == twice, found


def _plus_policy(app_secret: str, rng: random.Random, **rules: Any) -> dict[str, str]:
    """A policy in standard base64 that holds both ``+`` and ``/``, signed as the SDKs
    sign it. ASCII JSON makes them only of a ``>``/``~`` and a ``?`` at the third byte
    of three: a ``url`` rule holding them, its place varied by the expiry's digits."""
    for _ in range(10_000):
        data = {**rules, "expiry": int(time.time()) + rng.randint(600, 10**9)}
        data["url"] = r"https?://127\.0\.0\.1:[0-9]+/~?" + "~?" * rng.randint(0, 3) + ".*"
        text = base64.b64encode(json.dumps(data).encode()).decode()
        if "+" in text and "/" in text:
            return {"policy": text, "signature": sign(app_secret, text)}
    raise AssertionError("no policy whose base64 holds + and /")


async def test_a_raw_plus_in_a_query_policy_is_the_policys(
    harness: Harness, image_site: str
) -> None:
    """``?policy=eyJ...+YWE/In0=`` was read with its ``+`` as a space (403
    INVALID_SIGNATURE); a policy and a signature never hold a space. Sent raw in the
    query of the CDN, the File API read, store and the process address (GET and JSON)."""
    app = harness.secure_app
    handle = str((await harness.store(picture(30, 20, ".png"), app, filename="p.png"))["handle"])
    calls = ["read", "convert", "store"]
    for seed in range(6):
        rng = random.Random(seed)
        pair = _plus_policy(app.secret, rng, call=calls)
        query = f"policy={pair['policy']}&signature={pair['signature']}"  # "+" and "/" raw
        key = app.api_key
        asks = [
            (harness.cdn, "GET", f"/resize=width:10/{handle}?{query}", None),
            (harness.cdn, "GET", f"/{key}/flip/{image_site}?{query}", None),
            (harness.api, "GET", f"/api/file/{handle}?{query}", None),
            (harness.api, "POST", f"/api/store/S3?key={key}&{query}", b"hello"),
            (harness.api, "GET", f"/process/{key}/resize=width:10/{handle}?{query}", None),
            (harness.api, "POST", f"/process?{query}", None),
        ]
        for client, method, target, data in asks:
            body: Any = {"apikey": key, "sources": [image_site], "tasks": [{"name": "store"}]}
            sent = {"data": data} if data is not None else {}
            if target.startswith("/process?"):
                sent = {"json": body}
            url = URL(target, encoded=True)
            resp = await client.request(method, url, **sent)
            assert resp.status == 200, (seed, target, (await resp.read())[:300])
        # a policy with the space a form would make of "+" is the same policy
        spaced = {**pair, "policy": pair["policy"].replace("+", " ")}
        resp = await harness.api.get(f"/api/file/{handle}", params=spaced)
        assert resp.status == 200, await resp.text()
