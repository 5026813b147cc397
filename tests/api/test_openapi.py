"""The OpenAPI document is true: every route of both apps is in it, and real responses
validate against the schemas it declares for them."""

from __future__ import annotations

import base64
import re
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from stowage.http.app import api_app, cdn_app
from stowage.http.openapi import document
from tests.api.harness import Harness

#: aiohttp routes whose OpenAPI path is spelled differently.
ALIASES = {
    # The CDN's catch-all parses every URL form (docs: /{handle}, /security=.../{handle}...).
    ("cdn", "/{tail}"): ("/{handle}", "/{handle}/metadata"),
    ("api", "/api/docs/{name}"): (),  # the reference page's own assets
    ("api", "/console/{name}"): (),  # the console's own assets
}
#: Routes of the CDN documented once with the API's operation (one path, one entry).
SHARED = {
    ("cdn", "post", "/process"): ("api", "post", "/process"),
    ("cdn", "get", "/api/file/{handle}"): ("api", "get", "/api/file/{handle}"),
    ("cdn", "get", "/api/file/{handle}/convert"): ("api", "get", "/api/file/{handle}/convert"),
    # the CDN origin sends it on to the API origin's (308)
    ("cdn", "post", "/api/file/{handle}/convert"): ("api", "post", "/api/file/{handle}/convert"),
}


def _openapi_path(canonical: str) -> str:
    return re.sub(r"\{(\w+)(:[^}]*)?\}", r"{\1}", canonical)


def _routes(harness: Harness) -> set[tuple[str, str, str]]:
    found = set()
    for origin, app in (("api", api_app(harness.parts)), ("cdn", cdn_app(harness.parts))):
        plain = {route.resource.canonical for route in app.router.routes()}
        for route in app.router.routes():
            if route.method == "HEAD":
                continue  # aiohttp adds HEAD to every GET; the document says so per operation
            # A route's form with a trailing slash is the same operation (routes.py).
            canonical = route.resource.canonical
            if canonical.endswith("/") and canonical[:-1] in plain:
                canonical = canonical[:-1]
            for path in ALIASES.get((origin, canonical), (_openapi_path(canonical),)):
                entry = (origin, route.method.lower(), path)
                found.add(SHARED.get(entry, entry))
    return found


def _origin(doc: dict[str, Any], path: str) -> str:
    servers = doc["paths"][path].get("servers")
    return "cdn" if servers and "CDN" in servers[0]["description"] else "api"


async def test_every_route_is_documented(harness: Harness) -> None:
    doc = document(harness.settings)
    documented = {
        (_origin(doc, path), method, path)
        for path, item in doc["paths"].items()
        for method in item
        if method in {"get", "post", "put", "delete", "patch"}
    }
    routes = _routes(harness)
    assert routes - documented == set(), "routes missing from the OpenAPI document"
    assert documented - routes == set(), "documented operations that no route serves"


async def test_document_is_valid_openapi_3_1(harness: Harness) -> None:
    resp = await harness.api.get("/api/openapi.json")
    assert resp.status == 200
    doc = await resp.json()
    assert doc["openapi"] == "3.1.0"
    from openapi_spec_validator import validate

    validate(doc)


class Checker:
    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc

    def schema(self, path: str, method: str, status: int) -> dict[str, Any]:
        responses = self.doc["paths"][path][method]["responses"]
        response = responses[str(status)]
        if "$ref" in response:
            response = self.doc["components"]["responses"][response["$ref"].rsplit("/", 1)[1]]
        return {
            **response["content"]["application/json"]["schema"],
            "components": self.doc["components"],
        }

    async def check(self, resp: Any, path: str, method: str) -> dict[str, Any]:
        body: dict[str, Any] = await resp.json()
        Draft202012Validator(self.schema(path, method, resp.status)).validate(body)
        return body


def _basic(secret: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"app:{secret}".encode()).decode()}


async def test_real_responses_validate(harness: Harness) -> None:
    doc = await (await harness.api.get("/api/openapi.json")).json()
    c = Checker(doc)
    app = harness.open_app
    key = {"key": app.api_key}
    auth = _basic(app.secret)
    stored = await c.check(
        await harness.api.post("/api/store/S3", params={**key, "filename": "a.txt"}, data=b"hi"),
        "/api/store/{provider}",
        "post",
    )
    handle = stored["handle"]
    await c.check(
        await harness.api.post(f"/api/store/S3/{handle}", params=key),
        "/api/store/{provider}/{handle}",
        "post",
    )
    await c.check(
        await harness.api.post(f"/api/file/{handle}", params=key, data=b"new", headers=auth),
        "/api/file/{handle}",
        "post",
    )
    selectors = {
        name: "true"
        for name in (
            "size",
            "mimetype",
            "sha256",
            "md5",
            "cloud",
            "source_url",
            "upload_status",
            "writeable",
            "path",
            "location",
            "container",
            "filename",
            "uploaded",
        )
    }
    meta = await c.check(
        await harness.api.get(f"/api/file/{handle}/metadata", params=selectors),
        "/api/file/{handle}/metadata",
        "get",
    )
    assert meta["size"] == 3
    await c.check(
        await harness.api.get(f"/api/file/{handle}/metadata"), "/api/file/{handle}/metadata", "get"
    )
    await c.check(await harness.cdn.get(f"/{handle}/metadata"), "/{handle}/metadata", "get")
    listed = await c.check(
        await harness.api.get("/api/files", params=key, headers=auth), "/api/files", "get"
    )
    assert {f["handle"] for f in listed["files"]} >= {handle}
    await c.check(await harness.api.get("/healthz"), "/healthz", "get")
    await c.check(await harness.api.get("/readyz"), "/readyz", "get")
    removed = await c.check(
        await harness.api.delete(f"/api/file/{handle}", params=key, headers=auth),
        "/api/file/{handle}",
        "delete",
    )
    assert removed["storage"] == "deleted"


@pytest.mark.parametrize(
    ("method", "path", "doc_path", "status"),
    [
        ("get", "/api/file/AAAAAAAAAAAAAAAAAAAA", "/api/file/{handle}", 404),
        ("delete", "/api/file/AAAAAAAAAAAAAAAAAAAA", "/api/file/{handle}", 404),
        ("post", "/api/store/S3", "/api/store/{provider}", 401),
        ("post", "/api/store/nope?key=openappkey0000000001", "/api/store/{provider}", 400),
        ("get", "/api/files?key=openappkey0000000001", "/api/files", 401),
        ("get", "/api/files?key=openappkey0000000001&limit=0", "/api/files", 400),
        ("get", "/api/file/AAAAAAAAAAAAAAAAAAAA/metadata", "/api/file/{handle}/metadata", 404),
        ("post", "/multipart/start", "/multipart/start", 400),
    ],
)
async def test_error_responses_validate(
    harness: Harness, method: str, path: str, doc_path: str, status: int
) -> None:
    c = Checker(document(harness.settings))
    resp = await harness.api.request(method.upper(), path)
    assert resp.status == status, await resp.text()
    body = await c.check(resp, doc_path, method)
    assert set(body) == {"error"}


async def test_reference_page_is_served_locally(harness: Harness) -> None:
    resp = await harness.api.get("/api/docs")
    assert resp.status == 200, await resp.text()
    html = await resp.text()
    assert "/api/docs/swagger-ui-bundle.js" in html
    assert "http" not in html and "//" not in html  # nothing from another origin
    for asset in ("swagger-ui-bundle.js", "swagger-ui.css", "docs.js"):
        resp = await harness.api.get(f"/api/docs/{asset}")
        assert resp.status == 200, asset
        assert resp.headers["X-Content-Type-Options"] == "nosniff"
    assert (await harness.api.get("/api/docs/..%2Fdocs.html")).status == 404


async def test_upload_protocol_responses_validate(harness: Harness) -> None:
    c = Checker(document(harness.settings))
    key = harness.open_app.api_key
    data = b"part one." * 1000
    start = await c.check(
        await harness.api.post(
            "/multipart/start", json={"apikey": key, "filename": "p.bin", "size": len(data)}
        ),
        "/multipart/start",
        "post",
    )
    upload_id = start["upload_id"]
    target = await c.check(
        await harness.api.post(
            "/multipart/upload",
            json={"apikey": key, "upload_id": upload_id, "part": 1, "size": len(data)},
        ),
        "/multipart/upload",
        "post",
    )
    path = "/" + target["url"].split("/", 3)[3]  # same origin: the test server's
    put = await harness.api.put(path, data=data, headers=target["headers"])
    assert put.status == 200, await put.text()
    etag = put.headers["ETag"].strip('"')
    done = await c.check(
        await harness.api.post(
            "/multipart/complete",
            json={
                "apikey": key,
                "upload_id": upload_id,
                "parts": [{"part_number": 1, "etag": etag}],
            },
        ),
        "/multipart/complete",
        "post",
    )
    assert done["size"] == len(data) and done["status"] == "Stored"


async def test_process_response_validates(harness: Harness) -> None:
    c = Checker(document(harness.settings))
    key = harness.open_app.api_key
    source = await harness.store(b"fetched by /process", filename="src.txt")
    url = str(harness.api.make_url(f"/api/file/{source['handle']}"))
    body = {"apikey": key, "sources": [url], "tasks": [{"name": "store", "params": {}}]}
    done = await c.check(await harness.api.post("/process", json=body), "/process", "post")
    assert done["size"] == len(b"fetched by /process") and done["handle"] != source["handle"]
