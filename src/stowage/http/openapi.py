"""The OpenAPI 3.1 document of both origins, written by hand and kept true by tests.

``tests/api/test_openapi.py`` checks that every route of the API and CDN apps appears
here and that real responses validate against the schemas below.
"""

from __future__ import annotations

from stowage import __version__
from stowage.config import Settings
from stowage.http.openapi_common import (
    AUTH_PARAMS,
    DOWNLOAD_PARAMS,
    FILE_BYTES,
    HANDLE,
    SECURITY_OPTIONAL,
    Doc,
    error_refs,
    json_body,
    metadata_params,
    op,
    ref,
)
from stowage.http.openapi_files import file_paths
from stowage.http.openapi_picker import picker_paths
from stowage.http.openapi_processing import processing_paths
from stowage.http.openapi_schemas import schemas
from stowage.http.openapi_uploads import upload_paths


def _service_paths() -> Doc:
    page = {"description": "HTML page.", "content": {"text/html": {"schema": {"type": "string"}}}}
    return {
        "/healthz": {
            "get": op(
                "Liveness",
                "healthz",
                "service",
                responses={"200": json_body(ref("Status"), "The process answers.")},
            )
        },
        "/readyz": {
            "get": op(
                "Readiness",
                "readyz",
                "service",
                description="503 while draining or when the registry does not answer.",
                responses={"200": json_body(ref("Status"), "Ready."), **error_refs(503)},
            )
        },
        "/metrics": {
            "get": op(
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
            "get": op(
                "This document",
                "openapi",
                "service",
                responses={"200": json_body({"type": "object"}, "OpenAPI 3.1 document.")},
            )
        },
        "/api/docs": {
            "get": op("Interactive API reference", "apiDocs", "service", responses={"200": page})
        },
        "/console": {"get": op("Web console", "console", "service", responses={"200": page})},
        "/": {
            "get": op(
                "The API port's root: a redirect to the web console",
                "root",
                "service",
                responses={"302": {"description": "`Location: /console`."}},
            )
        },
    }


def _cdn_paths(cdn: list[Doc]) -> Doc:
    refused = error_refs(400)
    return {
        "/{handle}": {
            "servers": cdn,
            "get": op(
                "Download a file from the CDN origin",
                "cdnDownload",
                "cdn",
                description="Also answers HEAD. POST and DELETE answer 400 "
                "`CDN_LINK_NOT_ACCEPTED`: writes use the API link.",
                parameters=[HANDLE, *DOWNLOAD_PARAMS, *AUTH_PARAMS],
                security=SECURITY_OPTIONAL,
                responses={"200": FILE_BYTES, "206": FILE_BYTES, **error_refs(401, 403, 404, 416)},
            ),
            "post": op(
                "Refused on the CDN", "cdnOverwrite", "cdn", parameters=[HANDLE], responses=refused
            ),
            "delete": op(
                "Refused on the CDN", "cdnRemove", "cdn", parameters=[HANDLE], responses=refused
            ),
        },
        "/{handle}/metadata": {
            "servers": cdn,
            "get": op(
                "File metadata from the CDN origin",
                "cdnMetadata",
                "cdn",
                parameters=[HANDLE, *metadata_params(), *AUTH_PARAMS],
                security=SECURITY_OPTIONAL,
                responses={
                    "200": json_body(ref("Metadata"), "The selected fields."),
                    **error_refs(401, 403, 404),
                },
            ),
        },
        "/{handle}/remove": {
            "servers": cdn,
            "post": op(
                "Refused on the CDN", "cdnRemovePost", "cdn", parameters=[HANDLE], responses=refused
            ),
        },
    }


#: What any request can answer, whatever its operation: a malformed request line, path,
#: query or header is ``400`` in the error shape before any operation runs.
EVERY_OPERATION = ("400",)


def _with_every_operations_answers(paths: Doc) -> Doc:
    for path in paths.values():
        for method, operation in path.items():
            if method != "servers":
                for status in EVERY_OPERATION:
                    operation["responses"].setdefault(status, error_refs(int(status))[status])
    return paths


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
        "paths": _with_every_operations_answers(
            {
                **file_paths(),
                **upload_paths(),
                **picker_paths(),
                **_service_paths(),
                **_cdn_paths(cdn),
                **processing_paths(cdn),
            }
        ),
        "components": {
            "schemas": schemas(),
            "responses": {"Error": json_body(ref("Error"), "An error (docs/errors.md).")},
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
