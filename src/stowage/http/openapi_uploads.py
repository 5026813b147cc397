"""The OpenAPI entries of the resumable upload protocol and JSON ``/process``."""

from __future__ import annotations

from stowage.http.openapi_common import (
    AUTH_PARAMS,
    JSON,
    SECURITY_OPTIONAL,
    Doc,
    error_refs,
    json_body,
    op,
    path_param,
    query,
    ref,
)


def _fields_body(required: list[str], **properties: Doc) -> Doc:
    schema = {"type": "object", "required": required, "properties": properties}
    return {
        "description": "JSON, or the same fields as a form (`store_location`, ...).",
        "content": {
            JSON: {"schema": schema},
            "application/x-www-form-urlencoded": {"schema": schema},
        },
    }


STR, INT = {"type": "string"}, {"type": "integer", "minimum": 0}
_UPLOAD_AUTH = {"apikey": STR, "policy": STR, "signature": STR}
_STORED = ref("UploadResult")


def _upload_op(summary: str, op_id: str, body: Doc, ok: Doc, **more: Doc) -> Doc:
    return {
        "post": op(
            summary,
            op_id,
            "uploads",
            requestBody=body,
            responses={"200": ok, **more, **error_refs(400, 401, 403, 404, 409, 413, 502, 503)},
        )
    }


def _with_credentials(path: Doc) -> Doc:
    """``POST /process`` reads the query's policy and signature and HTTP Basic too, beside
    the JSON ``security`` task (one pair: docs/security.md)."""
    path["post"].update(parameters=list(AUTH_PARAMS), security=SECURITY_OPTIONAL)
    return path


def upload_paths() -> Doc:
    store = {
        "type": "object",
        "properties": {k: STR for k in ("location", "path", "container", "access")},
    }
    return {
        "/multipart/start": _upload_op(
            "Start a resumable upload (Filestack upload protocol)",
            "multipartStart",
            _fields_body(
                ["apikey", "filename", "size"],
                filename=STR,
                mimetype=STR,
                size=INT,
                store=store,
                fii={"type": "boolean"},
                **_UPLOAD_AUTH,
            ),
            json_body(ref("UploadStarted"), "The upload id and where to send parts."),
        ),
        "/multipart/upload": _upload_op(
            "Get a signed URL for one part (or a chunk of it at `offset`)",
            "multipartUpload",
            _fields_body(
                ["apikey", "upload_id", "part", "size", "md5"],
                upload_id=STR,
                part={"type": "integer", "minimum": 1},
                size=INT,
                md5={"type": "string", "description": "base64 MD5 of the bytes"},
                offset=INT,
                **_UPLOAD_AUTH,
            ),
            json_body(ref("PartTarget"), "PUT the bytes to `url` with `headers`."),
        ),
        "/multipart/part/{upload_id}/{part}": {
            "put": op(
                "Send one part's bytes (the URL from /multipart/upload; its signature is "
                "the credential)",
                "multipartPart",
                "uploads",
                parameters=[
                    path_param("upload_id", "The upload."),
                    path_param("part", "1-based part number.", pattern="^[0-9]+$"),
                    *[
                        {**query(n, "As given in the signed URL."), "required": True}
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
                        "headers": {"ETag": {"schema": STR}},
                    },
                    **error_refs(400, 403, 404, 408, 413, 502, 503),
                },
            )
        },
        "/multipart/commit": _upload_op(
            "Commit a part sent in chunks (intelligent ingestion)",
            "multipartCommit",
            _fields_body(
                ["apikey", "upload_id", "part"],
                upload_id=STR,
                part={"type": "integer", "minimum": 1},
                **_UPLOAD_AUTH,
            ),
            json_body({"type": "object", "maxProperties": 0}, "Committed."),
        ),
        "/multipart/complete": _upload_op(
            "Assemble the parts into a stored file",
            "multipartComplete",
            _fields_body(
                ["apikey", "upload_id"],
                upload_id=STR,
                parts={
                    "description": "`[{part_number, etag}]`, or `1:etag;2:etag` in a form",
                    "type": ["array", "string"],
                },
                upload_tags={"type": "object"},
                **_UPLOAD_AUTH,
            ),
            json_body(_STORED, "The stored file."),
            **{"202": json_body(ref("Status"), "Still assembling: ask again.")},
        ),
        "/process": _with_credentials(
            _upload_op(
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
                                    "apikey": STR,
                                    "sources": {"type": "array", "minItems": 1, "maxItems": 1},
                                    "tasks": {"type": "array", "items": {"type": "object"}},
                                    "upload_tags": {"type": "object"},
                                },
                            }
                        }
                    },
                },
                json_body(_STORED, "The stored file."),
            )
        ),
    }
