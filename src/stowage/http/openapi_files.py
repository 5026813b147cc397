"""The OpenAPI entries of the file calls: store, copy, download, overwrite, remove,
metadata, list."""

from __future__ import annotations

from stowage.http.openapi_common import (
    AUTH_PARAMS,
    BOOL,
    DOWNLOAD_PARAMS,
    FILE_BODY,
    FILE_BYTES,
    HANDLE,
    KEY,
    KEY_REQUIRED,
    PROVIDER,
    SECURITY_OPTIONAL,
    SECURITY_REQUIRED,
    STORE_PARAMS,
    Doc,
    error_refs,
    json_body,
    metadata_params,
    op,
    query,
    ref,
)


def file_paths() -> Doc:
    return {
        "/api/store/{provider}": {
            "post": op(
                "Store a file",
                "store",
                "files",
                description="Store a new file under a new handle. Needs a `store` policy when "
                "the app has security on.",
                parameters=[PROVIDER, KEY_REQUIRED, *STORE_PARAMS, *AUTH_PARAMS],
                requestBody=FILE_BODY,
                security=SECURITY_OPTIONAL,
                responses={
                    "200": json_body(ref("StoreResult"), "The stored file."),
                    **error_refs(400, 401, 403, 408, 409, 413, 502, 503, 504),
                },
            )
        },
        "/api/store/{provider}/{handle}": {
            "post": op(
                "Copy a file",
                "copy",
                "files",
                description="A new handle holding a copy of `handle`, in `provider`.",
                parameters=[PROVIDER, HANDLE, KEY_REQUIRED, *STORE_PARAMS, *AUTH_PARAMS],
                security=SECURITY_OPTIONAL,
                responses={
                    "200": json_body(ref("StoreResult"), "The copy."),
                    **error_refs(400, 401, 403, 404, 409, 502, 503),
                },
            )
        },
        "/api/file/{handle}": {
            "get": op(
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
                    **error_refs(401, 403, 404, 416, 502, 503),
                },
            ),
            "post": op(
                "Overwrite a file",
                "overwrite",
                "files",
                description="Replace the content. Always needs a `write` policy or the app secret.",
                parameters=[
                    HANDLE,
                    KEY,
                    query("base64decode", "Decode a base64 body.", BOOL),
                    *AUTH_PARAMS,
                ],
                requestBody=FILE_BODY,
                security=SECURITY_REQUIRED,
                responses={
                    "200": json_body(ref("OverwriteResult"), "The new version."),
                    **error_refs(400, 401, 403, 404, 408, 409, 413, 502, 503),
                },
            ),
            "delete": _remove(
                "Delete a file",
                "remove",
                description="Always needs a `remove` policy or the app secret.",
            ),
        },
        "/api/file/{handle}/remove": {
            "post": _remove("Delete a file (POST form)", "removePost"),
        },
        "/api/file/{handle}/metadata": {
            "get": op(
                "File metadata",
                "metadata",
                "files",
                description="Default fields, or the selected ones. Hashes are computed in one "
                "pass. `exif=true` needs an `exif` policy; a `stat` policy when security is on.",
                parameters=[HANDLE, KEY, *metadata_params(), *AUTH_PARAMS],
                security=SECURITY_OPTIONAL,
                responses={
                    "200": json_body(ref("Metadata"), "The selected fields."),
                    **error_refs(401, 403, 404, 422, 502, 503),
                },
            )
        },
        **_list_paths(),
    }


def _remove(summary: str, operation: str, **extra: object) -> Doc:
    """A delete, by DELETE or by the POST form: the same parameters and answers."""
    return op(
        summary,
        operation,
        "files",
        parameters=[HANDLE, KEY, _skip_storage(), *AUTH_PARAMS],
        security=SECURITY_REQUIRED,
        responses={
            "200": json_body(ref("RemoveResult"), "Removed."),
            **error_refs(401, 403, 404, 502, 503),
        },
        **extra,
    )


def _skip_storage() -> Doc:
    return query("skip_storage", "Forget the handle but keep the stored object.", BOOL)


def _list_paths() -> Doc:
    return {
        "/api/files": {
            "get": op(
                "List an app's files",
                "listFiles",
                "files",
                description="Ordered by handle, `limit` per page; pass `next` back as `after`. "
                "Always needs a `read` or `stat` policy (without a handle restriction) or the "
                "app secret.",
                parameters=[
                    KEY_REQUIRED,
                    query("after", "Return handles after this one (the previous `next`)."),
                    query(
                        "limit",
                        "Page size, 1 to 1000 (default 100).",
                        {"type": "integer", "minimum": 1, "maximum": 1000},
                    ),
                    *AUTH_PARAMS,
                ],
                security=SECURITY_REQUIRED,
                responses={
                    "200": json_body(ref("FileList"), "One page of files."),
                    **error_refs(400, 401, 403, 503),
                },
            )
        }
    }
