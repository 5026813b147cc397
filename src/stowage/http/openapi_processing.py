"""The OpenAPI entries of the transformation routes (``http.transform``), merged into the
document by ``openapi.document``. docs/transformations.md has every task and option."""

from __future__ import annotations

from typing import Any

from stowage.processing import legacy

Doc = dict[str, Any]
_ERROR = {"$ref": "#/components/responses/Error"}
_TAIL = {
    "name": "tail",
    "in": "path",
    "required": True,
    "description": "Tasks, then the source: `resize=width:300/flip/<HANDLE>`, "
    "`<APIKEY>/<tasks>/<HANDLE>` or `<APIKEY>/<tasks>/<URL>`.",
    "schema": {"type": "string"},
}
_RESULT = {
    "description": "The transformed image (or JSON for `imagesize`, or the store result "
    "when the chain ends with `store`). ETag, Range and If-None-Match as for files.",
    "content": {"*/*": {"schema": {}}},
}
_ERRORS = {str(s): _ERROR for s in (400, 401, 403, 404, 413, 415, 422, 503)}
_SECURITY: list[Doc] = [{}, {"policy": [], "signature": []}, {"appSecret": []}]


def _op(summary: str, op_id: str, tag: str, params: list[Doc]) -> Doc:
    return {
        "summary": summary,
        "operationId": op_id,
        "tags": [tag],
        "description": "A Filestack transformation chain (docs/transformations.md). With the "
        "app's security on, the policy needs the `convert` call (and `store` for a store "
        "task).",
        "parameters": params,
        "security": _SECURITY,
        "responses": {"200": _RESULT, **_ERRORS},
    }


def processing_paths(cdn: list[Doc]) -> Doc:
    tasks = {**_TAIL, "name": "tasks", "description": "The tasks, `/`-separated."}
    handle = {**_TAIL, "name": "handle", "description": "The file's handle."}
    redirect = {
        "summary": "A chain ending in store, sent on to the API's process address",
        "operationId": "cdnProcessStore",
        "tags": ["cdn"],
        "parameters": [tasks, handle],
        "responses": {"308": {"description": "To /process/<tasks>/<handle>."}, **_ERRORS},
    }
    return {
        "/process/{tail}": {
            "get": _op("Transform a file or a url", "processGet", "files", [_TAIL]),
            "post": _op("Transform, and store with a store task", "processPost", "files", [_TAIL]),
        },
        "/api/file/{handle}/convert": {"get": _legacy(handle), "post": _legacy_store(handle)},
        "/{tasks}/{handle}": {"servers": cdn, "post": redirect},
        "/preview-assets/{name}": {"servers": cdn, "get": _preview_asset()},
    }


def _legacy(handle: Doc) -> Doc:
    """The first File API's conversion address (``processing/legacy.py``)."""
    params = [{"name": n, "in": "query", "schema": {"type": "string"}} for n in legacy.NAMES]
    described = {
        **_op("Convert with the first File API's query", "legacyConvert", "files", []),
        "description": "Saved links of filepicker.io and Filestack's older SDKs "
        "(`/api/file/<HANDLE>/convert?w=200&h=150&fit=crop`), read as today's chain "
        '(docs/transformations.md, "The first File API\'s convert links"). Served on the '
        "CDN origin too, with `/api/file/<HANDLE>` as a CDN link of the file.",
    }
    return {**described, "parameters": [handle, *params]}


def _legacy_store(handle: Doc) -> Doc:
    names = (*legacy.NAMES, *legacy.STORE_NAMES)
    params = [{"name": n, "in": "query", "schema": {"type": "string"}} for n in names]
    return {
        **_op("Convert and store, the first File API's way", "legacyConvertStore", "files", []),
        "description": "As the GET, its result stored as a new file of the app (the "
        "policy needs `convert` and `store`); answers the store result JSON. The CDN "
        "origin sends such a POST on to this address (308).",
        "parameters": [handle, *params],
    }


def _preview_asset() -> Doc:
    name = {**_TAIL, "name": "name", "description": "`viewer.js`, `pdfjs/pdf.min.mjs`, ..."}
    return {
        "summary": "The preview page's script, styles and pdf.js",
        "operationId": "previewAsset",
        "tags": ["cdn"],
        "description": "Files of the package for `/preview/<HANDLE>` (a transformation URL "
        'of the `preview` task: docs/transformations.md, "The preview page").',
        "parameters": [name],
        "responses": {
            "200": {"description": "The file.", "content": {"*/*": {"schema": {}}}},
            "404": _ERROR,
        },
    }
