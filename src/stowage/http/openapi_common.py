"""The pieces every part of the OpenAPI document is built of: parameters, bodies, errors."""

from __future__ import annotations

from typing import Any

from stowage import booleans
from stowage.core.metadata import SELECTORS

Doc = dict[str, Any]
JSON = "application/json"


def ref(name: str) -> Doc:
    return {"$ref": f"#/components/schemas/{name}"}


def query(name: str, description: str, schema: Doc | None = None, **extra: Any) -> Doc:
    return {
        "name": name,
        "in": "query",
        "description": description,
        "schema": schema or {"type": "string"},
        **extra,
    }


def path_param(name: str, description: str, **schema: Any) -> Doc:
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
HANDLE = path_param("handle", "The file's handle (20 characters).", pattern=r"^[A-Za-z0-9_-]{20}$")
PROVIDER = path_param(
    "provider",
    "Storage provider name.",
    enum=["S3", "gcs", "azure", "rackspace", "dropbox"],
)
KEY = query("key", "The app's API key.")
KEY_REQUIRED = {**KEY, "required": True}
POLICY = query("policy", "A base64url JSON policy (docs/security.md).")
SIGNATURE = query("signature", "Hex HMAC-SHA256 of the policy with the app secret.")
AUTH_PARAMS = [POLICY, SIGNATURE]
#: Either a signed policy in the query, or the app secret as HTTP Basic ``app:<secret>``.
SECURITY_OPTIONAL: list[Doc] = [{}, {"policy": [], "signature": []}, {"appSecret": []}]
SECURITY_REQUIRED: list[Doc] = [{"policy": [], "signature": []}, {"appSecret": []}]


def json_body(schema: Doc, description: str) -> Doc:
    return {"description": description, "content": {JSON: {"schema": schema}}}


def error_refs(*statuses: int) -> dict[str, Doc]:
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
    query("filename", "Name of the file (default: from the upload or url)."),
    query("mimetype", "Content type to record (default: declared, sniffed, guessed)."),
    query("path", "Storage key; ending in `/` means a folder."),
    query("container", "Bucket/container name within the provider."),
    query("access", "`private` or `public`.", {"type": "string", "enum": ["private", "public"]}),
    query("base64decode", "The body is base64: decode it before storing.", BOOL),
    query("link", "Make a handle for an object already at `path` (never written).", BOOL),
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
    query("dl", "Force a download (`Content-Disposition: attachment`).", BOOL),
    query("cache", "`false` answers `Cache-Control: no-store`.", BOOL),
    {"name": "Range", "in": "header", "schema": {"type": "string"}, "description": "bytes=a-b"},
]


def metadata_params() -> list[Doc]:
    return [query(name, f"Include `{name}`.", BOOL) for name in SELECTORS]


def op(summary: str, op_id: str, tag: str, **rest: Any) -> Doc:
    return {"summary": summary, "operationId": op_id, "tags": [tag], **rest}


def closed_object(**properties: Doc) -> Doc:
    return {
        "type": "object",
        "required": list(properties),
        "additionalProperties": False,
        "properties": properties,
    }
