"""The API origin's process address takes every form of the CDN's and answers what the
CDN answers: with no processing task (a handle alone, ``cache``, ``security``, an API
key, the base64 form) the stored file as it is, ``/<HANDLE>/metadata`` the metadata
JSON; ``/process/<HANDLE>`` re-rendered the file (a JPEG encoded again, a text file drawn
as a PNG) and answered ``/metadata`` with that render. Generated path shapes (seeds
5101-5103), compared byte for byte: status, Content-Type and body."""

from __future__ import annotations

import base64
import json
import random
from typing import Any

import pytest
from yarl import URL

from stowage.registry.base import App
from tests.api.harness import Harness
from tests.api.sites import serving
from tests.api.test_transform import picture, stored


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _task_json(task: str) -> dict[str, Any]:
    """A plain task as filestack-js's base64 form writes it."""
    name, _, options = task.partition("=")
    if not options:
        return {"name": name}
    if options == "false":
        return {"name": name, "params": False}
    params: dict[str, Any] = {}
    for option in options.split(","):
        key, _, value = option.partition(":")
        params[{"p": "policy", "s": "signature"}.get(key, key)] = (
            int(value) if value.isdigit() else value
        )
    return {"name": name, "params": params}


def _path(rng: random.Random, key: str | None, tasks: list[str], source: str, form: str) -> str:
    if form == "b64":
        listed = _b64(json.dumps([_task_json(t) for t in tasks]))
        return f"/{key}/b64/{listed}/b64://{_b64(source)}"
    quoted = f'"{source}"' if source.startswith("http") and rng.random() < 0.5 else source
    return "/".join(["", *([key] if key else []), *tasks, quoted])


def _shape(
    rng: random.Random, app: App, pair: dict[str, str], sources: dict[str, str]
) -> tuple[str, dict[str, str]]:
    """A path (without ``/process``) and its query."""
    name = rng.choice(sorted(sources))
    source = sources[name]
    url = source.startswith("http")
    key = app.api_key if url or rng.random() < 0.6 else None
    security = f"security=p:{pair['policy']},s:{pair['signature']}" if app.security else None
    pool = ["cache=false", f"cache=expiry:{rng.randint(1, 99999)}"]
    pool += [security] if security else []
    tasks = rng.sample(pool, rng.randint(0, len(pool)))
    if rng.random() < 0.25:  # a processing task: both origins render the same
        tasks.insert(rng.randint(0, len(tasks)), rng.choice(["flip", "imagesize", "auto_image"]))
    form = "b64" if key and rng.random() < 0.3 else "plain"
    query = {} if security in tasks else dict(pair) if app.security else {}
    path = _path(rng, key, tasks, source, form)
    if not url and form == "plain" and rng.random() < 0.3 and not (set(tasks) - set(pool)):
        path += "/metadata"
    return path, query


@pytest.mark.parametrize("seed", [5101, 5102, 5103])
async def test_process_answers_what_the_cdn_answers(harness: Harness, seed: int) -> None:
    rng = random.Random(seed)
    photo = picture(rng.randint(20, 90), rng.randint(20, 90), ".jpg", Q=rng.randint(60, 95))
    text = rng.randbytes(rng.randint(1, 80)).hex().encode()
    async with serving("/a.png", picture(30, 20, ".png"), "image/png") as link:
        apps = {"open": harness.open_app, "secure": harness.secure_app}
        sources: dict[str, dict[str, str]] = {}
        bodies: dict[str, bytes] = {}
        for label, app in apps.items():
            sources[label] = {
                "photo": await stored(harness, photo, "p.jpg", app),
                "text": await stored(harness, text, "t.txt", app),
                "url": link,
            }
            bodies[sources[label]["photo"]], bodies[sources[label]["text"]] = photo, text
        as_is = metadata = 0
        for drawn in range(120):  # 36 at least, more until both kinds were drawn
            if drawn >= 36 and as_is >= 5 and metadata >= 1:
                break
            label = rng.choice(sorted(apps))
            app = apps[label]
            calls = rng.choice([["read", "stat"], ["read", "stat", "convert"]])
            pair = harness.policy(app, call=calls)
            path, query = _shape(rng, app, pair, sources[label])
            cdn = await harness.cdn.get(URL(path, encoded=True), params=query)
            api = await harness.api.get(URL("/process" + path, encoded=True), params=query)
            cdn_body, api_body = await cdn.read(), await api.read()
            assert (api.status, api.headers.get("Content-Type")) == (
                cdn.status,
                cdn.headers.get("Content-Type"),
            ), (path, api_body[:300], cdn_body[:300])
            assert api_body == cdn_body, (path, api_body[:200], cdn_body[:200])
            handle = path.rsplit("/", 2)[-2 if path.endswith("/metadata") else -1]
            if path.endswith("/metadata"):
                assert api.status == 200 and api.content_type == "application/json", path
                assert json.loads(api_body)["size"] == len(bodies[handle]), path
                metadata += 1
            elif (
                handle in bodies
                and "/b64/" not in path
                and not any(t in path for t in ("flip", "imagesize", "auto_image"))
            ):
                assert api.status == 200 and api_body == bodies[handle], path  # as stored
                as_is += 1
        assert as_is >= 5 and metadata >= 1, (as_is, metadata)
        posted = await harness.api.post(f"/process/{sources['open']['photo']}")  # POST too
        assert posted.status == 200 and await posted.read() == photo
