"""The upload host's endpoints (``/multipart/...``) the Filestack SDKs' ``upload`` uses.

Bodies come as JSON (python, js, go) or as form fields (java, php: flat
``store_location``..., php's parts as ``"1:etag;2:etag"``); both become one flat view
here before the core (``core/uploads.py``) sees them.
"""

from __future__ import annotations

import json
import re
from typing import Any

from aiohttp import web

from stowage import booleans, errors
from stowage.core.security import Credentials
from stowage.core.uploads import StartParams, location_url
from stowage.http import inputs, strict
from stowage.http.api import store_result
from stowage.http.keys import PARTS

_INTEGER = re.compile(r"-?[0-9]{1,18}")


class Fields:
    """A request's fields, whichever way they were sent."""

    def __init__(self, data: dict[str, Any], query: Any) -> None:
        self.data = data
        self.query = query

    def get(self, name: str) -> Any:
        value = self.data.get(name)
        return self.query.get(name) if value is None else value

    def text(self, name: str) -> str | None:
        value = self.get(name)
        return None if value is None else str(value)

    def integer(self, name: str, default: int | None = None) -> int:
        value = self.get(name)
        if value is None and default is not None:
            return default
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        text = value.strip(" \t") if isinstance(value, str) else ""
        if _INTEGER.fullmatch(text) is None:
            raise errors.InvalidParameter(f"{name} must be an integer", parameter=name)
        return int(text)

    def store(self, name: str) -> str | None:
        nested = self.data.get("store")
        value = nested.get(name) if isinstance(nested, dict) else None
        if value is None:
            value = self.get(f"store_{name}")
        return None if value is None else str(value)

    def credentials(self, request: web.Request) -> Credentials:
        creds = inputs.credentials(request)
        return inputs.with_pair(creds, self.text("policy"), self.text("signature"))


async def fields(request: web.Request) -> Fields:
    if request.content_type == "application/json":
        data = await strict.read_json(request)
    elif request.content_type in ("multipart/form-data", "application/x-www-form-urlencoded"):
        data = await strict.read_form(request)
    else:
        data = {}
    if not isinstance(data, dict):
        raise errors.BadRequest("the body must be a JSON object")
    return Fields(data, request.query)


def listed_parts(value: Any) -> list[tuple[int, str]] | None:
    """``[{"part_number": 1, "etag": "..."}]`` (JSON) or ``"1:etag;2:etag"`` (form)."""
    if value in (None, "", []):
        return None
    try:
        if isinstance(value, str):
            value = json.loads(value) if value.lstrip().startswith("[") else _php_parts(value)
        return [(_part_number(p["part_number"]), str(p["etag"])) for p in value]
    except (TypeError, ValueError, KeyError, RecursionError) as exc:
        raise errors.InvalidParameter("parts are malformed", parameter="parts") from exc


def truthy(value: Any, name: str = "value") -> bool:
    return booleans.parse(value, name)


def _part_number(value: Any) -> int:
    """A part's number: a JSON number, or text of ASCII digits (not "\u0661")."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return int(value)
    text = value.strip(" \t") if isinstance(value, str) else ""
    if not _INTEGER.fullmatch(text):
        raise ValueError("a part number is a whole number")
    return int(text)


def _php_parts(text: str) -> list[dict[str, str]]:
    pairs = (item.split(":", 1) for item in text.split(";") if item.strip())
    return [{"part_number": n, "etag": etag} for n, etag in pairs]


async def start_handler(request: web.Request) -> web.Response:
    parts = request.app[PARTS]
    f = await fields(request)
    params = StartParams(
        filename=f.text("filename"),
        mimetype=f.text("mimetype"),
        size=f.integer("size"),
        location=f.store("location"),
        path=f.store("path"),
        container=f.store("container"),
        access=f.store("access"),
    )
    session = await parts.uploads.start(f.text("apikey"), params, f.credentials(request))
    answer = {
        "uri": f"/{session.upload_id}",
        "region": "stowage",
        "upload_id": session.upload_id,
        "location_url": location_url(parts.settings),
    }
    if truthy(f.get("fii"), "fii"):
        answer["upload_type"] = "intelligent_ingestion"
    return web.json_response(answer)


async def upload_handler(request: web.Request) -> web.Response:
    parts = request.app[PARTS]
    f = await fields(request)
    target = await parts.uploads.part_url(
        _upload_id(f),
        f.text("apikey"),
        part=f.integer("part"),
        size=f.integer("size"),
        md5_b64=f.text("md5"),
        offset=f.integer("offset", 0),
        creds=f.credentials(request),
    )
    return web.json_response(
        {
            "url": target.url,
            "headers": target.headers,
            "location_url": location_url(parts.settings),
        }
    )


async def part_handler(request: web.Request) -> web.Response:
    parts = request.app[PARTS]
    number = request.match_info["part"]
    if not _INTEGER.fullmatch(number):  # int() reads any script's digits ("\u0661")
        raise errors.NotFound()
    part = int(number)
    declared = request.content_length
    size = request.query.get("size", "")
    if declared is not None and _INTEGER.fullmatch(size) and declared != int(size):
        raise errors.PartSizeMismatch(expected=int(size), received=declared)
    piece = await parts.uploads.put_part(
        request.match_info["upload_id"],
        part,
        dict(request.query),
        await inputs.body_chunks(request, parts.settings),
    )
    return web.Response(status=200, headers={"ETag": f'"{piece.etag}"'})


async def commit_handler(request: web.Request) -> web.Response:
    f = await fields(request)
    await request.app[PARTS].uploads.commit(
        _upload_id(f), f.text("apikey"), f.integer("part"), f.credentials(request)
    )
    return web.json_response({})


async def complete_handler(request: web.Request) -> web.Response:
    parts = request.app[PARTS]
    f = await fields(request)
    record = await parts.uploads.complete(
        _upload_id(f), f.text("apikey"), listed_parts(f.get("parts")), f.credentials(request)
    )
    if record is None:
        return web.json_response({"status": "pending"}, status=202)
    tags = f.get("upload_tags")
    return web.json_response(
        {
            **store_result(parts.links, record),
            "mimetype": record.mimetype,
            "status": "Stored",
            "upload_tags": tags if isinstance(tags, dict) else None,
            "workflows": [],
        }
    )


def _upload_id(f: Fields) -> str:
    upload_id = f.text("upload_id")
    if not upload_id:
        raise errors.InvalidParameter("upload_id is required", parameter="upload_id")
    return upload_id
