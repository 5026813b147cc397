"""Every policy and signature a request carries is checked, in any place and any number
of copies, or the request is a 400 (docs/decisions.md, "Every policy sent is checked"):
a repeated option of one ``security`` task, a repeated form field or JSON key, a query
pair beside ``POST /process``'s JSON task, and an empty pair. Generated cases: seeded
mixes of good, badly signed and expired policies over places and copies."""

from __future__ import annotations

import base64
import json
import random
import time
from typing import Any

import aiohttp

from stowage.registry.base import App
from tests.api.harness import Harness
from tests.api.test_transform import decoded, picture

NAMES = {"policy": ("p", "policy"), "signature": ("s", "signature")}
FIELDS = ("policy", "signature")


def _made(harness: Harness, app: App, rng: random.Random, calls: list[str]) -> dict[str, Any]:
    """A policy for ``app``: good, badly signed or expired (``ok`` says which)."""
    kind = rng.choice(["good", "good", "bad", "expired"])
    expiry = int(time.time()) + (-3600 if kind == "expired" else 600)
    pair = harness.policy(app, call=calls, expiry=expiry)
    if kind == "bad":
        pair["signature"] = "0" * 64
    return {**pair, "ok": kind == "good"}


async def _error(resp: aiohttp.ClientResponse) -> str:
    body: dict[str, Any] = await resp.json(content_type=None)
    return str(body["error"]["code"])


def _basic(secret: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"app:{secret}".encode()).decode()}


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


async def test_a_security_task_holds_one_policy_and_one_signature(harness: Harness) -> None:
    """``security=p:P,s:00,s:G`` and ``p:AAAA,policy:P,s:G`` checked only the last value
    of a repeated option (a short and a long name are one): 200 with a bad signature or
    policy first. A repeated option is a 400, on the CDN, on ``/process`` and in the
    base64 form (whose JSON params may repeat a key)."""
    app = harness.secure_app
    stored = await harness.store(picture(30, 20, ".png"), app, filename="c.png")
    handle = str(stored["handle"])
    for seed in range(36):
        rng = random.Random(seed)
        pairs = [_made(harness, app, rng, ["read", "convert", "store"])]
        pairs += [_made(harness, app, rng, ["read", "convert"]) for _ in range(rng.randint(0, 2))]
        options = [(rng.choice(NAMES[f]), f, pair[f]) for pair in pairs for f in FIELDS]
        if len(options) > 2 and rng.random() < 0.4:
            options.pop(rng.randrange(len(options)))  # two policies, one signature: still two
        rng.shuffle(options)
        repeated = len(options) > 2
        place = rng.choice(["cdn", "process", "b64"])
        width = rng.randint(4, 25)
        if place == "b64":
            params = ",".join(f"{json.dumps(f)}:{json.dumps(v)}" for _, f, v in options)
            tasks = f'[{{"name":"security","params":{{{params}}}}},'
            tasks += f'{{"name":"resize","params":{{"width":{width}}}}}]'
            resp = await harness.cdn.get(f"/b64/{_b64(tasks)}/{handle}")
        else:
            security = "security=" + ",".join(f"{n}:{v}" for n, _, v in options)
            if place == "cdn":
                resp = await harness.cdn.get(f"/{security}/resize=width:{width}/{handle}")
            else:
                resp = await harness.api.post(
                    f"/process/{app.api_key}/{security}/resize=width:{width}/store/{handle}"
                )
        case = (seed, place, [(n, v[:12]) for n, _, v in options])
        if repeated:
            assert resp.status == 400, (case, await resp.text())
            assert await _error(resp) == "INVALID_PARAMETER", case
        elif pairs[0]["ok"]:
            assert resp.status == 200, (case, await resp.text())
            if place != "process":
                assert decoded(await resp.read()).width == width, case
        else:
            assert resp.status == 403, (case, await resp.text())


def _upload_form(app: App, rng: random.Random, copies: list[tuple[str, str]]) -> Any:
    """/multipart/start's fields with ``copies`` (name, value) mixed in, as a form (url
    encoded or multipart) or as JSON text (which may hold a key twice)."""
    fields = [("apikey", app.api_key), ("filename", "a.bin"), ("size", "10")]
    if rng.random() < 0.2:
        fields.append(("apikey", app.api_key))  # the key twice: a 400 as well
    fields += copies
    rng.shuffle(fields)
    kind = rng.choice(["urlencoded", "form-data", "json"])
    if kind == "json":
        text = ",".join(f"{json.dumps(k)}:{json.dumps(v)}" for k, v in fields)
        return (
            kind,
            fields,
            {"data": "{" + text + "}", "headers": {"Content-Type": "application/json"}},
        )
    if kind == "urlencoded":
        return kind, fields, {"data": fields}
    form = aiohttp.FormData()
    for name, value in fields:
        form.add_field(name, value, content_type="text/plain")
    return kind, fields, {"data": form}


async def test_an_upload_field_is_sent_once(harness: Harness) -> None:
    """``policy=P,signature=G,policy=EP,signature=ES`` as form fields: the first copy was
    read and the second never checked (200); as JSON keys, the last. A repeated field or
    key (``policy``, ``signature``, ``apikey``) is a 400, whatever the body's type, and a
    query pair must still be the body's pair."""
    app = harness.secure_app
    for seed in range(40):
        rng = random.Random(seed)
        pairs = [_made(harness, app, rng, ["store"]) for _ in range(rng.randint(1, 2))]
        copies = [(f, pair[f]) for pair in pairs for f in FIELDS]
        if len(copies) > 2 and rng.random() < 0.4:
            copies.pop(rng.randrange(len(copies)))
        query = {f: pairs[0][f] for f in FIELDS} if rng.random() < 0.3 else {}
        if query and rng.random() < 0.5:
            query = {f: _made(harness, app, rng, ["store"])[f] for f in FIELDS}
        kind, fields, send = _upload_form(app, rng, copies)
        resp = await harness.api.post("/multipart/start", params=query, **send)
        names = [name for name, _ in fields]
        case = (seed, kind, names, bool(query))
        differs = query and (query["policy"], query["signature"]) != (
            pairs[0]["policy"],
            pairs[0]["signature"],
        )
        if len(set(names)) < len(names) or differs:
            assert resp.status == 400, (case, await resp.text())
            assert await _error(resp) == "INVALID_PARAMETER", case
        elif pairs[0]["ok"]:
            assert resp.status == 200, (case, await resp.text())
        else:
            assert resp.status == 403, (case, await resp.text())


async def test_process_reads_every_credential(harness: Harness, image_site: str) -> None:
    """``POST /process`` read the JSON security task only: an expired query pair passed
    on an open app unread, and a good query pair or Basic ``app:<secret>`` on a secure
    app was 401. It reads them as every route does, with the one-pair rule."""
    for seed in range(40):
        rng = random.Random(seed)
        app = rng.choice([harness.open_app, harness.secure_app])
        task = _made(harness, app, rng, ["store"]) if rng.random() < 0.5 else None
        in_query = None
        if rng.random() < 0.5:
            same = task is not None and rng.random() < 0.5
            in_query = task if same else _made(harness, app, rng, ["store"])
        query = [(f, in_query[f]) for f in FIELDS] if in_query else []
        if in_query and rng.random() < 0.2:
            query.append(("policy", _made(harness, app, rng, ["store"])["policy"]))
        basic = rng.choice([None, app.secret, "wrong"])
        tasks: list[dict[str, Any]] = [{"name": "store", "params": {}}]
        if task is not None:
            tasks.append({"name": "security", "params": {f: task[f] for f in FIELDS}})
        body = {"apikey": app.api_key, "sources": [image_site], "tasks": tasks}
        headers = _basic(basic) if basic else {}
        resp = await harness.api.post("/process", json=body, params=query, headers=headers)
        case = (seed, app.security, task is not None, len(query), basic)
        sent = [p for p in (task, in_query) if p is not None]
        if len(query) > 2 or len({(p["policy"], p["signature"]) for p in sent}) > 1:
            assert resp.status == 400, (case, await resp.text())
            assert await _error(resp) == "INVALID_PARAMETER", case
        elif basic == "wrong" and app.security:  # a call that needs credentials
            assert resp.status == 401, (case, await resp.text())
            assert await _error(resp) == "INVALID_CREDENTIALS", case
        elif sent:
            assert resp.status == (200 if sent[0]["ok"] else 403), (case, await resp.text())
        elif basic == app.secret or not app.security:
            assert resp.status == 200, (case, await resp.text())
            assert (await resp.json())["status"] == "Stored", case
        else:
            assert resp.status == 401, (case, await resp.text())
            assert await _error(resp) == "AUTH_REQUIRED", case


async def test_an_empty_policy_or_signature_is_a_malformed_pair(harness: Harness) -> None:
    """``?policy=&signature=`` answered 401 "policy and signature must be sent together"
    though both were sent. Sent and empty: 403 ``INVALID_POLICY`` (an empty signature,
    ``INVALID_SIGNATURE``); one left out is still 401 ``AUTH_REQUIRED``."""
    for app in (harness.open_app, harness.secure_app):
        handle = str((await harness.store(picture(8, 6, ".png"), app, filename="e.png"))["handle"])
        good = harness.policy(app, call=["read"])
        for policy in (None, "", good["policy"]):
            for signature in (None, "", good["signature"]):
                query = {"key": app.api_key}
                query.update({"policy": policy} if policy is not None else {})
                query.update({"signature": signature} if signature is not None else {})
                resp = await harness.api.get(f"/api/file/{handle}", params=query)
                case = (app.security, policy, signature)
                if policy is None and signature is None:
                    assert resp.status == (401 if app.security else 200), case
                elif policy is None or signature is None:
                    assert resp.status == 401, case
                    assert await _error(resp) == "AUTH_REQUIRED", case
                elif policy == "":
                    assert resp.status == 403, case
                    assert await _error(resp) == "INVALID_POLICY", case
                elif signature == "":
                    assert resp.status == 403, case
                    assert await _error(resp) == "INVALID_SIGNATURE", case
                else:
                    assert resp.status == 200, case


async def test_an_empty_policy_or_signature_in_a_path_is_a_malformed_pair(harness: Harness) -> None:
    """The path's ``security`` task follows the query's rule: sent and empty is 403
    ``INVALID_POLICY`` (``INVALID_SIGNATURE``), not a pair taken as not sent."""
    for app in (harness.open_app, harness.secure_app):
        handle = str((await harness.store(picture(8, 6, ".png"), app, filename="e.png"))["handle"])
        good = harness.policy(app, call=["read", "convert"])
        for policy, signature in (("", good["signature"]), (good["policy"], ""), ("", "")):
            for spelled in ("p:{p},s:{s}", 'policy:"{p}",signature:"{s}"'):
                security = "security=" + spelled.format(p=policy, s=signature)
                for prefix in (f"/{app.api_key}", ""):
                    resp = await harness.cdn.get(f"{prefix}/{security}/flip/{handle}")
                    case = (app.security, prefix, security)
                    assert resp.status == 403, case
                    code = "INVALID_POLICY" if policy == "" else "INVALID_SIGNATURE"
                    assert await _error(resp) == code, case
