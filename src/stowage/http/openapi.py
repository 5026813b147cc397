"""The OpenAPI 3.1 document of both origins, written by hand and kept true by tests.

``tests/api/test_openapi.py`` checks that every route of the API and CDN apps appears
here and that real responses validate against the schemas below.
"""

from __future__ import annotations

from typing import Any

from stowage import __version__, booleans
from stowage.config import Settings
from stowage.core.examine import HASHES
from stowage.core.metadata import SELECTORS
from stowage.errors import all_error_classes
from stowage.http.openapi_processing import processing_paths

Doc = dict[str, Any]
JSON = "application/json"


def ref(name: str) -> Doc:
    return {"$ref": f"#/components/schemas/{name}"}


def _query(name: str, description: str, schema: Doc | None = None, **extra: Any) -> Doc:
    return {
        "name": name,
        "in": "query",
        "description": description,
        "schema": schema or {"type": "string"},
        **extra,
    }


def _path(name: str, description: str, **schema: Any) -> Doc:
    return {
        "name": name,
        "in": "path",
        "required": True,
        "description": description,
        "schema": {"type": "string", **schema},
    }


BOOL = {
    "type": "string",
    "enum": list(booleans.WORDS),
    "description": "true: `true`, `1`, `yes`, `on`; false: `false`, `0`, `no`, `off` "
    "(any letter case). Anything else is 400 INVALID_PARAMETER.",
}
HANDLE = _path("handle", "The file's handle (20 characters).", pattern=r"^[\w\-]{20}$")
PROVIDER = _path(
    "provider",
    "Storage provider name.",
    enum=["S3", "gcs", "azure", "rackspace", "dropbox"],
)
KEY = _query("key", "The app's API key.")
KEY_REQUIRED = {**KEY, "required": True}
POLICY = _query("policy", "A base64url JSON policy (docs/security.md).")
SIGNATURE = _query("signature", "Hex HMAC-SHA256 of the policy with the app secret.")
AUTH_PARAMS = [POLICY, SIGNATURE]
#: Either a signed policy in the query, or the app secret as HTTP Basic ``app:<secret>``.
SECURITY_OPTIONAL: list[Doc] = [{}, {"policy": [], "signature": []}, {"appSecret": []}]
SECURITY_REQUIRED: list[Doc] = [{"policy": [], "signature": []}, {"appSecret": []}]


def _json(schema: Doc, description: str) -> Doc:
    return {"description": description, "content": {JSON: {"schema": schema}}}


def _errors(*statuses: int) -> dict[str, Doc]:
    return {str(s): {"$ref": "#/components/responses/Error"} for s in statuses}


FILE_BODY = {
    "description": "The file: a raw body, a multipart form with a `fileUpload` part, "
    "or a form with a `url` to fetch.",
    "content": {
        "application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "properties": {
                    "fileUpload": {"type": "string", "format": "binary"},
                    "url": {"type": "string", "format": "uri"},
                },
            }
        },
        "application/x-www-form-urlencoded": {
            "schema": {
                "type": "object",
                "properties": {"url": {"type": "string", "format": "uri"}},
                "required": ["url"],
            }
        },
    },
}

STORE_PARAMS = [
    _query("filename", "Name of the file (default: from the upload or url)."),
    _query("mimetype", "Content type to record (default: declared, sniffed, guessed)."),
    _query("path", "Storage key; ending in `/` means a folder."),
    _query("container", "Bucket/container name within the provider."),
    _query("access", "`private` or `public`.", {"type": "string", "enum": ["private", "public"]}),
    _query("base64decode", "The body is base64: decode it before storing.", BOOL),
    _query("link", "Make a handle for an object already at `path` (never written).", BOOL),
]

FILE_BYTES = {
    "description": "The file's bytes (ranges, ETag and caching as documented).",
    "content": {"*/*": {"schema": {"type": "string", "format": "binary"}}},
    "headers": {
        "ETag": {"schema": {"type": "string"}},
        "Accept-Ranges": {"schema": {"type": "string"}},
        "Content-Disposition": {"schema": {"type": "string"}},
    },
}
DOWNLOAD_PARAMS = [
    _query("dl", "Force a download (`Content-Disposition: attachment`).", BOOL),
    _query("cache", "`false` answers `Cache-Control: no-store`.", BOOL),
    {"name": "Range", "in": "header", "schema": {"type": "string"}, "description": "bytes=a-b"},
]


def _metadata_params() -> list[Doc]:
    return [_query(name, f"Include `{name}`.", BOOL) for name in SELECTORS]


def _op(summary: str, op_id: str, tag: str, **rest: Any) -> Doc:
    return {"summary": summary, "operationId": op_id, "tags": [tag], **rest}


def _api_paths() -> Doc:
    return {
        "/api/store/{provider}": {
            "post": _op(
                "Store a file",
                "store",
                "files",
                description="Store a new file under a new handle. Needs a `store` policy when "
                "the app has security on.",
                parameters=[PROVIDER, KEY_REQUIRED, *STORE_PARAMS, *AUTH_PARAMS],
                requestBody=FILE_BODY,
                security=SECURITY_OPTIONAL,
                responses={
                    "200": _json(ref("StoreResult"), "The stored file."),
                    **_errors(400, 401, 403, 408, 409, 413, 502, 503, 504),
                },
            )
        },
        "/api/store/{provider}/{handle}": {
            "post": _op(
                "Copy a file",
                "copy",
                "files",
                description="A new handle holding a copy of `handle`, in `provider`.",
                parameters=[PROVIDER, HANDLE, KEY_REQUIRED, *STORE_PARAMS, *AUTH_PARAMS],
                security=SECURITY_OPTIONAL,
                responses={
                    "200": _json(ref("StoreResult"), "The copy."),
                    **_errors(400, 401, 403, 404, 409, 502, 503),
                },
            )
        },
        "/api/file/{handle}": {
            "get": _op(
                "Download a file",
                "download",
                "files",
                description="Also answers HEAD. Needs a `read` policy when security is on.",
                parameters=[HANDLE, KEY, *DOWNLOAD_PARAMS, *AUTH_PARAMS],
                security=SECURITY_OPTIONAL,
                responses={
                    "200": FILE_BYTES,
                    "206": FILE_BYTES,
                    "304": {"description": "Not modified (If-None-Match)."},
                    **_errors(401, 403, 404, 416, 502, 503),
                },
            ),
            "post": _op(
                "Overwrite a file",
                "overwrite",
                "files",
                description="Replace the content. Always needs a `write` policy or the app secret.",
                parameters=[
                    HANDLE,
                    KEY,
                    _query("base64decode", "Decode a base64 body.", BOOL),
                    *AUTH_PARAMS,
                ],
                requestBody=FILE_BODY,
                security=SECURITY_REQUIRED,
                responses={
                    "200": _json(ref("OverwriteResult"), "The new version."),
                    **_errors(400, 401, 403, 404, 408, 409, 413, 502, 503),
                },
            ),
            "delete": _op(
                "Delete a file",
                "remove",
                "files",
                description="Always needs a `remove` policy or the app secret.",
                parameters=[HANDLE, KEY, _skip_storage(), *AUTH_PARAMS],
                security=SECURITY_REQUIRED,
                responses={
                    "200": _json(ref("RemoveResult"), "Removed."),
                    **_errors(401, 403, 404, 502, 503),
                },
            ),
        },
        "/api/file/{handle}/remove": {
            "post": _op(
                "Delete a file (POST form)",
                "removePost",
                "files",
                parameters=[HANDLE, KEY, _skip_storage(), *AUTH_PARAMS],
                security=SECURITY_REQUIRED,
                responses={
                    "200": _json(ref("RemoveResult"), "Removed."),
                    **_errors(401, 403, 404, 502, 503),
                },
            )
        },
        "/api/file/{handle}/metadata": {
            "get": _op(
                "File metadata",
                "metadata",
                "files",
                description="Default fields, or the selected ones. Hashes are computed in one "
                "pass. `exif=true` needs an `exif` policy; a `stat` policy when security is on.",
                parameters=[HANDLE, KEY, *_metadata_params(), *AUTH_PARAMS],
                security=SECURITY_OPTIONAL,
                responses={
                    "200": _json(ref("Metadata"), "The selected fields."),
                    **_errors(401, 403, 404, 422, 502, 503),
                },
            )
        },
        **_list_paths(),
        **_upload_paths(),
        **_service_paths(),
    }


def _fields_body(required: list[str], **properties: Doc) -> Doc:
    schema = {"type": "object", "required": required, "properties": properties}
    return {
        "description": "JSON, or the same fields as a form (`store_location`, ...).",
        "content": {
            JSON: {"schema": schema},
            "application/x-www-form-urlencoded": {"schema": schema},
        },
    }


_STR, _INT = {"type": "string"}, {"type": "integer", "minimum": 0}
_UPLOAD_AUTH = {"apikey": _STR, "policy": _STR, "signature": _STR}
_STORED = ref("UploadResult")


def _upload_op(summary: str, op_id: str, body: Doc, ok: Doc, **more: Doc) -> Doc:
    return {
        "post": _op(
            summary,
            op_id,
            "uploads",
            requestBody=body,
            responses={"200": ok, **more, **_errors(400, 401, 403, 404, 409, 413, 502, 503)},
        )
    }


def _upload_paths() -> Doc:
    store = {
        "type": "object",
        "properties": {k: _STR for k in ("location", "path", "container", "access")},
    }
    return {
        "/multipart/start": _upload_op(
            "Start a resumable upload (Filestack upload protocol)",
            "multipartStart",
            _fields_body(
                ["apikey", "filename", "size"],
                filename=_STR,
                mimetype=_STR,
                size=_INT,
                store=store,
                fii={"type": "boolean"},
                **_UPLOAD_AUTH,
            ),
            _json(ref("UploadStarted"), "The upload id and where to send parts."),
        ),
        "/multipart/upload": _upload_op(
            "Get a signed URL for one part (or a chunk of it at `offset`)",
            "multipartUpload",
            _fields_body(
                ["apikey", "upload_id", "part", "size", "md5"],
                upload_id=_STR,
                part={"type": "integer", "minimum": 1},
                size=_INT,
                md5={"type": "string", "description": "base64 MD5 of the bytes"},
                offset=_INT,
                **_UPLOAD_AUTH,
            ),
            _json(ref("PartTarget"), "PUT the bytes to `url` with `headers`."),
        ),
        "/multipart/part/{upload_id}/{part}": {
            "put": _op(
                "Send one part's bytes (the URL from /multipart/upload; its signature is "
                "the credential)",
                "multipartPart",
                "uploads",
                parameters=[
                    _path("upload_id", "The upload."),
                    _path("part", "1-based part number.", pattern="^[0-9]+$"),
                    *[
                        {**_query(n, "As given in the signed URL."), "required": True}
                        for n in ("offset", "size", "md5", "expires", "signature")
                    ],
                ],
                requestBody={
                    "required": True,
                    "content": {
                        "application/octet-stream": {
                            "schema": {"type": "string", "format": "binary"}
                        }
                    },
                },
                responses={
                    "200": {
                        "description": "Stored; the ETag is the part's hex MD5.",
                        "headers": {"ETag": {"schema": _STR}},
                    },
                    **_errors(400, 403, 404, 408, 413, 502, 503),
                },
            )
        },
        "/multipart/commit": _upload_op(
            "Commit a part sent in chunks (intelligent ingestion)",
            "multipartCommit",
            _fields_body(
                ["apikey", "upload_id", "part"],
                upload_id=_STR,
                part={"type": "integer", "minimum": 1},
                **_UPLOAD_AUTH,
            ),
            _json({"type": "object", "maxProperties": 0}, "Committed."),
        ),
        "/multipart/complete": _upload_op(
            "Assemble the parts into a stored file",
            "multipartComplete",
            _fields_body(
                ["apikey", "upload_id"],
                upload_id=_STR,
                parts={
                    "description": "`[{part_number, etag}]`, or `1:etag;2:etag` in a form",
                    "type": ["array", "string"],
                },
                upload_tags={"type": "object"},
                **_UPLOAD_AUTH,
            ),
            _json(_STORED, "The stored file."),
            **{"202": _json(ref("Status"), "Still assembling: ask again.")},
        ),
        "/process": _upload_op(
            "Store a file from a url (the `store` and `security` tasks of Filestack's "
            "processing API). The CDN origin answers POST /process with a 308 to here.",
            "process",
            {
                "required": True,
                "content": {
                    JSON: {
                        "schema": {
                            "type": "object",
                            "required": ["apikey", "sources", "tasks"],
                            "properties": {
                                "apikey": _STR,
                                "sources": {"type": "array", "minItems": 1, "maxItems": 1},
                                "tasks": {"type": "array", "items": {"type": "object"}},
                                "upload_tags": {"type": "object"},
                            },
                        }
                    }
                },
            },
            _json(_STORED, "The stored file."),
        ),
    }


def _skip_storage() -> Doc:
    return _query("skip_storage", "Forget the handle but keep the stored object.", BOOL)


def _list_paths() -> Doc:
    return {
        "/api/files": {
            "get": _op(
                "List an app's files",
                "listFiles",
                "files",
                description="Ordered by handle, `limit` per page; pass `next` back as `after`. "
                "Always needs a `read` or `stat` policy (without a handle restriction) or the "
                "app secret.",
                parameters=[
                    KEY_REQUIRED,
                    _query("after", "Return handles after this one (the previous `next`)."),
                    _query(
                        "limit",
                        "Page size, 1 to 1000 (default 100).",
                        {"type": "integer", "minimum": 1, "maximum": 1000},
                    ),
                    *AUTH_PARAMS,
                ],
                security=SECURITY_REQUIRED,
                responses={
                    "200": _json(ref("FileList"), "One page of files."),
                    **_errors(400, 401, 403, 503),
                },
            )
        }
    }


def _service_paths() -> Doc:
    page = {"description": "HTML page.", "content": {"text/html": {"schema": {"type": "string"}}}}
    return {
        "/healthz": {
            "get": _op(
                "Liveness",
                "healthz",
                "service",
                responses={"200": _json(ref("Status"), "The process answers.")},
            )
        },
        "/readyz": {
            "get": _op(
                "Readiness",
                "readyz",
                "service",
                description="503 while draining or when the registry does not answer.",
                responses={"200": _json(ref("Status"), "Ready."), **_errors(503)},
            )
        },
        "/metrics": {
            "get": _op(
                "Prometheus metrics",
                "metrics",
                "service",
                responses={
                    "200": {
                        "description": "Prometheus text exposition format 0.0.4.",
                        "content": {"text/plain": {"schema": {"type": "string"}}},
                    }
                },
            )
        },
        "/api/openapi.json": {
            "get": _op(
                "This document",
                "openapi",
                "service",
                responses={"200": _json({"type": "object"}, "OpenAPI 3.1 document.")},
            )
        },
        "/api/docs": {
            "get": _op("Interactive API reference", "apiDocs", "service", responses={"200": page})
        },
        "/console": {"get": _op("Web console", "console", "service", responses={"200": page})},
    }


def _cdn_paths(cdn: list[Doc]) -> Doc:
    refused = _errors(400)
    return {
        "/{handle}": {
            "servers": cdn,
            "get": _op(
                "Download a file from the CDN origin",
                "cdnDownload",
                "cdn",
                description="Also answers HEAD. POST and DELETE answer 400 "
                "`CDN_LINK_NOT_ACCEPTED`: writes use the API link.",
                parameters=[HANDLE, *DOWNLOAD_PARAMS, *AUTH_PARAMS],
                security=SECURITY_OPTIONAL,
                responses={"200": FILE_BYTES, "206": FILE_BYTES, **_errors(401, 403, 404, 416)},
            ),
            "post": _op(
                "Refused on the CDN", "cdnOverwrite", "cdn", parameters=[HANDLE], responses=refused
            ),
            "delete": _op(
                "Refused on the CDN", "cdnRemove", "cdn", parameters=[HANDLE], responses=refused
            ),
        },
        "/{handle}/metadata": {
            "servers": cdn,
            "get": _op(
                "File metadata from the CDN origin",
                "cdnMetadata",
                "cdn",
                parameters=[HANDLE, *_metadata_params(), *AUTH_PARAMS],
                security=SECURITY_OPTIONAL,
                responses={
                    "200": _json(ref("Metadata"), "The selected fields."),
                    **_errors(401, 403, 404),
                },
            ),
        },
        "/{handle}/remove": {
            "servers": cdn,
            "post": _op(
                "Refused on the CDN", "cdnRemovePost", "cdn", parameters=[HANDLE], responses=refused
            ),
        },
    }


def _schemas() -> Doc:
    nullable_str = {"type": ["string", "null"]}
    return {
        "Error": {
            "type": "object",
            "required": ["error"],
            "additionalProperties": False,
            "properties": {
                "error": {
                    "type": "object",
                    "required": ["code", "message"],
                    "additionalProperties": False,
                    "properties": {
                        "code": {"type": "string", "enum": _codes()},
                        "message": {"type": "string"},
                        "details": {"type": "object"},
                    },
                }
            },
        },
        "StoreResult": _schemas_store_result(),
        "OverwriteResult": _object(
            url={"type": "string", "format": "uri"},
            handle={"type": "string"},
            mimetype={"type": "string"},
            isWriteable={"type": "boolean"},
            size={"type": "integer", "minimum": 0},
            filename={"type": "string"},
        ),
        "RemoveResult": _object(
            handle={"type": "string"},
            removed={"const": True},
            storage={"enum": ["deleted", "kept"]},
        ),
        "Metadata": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "size": {"type": "integer"},
                "mimetype": {"type": "string"},
                "filename": {"type": "string"},
                "width": {"type": "integer", "description": "images only, from the header"},
                "height": {"type": "integer", "description": "images only, from the header"},
                "uploaded": {"type": "number", "description": "epoch milliseconds"},
                "writeable": {"type": "boolean"},
                "cloud": {"type": "boolean"},
                "source_url": nullable_str,
                "exif": {"type": "object"},
                "upload_status": {"const": "complete"},
                "location": {"type": "string"},
                "path": {"type": "string"},
                "container": {"type": "string"},
                "key": {"type": "string"},
                **{h: {"type": "string", "pattern": "^[0-9a-f]+$"} for h in HASHES},
            },
        },
        "FileEntry": _object(
            handle={"type": "string"},
            filename={"type": "string"},
            size={"type": "integer", "minimum": 0},
            mimetype={"type": "string"},
            uploaded={"type": "number", "description": "epoch milliseconds"},
            location={"type": "string"},
            provider={"type": "string"},
            container={"type": "string"},
            key={"type": "string"},
        ),
        "FileList": _object(
            files={"type": "array", "items": ref("FileEntry")},
            next={**nullable_str, "description": "`after` for the next page; null at the end"},
        ),
        "Status": _object(status={"type": "string"}),
        "UploadResult": _upload_result(),
        "UploadStarted": {
            **_object(
                uri={"type": "string"},
                region={"type": "string"},
                upload_id={"type": "string"},
                location_url={"type": "string"},
            ),
            "properties": {
                "uri": {"type": "string"},
                "region": {"type": "string"},
                "upload_id": {"type": "string"},
                "location_url": {"type": "string"},
                "upload_type": {"const": "intelligent_ingestion"},
            },
        },
        "PartTarget": _object(
            url={"type": "string", "format": "uri"},
            headers={"type": "object", "additionalProperties": {"type": "string"}},
            location_url={"type": "string"},
        ),
    }


def _upload_result() -> Doc:
    """A store result plus what the SDKs read after an upload or /process."""
    base = _schemas_store_result()
    extra = {
        "mimetype": {"type": "string"},
        "status": {"const": "Stored"},
        "upload_tags": {"type": ["object", "null"]},
        "workflows": {"type": "array"},
    }
    return {
        **base,
        "required": [*base["required"], "mimetype", "status"],
        "properties": {**base["properties"], **extra},
    }


def _schemas_store_result() -> Doc:
    return _object(
        url={"type": "string", "format": "uri"},
        handle={"type": "string"},
        size={"type": "integer", "minimum": 0},
        type={"type": "string"},
        filename={"type": "string"},
        key={"type": "string"},
        container={"type": "string"},
    )


def _object(**properties: Doc) -> Doc:
    return {
        "type": "object",
        "required": list(properties),
        "additionalProperties": False,
        "properties": properties,
    }


def _codes() -> list[str]:
    return sorted({cls.code for cls in all_error_classes()})


def document(settings: Settings) -> Doc:
    cdn = [{"url": settings.cdn_url(), "description": "CDN origin (read-only)"}]
    api_root = settings.api_url().removesuffix("/api")
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Stowage",
            "version": __version__,
            "summary": "File storage that speaks the Filestack File API.",
            "license": {"name": "Apache-2.0", "identifier": "Apache-2.0"},
        },
        "servers": [{"url": api_root, "description": "API origin"}],
        "tags": [
            {"name": "files", "description": "Store, read, change and delete files."},
            {"name": "uploads", "description": "The resumable upload protocol and /process."},
            {"name": "cdn", "description": "The read-only CDN origin."},
            {"name": "service", "description": "Health, metrics, documentation, console."},
        ],
        "paths": {**_api_paths(), **_cdn_paths(cdn), **processing_paths(cdn)},
        "components": {
            "schemas": _schemas(),
            "responses": {"Error": _json(ref("Error"), "An error (docs/errors.md).")},
            "securitySchemes": {
                "policy": {"type": "apiKey", "in": "query", "name": "policy"},
                "signature": {"type": "apiKey", "in": "query", "name": "signature"},
                "appSecret": {
                    "type": "http",
                    "scheme": "basic",
                    "description": "User `app`, password the app secret.",
                },
            },
        },
    }
